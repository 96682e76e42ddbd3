package payload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

// apply applies d.Status.Release once in d.Status.State and says what it did. An apply
// stopped by ctx or by a new desired release is Interrupted, whatever it met; a
// desired release the pause or the windows hold back stops nothing.
func (w *Worker) apply(ctx context.Context, d Decision) Observation {
	release, state := d.Status.Release, d.Status.State
	out := &Observation{Release: release, State: state}
	applyCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w.mu.Lock()
	if !w.desired.Same(release) && !w.holding(w.desired) {
		w.mu.Unlock()
		out.Interrupted = true
		return *out
	}
	w.cancel, w.applying = cancel, release
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.cancel = nil
		w.mu.Unlock()
	}()
	timeout := w.policy.ApplyTimeout.Duration
	timer := w.clock.AfterFunc(timeout, func() { cancel(errApplyTimeout) })
	defer timer.Stop()

	logger := klog.FromContext(ctx).WithValues("release", release.String(), "state", state)
	err := w.run(klog.NewContext(applyCtx, logger), d, out)
	if ctx.Err() != nil || errors.Is(context.Cause(applyCtx), errSuperseded) {
		out.Interrupted, out.Err = true, nil
		return *out
	}
	if errors.Is(context.Cause(applyCtx), errApplyTimeout) {
		err = timedOut(out, timeout, err)
	}
	out.Err = err
	return *out
}

// run loads, filters, checks and applies the payload, filling out's counts.
func (w *Worker) run(ctx context.Context, d Decision, out *Observation) error {
	release, state := d.Status.Release, d.Status.State
	p, err := w.load(ctx, release)
	if err != nil {
		return err
	}
	if p.Release.Version != "" {
		out.Release.Version = p.Release.Version
	}
	manifests, err := w.include(p.Manifests)
	if err != nil {
		return err
	}
	out.Total = int32(len(manifests))
	w.progress(release, 0, out.Total)
	if d.CheckPreconditions && w.cfg.Preconditions != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		w.notify()
		from := Release{}
		if last := lastCompleted(d.Status.History); last != nil {
			from = Release{Version: last.Version, Image: last.Image}
		}
		if err := guard("checking the preconditions", func() error { return w.cfg.Preconditions.Check(ctx, from, release) }); err != nil {
			return &UpdateError{Nested: err, Effect: EffectFail, Reason: ReasonUpgradePreconditionCheckFailed,
				Message: fmt.Sprintf("Preconditions failed for the update to %s: %v", release, err)}
		}
	}
	g, opts, err := plan(manifests, state, d.Status.Completed, w.policy)
	if err != nil {
		return &UpdateError{Nested: err, Effect: EffectFail, Reason: ReasonUpdatePayloadIntegrity,
			Message: fmt.Sprintf("The payload of %s cannot be ordered: %v", release, err)}
	}

	var (
		done    atomic.Int32
		mu      sync.Mutex
		reports []error
		removed []string
	)
	errs := graph.Run(ctx, g, opts, func(ctx context.Context, tasks []*graph.Task) error {
		for _, t := range tasks {
			err := w.runTask(ctx, t, state)
			switch {
			case errors.Is(err, errDeleted):
				mu.Lock()
				removed = append(removed, t.Item.String())
				mu.Unlock()
			case err != nil && effectOf(err) == EffectReport:
				mu.Lock()
				reports = append(reports, err)
				mu.Unlock()
			case err != nil:
				return err
			}
			w.progress(release, done.Add(1), out.Total)
		}
		return nil
	})
	out.Done = done.Load()
	slices.Sort(removed)
	out.Removed = removed
	if len(errs) > 0 {
		if err := summarize(errs); err != nil {
			return err
		}
		return errors.Join(errs...)
	}
	return summarize(reports)
}

// plan builds the graph of manifests the worker runs in state and its run options:
// Initializing runs every component at once, the longest first; Updating run levels
// in order; Reconciling every component at once in an order that changes with the
// pass (graph.BuildShuffled), so that a manifest that always fails cannot starve the
// ones behind it. Updating and reconciling start nodes in the cluster-version
// operator's order.
func plan(manifests []manifest.Manifest, state State, pass int32, p Policy) (*graph.Graph, graph.Options, error) {
	opts := graph.Options{Workers: p.workersFor(state), Priority: priorityFor(state)}
	tasks := manifest.Tasks(manifests)
	var (
		g   *graph.Graph
		err error
	)
	switch state {
	case StateUpdating:
		g, err = graph.Build(tasks, graph.OrderRunLevels)
	case StateReconciling:
		g, err = graph.BuildShuffled(tasks, int(pass))
	default:
		g, err = graph.Build(tasks, graph.OrderParallel)
	}
	return g, opts, err
}

// priorityFor is the order of state's pool. Initializing starts the component with
// the most manifests left first, so that a fresh cluster is done in about max(N/w,
// critical path) manifest latencies (N manifests, w workers;
// graph.TestCriticalPathFirstEndsNearTheLowerBound); the cluster-version operator's
// order starts its largest component late. Updating and reconciling keep the
// cluster-version operator's order.
func priorityFor(state State) graph.Priority {
	if state == StateInitializing {
		return graph.CriticalPathFirst
	}
	return graph.LowestIndexFirst
}

// load returns the payload of release, loading it when it is not the one loaded last.
func (w *Worker) load(ctx context.Context, release Release) (*Payload, error) {
	if w.loaded != nil && w.loadedFor == release {
		return w.loaded, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.notify()
	var p *Payload
	err := guard("loading the payload", func() error {
		var err error
		p, err = w.cfg.Loader.Load(ctx, release)
		return err
	})
	if err == nil && p == nil {
		err = errors.New("the loader returned no payload")
	}
	if err == nil && release.Version != "" && p.Release.Version != "" && p.Release.Version != release.Version {
		err = fmt.Errorf("the payload carries version %q", p.Release.Version)
	}
	if err == nil && slices.ContainsFunc(p.Manifests, func(m manifest.Manifest) bool { return m.Delete }) && w.cfg.Deleter == nil {
		err = errors.New("the payload deletes objects and the worker has no Deleter")
	}
	if err == nil {
		err = checkManifests(p.Manifests)
	}
	if err != nil {
		return nil, &UpdateError{Nested: err, Effect: EffectFail, Reason: ReasonUpdatePayloadRetrievalFailed,
			Message: fmt.Sprintf("Could not load the payload of %s: %v", release, err)}
	}
	w.loaded, w.loadedFor = p, release
	return p, nil
}

// checkManifests refuses manifests a loader built by hand without an object.
func checkManifests(manifests []manifest.Manifest) error {
	for i := range manifests {
		if manifests[i].Object == nil {
			return input.Invalidf("payload", "manifest", "manifest %d has no object", i+1)
		}
	}
	return nil
}

// include returns the manifests that belong to the cluster.
func (w *Worker) include(manifests []manifest.Manifest) ([]manifest.Manifest, error) {
	if w.cfg.Include == nil {
		return manifests, nil
	}
	included := make([]manifest.Manifest, 0, len(manifests))
	err := guard("deciding which manifests to include", func() error {
		for i := range manifests {
			if w.cfg.Include(&manifests[i]) == nil {
				included = append(included, manifests[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil, &UpdateError{Nested: err, Effect: EffectFail, Reason: ReasonUpdatePayloadIntegrity, Message: err.Error()}
	}
	return included, nil
}

// timedOut describes an apply stopped by the apply timeout, with the summary of the
// errors it met, if any.
func timedOut(out *Observation, timeout time.Duration, summary error) error {
	msg := fmt.Sprintf("Applying %s timed out after %s with %d of %d manifests applied", out.Release, timeout, out.Done, out.Total)
	effect := EffectFail
	if summary != nil {
		msg += ": " + summary.Error()
		effect = stronger(EffectNone, effectOf(summary))
	}
	return &UpdateError{Nested: errors.Join(errApplyTimeout, summary), Effect: effect, Reason: ReasonUpdatePayloadTimedOut, Message: msg}
}
