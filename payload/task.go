package payload

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

// errDeleted tells run that a task removed its object.
var errDeleted = errors.New("payload: deleted")

// runTask applies t (applyTask) and makes a panic or a runtime.Goexit of the host code
// it calls a failure of t that names t: graph.Run would name the first task of t's
// node, which may not be the one whose host code crashed.
func (w *Worker) runTask(ctx context.Context, t *graph.Task, state State) error {
	err := guard("applying a manifest", func() error { return w.applyTask(ctx, t, state) })
	var crash *crashError
	if errors.As(err, &crash) {
		return &UpdateError{Nested: err, Effect: EffectFail, Reason: ReasonUpdatePayloadFailed, Task: t,
			Message: fmt.Sprintf("Could not apply %s: %v", t, err)}
	}
	return err
}

// applyTask applies, or deletes, one manifest and waits for it to be ready. It returns
// errDeleted when it removed an object.
func (w *Worker) applyTask(ctx context.Context, t *graph.Task, state State) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	m := manifestOf(t)
	pace := pacing{clock: w.clock, policy: w.policy, jitter: w.jitter}
	if m.Delete {
		gone := false
		err := pace.retry(ctx, t, "delete", func() error {
			w.notify()
			err := w.cfg.Deleter.Delete(ctx, m)
			if isGone(err) {
				gone = true
				return nil
			}
			return err
		})
		if err == nil && !gone {
			return errDeleted
		}
		return err
	}
	err := pace.retry(ctx, t, "update", func() error {
		w.notify()
		return w.cfg.Applier.Apply(ctx, m, state)
	})
	if err != nil && effectOf(err) != EffectReport {
		return err
	}
	// A reported error does not stop the manifest: its object must be ready all the same.
	if w.cfg.Readiness != nil && state != StateReconciling {
		if notReady := pace.awaitReady(ctx, t, func() error {
			w.notify()
			return w.cfg.Readiness.Ready(ctx, m)
		}); notReady != nil {
			return notReady
		}
	}
	return err
}

// manifestOf is the manifest of a task of the worker's graphs, which hold manifests
// only; nil for a task of another graph.
func manifestOf(t *graph.Task) *manifest.Manifest {
	if t == nil {
		return nil
	}
	m, _ := t.Item.(*manifest.Manifest)
	return m
}

// pacing is what the attempts of a task and its readiness checks follow: the worker's
// clock, policy and jitter.
type pacing struct {
	clock  clock.WithDelayedExecution
	policy Policy
	jitter func() float64
}

// retry calls attempt up to Policy.ManifestAttempts times, spaced by
// Policy.ManifestBackoff, until it succeeds. It stops at once when attempt returns an *UpdateError (its
// Task is filled in when empty), when ctx ends, or when the kind has no resource on the
// server (meta.IsNoMatchError): a CRD of the payload may register it, which takes more
// than an attempt's backoff, so the apply fails at once and says which kind, and a
// later apply tries again. When the attempts run out, or ctx ends after a failed
// attempt, the last error is returned as an *UpdateError "Could not <verb> <kind>
// "ns/name" (i of n): <the cluster-version operator's words>: <error>" whose Reason
// classifies it, as the operator does; when ctx ended before any attempt, ctx's error.
func (p pacing) retry(ctx context.Context, t *graph.Task, verb string, attempt func() error) error {
	var lastErr error
	for n := int32(1); ; n++ {
		if err := ctx.Err(); err != nil {
			return failure(t, verb, lastErr, err)
		}
		err := attempt()
		if err == nil {
			return nil
		}
		lastErr = err
		klog.FromContext(ctx).V(2).Info("Attempt failed", "verb", verb, "task", t.String(), "err", err)
		if uErr := asUpdateError(err); uErr != nil {
			if uErr.Task == nil {
				uErr.Task = t
			}
			return err
		}
		if n >= p.policy.ManifestAttempts || meta.IsNoMatchError(err) {
			return failure(t, verb, lastErr, nil)
		}
		if !sleep(ctx, p.clock, p.policy.ManifestBackoff.Delay(n, p.jitter())) {
			return failure(t, verb, lastErr, ctx.Err())
		}
	}
}

// sleep waits d on clk; it returns false when ctx ends first.
func sleep(ctx context.Context, clk clock.WithDelayedExecution, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := clk.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C():
		return ctx.Err() == nil // an end that comes with the timer wins, whatever select picked
	}
}

// failure wraps the last error of t, or returns ctxErr when nothing was attempted.
func failure(t *graph.Task, verb string, lastErr, ctxErr error) error {
	if lastErr == nil {
		return ctxErr
	}
	reason, cause := reasonForError(lastErr)
	msg := fmt.Sprintf("Could not %s %s: %v", verb, t, lastErr)
	if cause != "" {
		msg = fmt.Sprintf("Could not %s %s: %s: %v", verb, t, cause, lastErr)
	}
	return &UpdateError{Nested: lastErr, Effect: EffectFail, Reason: reason, Message: msg, Task: t}
}

// awaitReady polls ready until the object of t is ready, ready returns an
// *UpdateError, ctx ends or Policy.ReadinessTimeout passes: then the error has
// Policy.ReadinessEffect and says what the object waited on. The timeout runs on a
// timer, which measures the time that passes whatever the clock reads; the object is
// checked once more when it ends between two checks. No check starts once ctx has
// ended, so that a replaced release stops before its next host call.
func (p pacing) awaitReady(ctx context.Context, t *graph.Task, ready func() error) error {
	deadline := p.clock.NewTimer(p.policy.ReadinessTimeout.Duration)
	defer deadline.Stop()
	expired := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := ready()
		if err == nil {
			return nil
		}
		if uErr := asUpdateError(err); uErr != nil {
			if uErr.Task == nil {
				uErr.Task = t
			}
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !expired { // the timeout may have passed during the check
			select {
			case <-deadline.C():
				expired = true
			default:
			}
		}
		if expired {
			return &UpdateError{
				Nested: err, Effect: p.policy.ReadinessEffect, Reason: ReasonManifestNotReady, Task: t,
				Message: fmt.Sprintf("Timed out after %s waiting for %s to be ready: %v", p.policy.ReadinessTimeout.Duration, t, err),
			}
		}
		if expired = p.poll(ctx, deadline); ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// poll waits Policy.ReadinessPoll, or until deadline fires, which it reports, or ctx
// ends.
func (p pacing) poll(ctx context.Context, deadline clock.Timer) (expired bool) {
	next := p.clock.NewTimer(p.policy.ReadinessPoll.Duration)
	defer next.Stop()
	select {
	case <-ctx.Done():
	case <-deadline.C():
		return true
	case <-next.C():
	}
	select { // a poll and the deadline may come together: the deadline counts
	case <-deadline.C():
		return true
	default:
		return false
	}
}

// isGone reports whether a delete error says the object is already gone.
func isGone(err error) bool { return apierrors.IsNotFound(err) }
