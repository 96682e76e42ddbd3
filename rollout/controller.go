package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// StatusReader reads the persisted rollout status and its resource version.
type StatusReader interface {
	GetStatus(ctx context.Context) (st Status, resourceVersion string, err error)
}

// StatusWriter writes the rollout status if its resource version is still
// resourceVersion and returns the new version. A lost race must return an
// error wrapping ErrConflict (see Conflict).
type StatusWriter interface {
	UpdateStatus(ctx context.Context, st Status, resourceVersion string) (newResourceVersion string, err error)
}

// StatusReaderFunc adapts a function to StatusReader.
type StatusReaderFunc func(ctx context.Context) (Status, string, error)

// GetStatus calls f.
func (f StatusReaderFunc) GetStatus(ctx context.Context) (Status, string, error) { return f(ctx) }

// StatusWriterFunc adapts a function to StatusWriter.
type StatusWriterFunc func(ctx context.Context, st Status, resourceVersion string) (string, error)

// UpdateStatus calls f.
func (f StatusWriterFunc) UpdateStatus(ctx context.Context, st Status, resourceVersion string) (string, error) {
	return f(ctx, st, resourceVersion)
}

// StatusStore reads and writes the rollout status with optimistic concurrency.
// A host with two functions composes one from the Func adapters:
//
//	struct{ rollout.StatusReaderFunc; rollout.StatusWriterFunc }{get, update}
type StatusStore interface {
	StatusReader
	StatusWriter
}

// InstallerClient reads, creates and deletes installer pods.
type InstallerClient interface {
	// GetInstaller returns the installer's state, Phase InstallerNotFound when it does not exist.
	GetInstaller(ctx context.Context, inst Installer) (InstallerState, error)
	// EnsureInstaller creates the installer unless it exists.
	EnsureInstaller(ctx context.Context, inst Installer) error
	// DeleteInstaller deletes the installer; a missing installer is not an error.
	DeleteInstaller(ctx context.Context, inst Installer) error
}

// OperandReader reads a node's operand pod.
type OperandReader interface {
	// GetOperand returns the operand's state, Phase OperandNotFound when it does not exist.
	GetOperand(ctx context.Context, node string) (OperandState, error)
}

// OperandReaderFunc adapts a function to OperandReader.
type OperandReaderFunc func(ctx context.Context, node string) (OperandState, error)

// GetOperand calls f.
func (f OperandReaderFunc) GetOperand(ctx context.Context, node string) (OperandState, error) {
	return f(ctx, node)
}

// NodeReadiness reports whether a node itself is Ready (reachable).
type NodeReadiness interface {
	NodeReady(ctx context.Context, node string) (bool, error)
}

// NodeReadinessFunc adapts a function to NodeReadiness.
type NodeReadinessFunc func(ctx context.Context, node string) (bool, error)

// NodeReady calls f.
func (f NodeReadinessFunc) NodeReady(ctx context.Context, node string) (bool, error) {
	return f(ctx, node)
}

// EventSink records the events of a plan (a host wraps its record.EventRecorder).
type EventSink interface {
	Emit(ctx context.Context, e Event)
}

// EventSinkFunc adapts a function to EventSink.
type EventSinkFunc func(ctx context.Context, e Event)

// Emit calls f.
func (f EventSinkFunc) Emit(ctx context.Context, e Event) { f(ctx, e) }

var (
	_ StatusReader = StatusReaderFunc(nil)
	_ StatusWriter = StatusWriterFunc(nil)
	_ StatusStore  = struct {
		StatusReaderFunc
		StatusWriterFunc
	}{}
	_ OperandReader = OperandReaderFunc(nil)
	_ NodeReadiness = NodeReadinessFunc(nil)
	_ EventSink     = EventSinkFunc(nil)
)

// DefaultConflictRetries is how often Sync re-plans after a status conflict.
const DefaultConflictRetries = 3

// Controller is the thin shell around PlanRollout: each Sync reads the status
// and everything it observes once, plans, and applies the plan step by step,
// writing a node's status before acting on the next node so that the state is
// debuggable from outside. It keeps no state between syncs: a new Controller
// on the same status continues where the last one stopped.
//
// Each step deletes the installers of a target the node leaves, writes the
// node's status, deletes a timed-out installer whose failure that write
// recorded, creates the node's next installer and emits the events, in that
// order. A write lost to a conflict has then changed nothing the next plan
// relies on (a timed-out installer is still there to time out again), so
// re-planning loses no transition.
//
// Status, Installers and Operands are required; Nodes (every node reachable
// when nil), Events (events dropped when nil) and Clock (the real clock when
// nil) are optional. A Controller is safe for concurrent use if its host
// interfaces are, but syncs of one rollout should be serialized (a workqueue
// does that).
type Controller struct {
	// Status persists the rollout status.
	Status StatusStore
	// Installers manages installer pods.
	Installers InstallerClient
	// Operands reads operand pods.
	Operands OperandReader
	// Nodes reports node reachability; nil means every node is reachable.
	Nodes NodeReadiness
	// Events records plan events; nil drops them.
	Events EventSink
	// Clock supplies now; nil means clock.RealClock.
	Clock clock.PassiveClock
	// Policy tunes the rollout.
	Policy Policy
	// ConflictRetries is how often a sync re-reads and re-plans after a status
	// conflict before returning it (0 means DefaultConflictRetries).
	ConflictRetries int
}

// Result is the outcome of a sync, shaped like controller-runtime's reconcile.Result.
type Result struct {
	// RequeueAfter is when to sync again at the latest (0 = on the next change).
	RequeueAfter time.Duration
	// Converged is true when every node runs the latest revision.
	Converged bool
	// Plan is the plan the sync applied.
	Plan Plan
}

// Sync runs one observe → plan → act pass. A status conflict makes it read
// and plan again, up to ConflictRetries times, so that no transition is lost;
// the error it finally returns still wraps ErrConflict.
func (c *Controller) Sync(ctx context.Context) (Result, error) {
	if c == nil || c.Status == nil || c.Installers == nil || c.Operands == nil {
		return Result{}, invalidf("controller needs Status, Installers and Operands")
	}
	retries := c.ConflictRetries
	if retries <= 0 {
		retries = DefaultConflictRetries
	}
	log := klog.FromContext(ctx)
	for attempt := 0; ; attempt++ {
		res, err := c.syncOnce(ctx)
		if errors.Is(err, ErrConflict) && attempt < retries && ctx.Err() == nil {
			log.V(2).Info("Status conflict, planning again", "attempt", attempt+1, "err", err)
			continue
		}
		return res, err
	}
}

func (c *Controller) syncOnce(ctx context.Context) (Result, error) {
	log := klog.FromContext(ctx)
	st, rv, err := c.Status.GetStatus(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("rollout: reading status: %w", err)
	}
	obs, err := c.observe(ctx, st)
	if err != nil {
		return Result{}, err
	}
	clk := c.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	now := clk.Now()
	plan, err := PlanRollout(st, obs, c.Policy, now)
	if err != nil {
		return Result{}, err
	}
	log = log.WithValues("latestRevision", plan.Latest)
	log.V(2).Info("Planned rollout", "reason", plan.Reason, "start", plan.Start)

	written := st
	work := *st.DeepCopy()
	slices.SortFunc(work.NodeStatuses, func(a, b NodeStatus) int { return strings.Compare(a.NodeName, b.NodeName) })
	for _, step := range plan.Steps {
		if !step.Acts() {
			log.V(4).Info("Node waits", "node", step.Node, "reason", step.Reason)
			continue
		}
		if err := ctx.Err(); err != nil {
			return Result{Plan: plan}, err
		}
		for _, inst := range step.Delete {
			if err := c.Installers.DeleteInstaller(ctx, inst); err != nil {
				return Result{Plan: plan}, fmt.Errorf("rollout: deleting installer %s: %w", inst.Name, err)
			}
		}
		if step.To != nil {
			for i := range work.NodeStatuses {
				if work.NodeStatuses[i].NodeName == step.Node {
					work.NodeStatuses[i] = *step.To.DeepCopy()
				}
			}
			if _, err := ApplyConditions(&work, obs, c.Policy, now); err != nil {
				return Result{Plan: plan}, err
			}
			if rv, err = c.Status.UpdateStatus(ctx, work, rv); err != nil {
				return Result{Plan: plan}, fmt.Errorf("rollout: writing status of node %s: %w", step.Node, err)
			}
			written = *work.DeepCopy()
			log.Info("Node status changed", "node", step.Node, "reason", step.Reason,
				"currentRevision", step.To.CurrentRevision, "targetRevision", step.To.TargetRevision)
		}
		for _, inst := range step.DeleteAfter {
			if err := c.Installers.DeleteInstaller(ctx, inst); err != nil {
				return Result{Plan: plan}, fmt.Errorf("rollout: deleting installer %s: %w", inst.Name, err)
			}
		}
		if step.Create != nil {
			if err := c.Installers.EnsureInstaller(ctx, *step.Create); err != nil {
				return Result{Plan: plan}, fmt.Errorf("rollout: creating installer %s: %w", step.Create.Name, err)
			}
		}
		if c.Events != nil {
			for _, e := range step.Events {
				c.Events.Emit(ctx, e)
			}
		}
	}
	if _, err := ApplyConditions(&work, obs, c.Policy, now); err != nil {
		return Result{Plan: plan}, err
	}
	if !equality.Semantic.DeepEqual(work, written) {
		if _, err := c.Status.UpdateStatus(ctx, work, rv); err != nil {
			return Result{Plan: plan}, fmt.Errorf("rollout: writing conditions: %w", err)
		}
	}
	return Result{RequeueAfter: plan.RequeueAfter, Converged: plan.Status.Converged(), Plan: plan}, nil
}

// observe reads every node once: its reachability, its operand and, for a
// node in transition, the installer of its target and attempt.
func (c *Controller) observe(ctx context.Context, st Status) (Observation, error) {
	obs := make(Observation, len(st.NodeStatuses))
	for _, n := range st.NodeStatuses {
		var o NodeObservation
		if c.Nodes != nil {
			ready, err := c.Nodes.NodeReady(ctx, n.NodeName)
			if err != nil {
				return nil, fmt.Errorf("rollout: reading node %s: %w", n.NodeName, err)
			}
			o.Unreachable = !ready
		}
		op, err := c.Operands.GetOperand(ctx, n.NodeName)
		if err != nil {
			return nil, fmt.Errorf("rollout: reading operand of node %s: %w", n.NodeName, err)
		}
		o.Operand = op
		if n.InTransition() {
			inst, err := c.Installers.GetInstaller(ctx, installerFor(n))
			if err != nil {
				return nil, fmt.Errorf("rollout: reading installer %s: %w", InstallerName(n), err)
			}
			o.Installer = inst
		}
		obs[n.NodeName] = o
	}
	return obs, nil
}
