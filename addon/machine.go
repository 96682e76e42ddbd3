package addon

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Driver is what the host implements to act on one add-on. Each call must be
// idempotent (the Machine re-runs an action whose outcome a restart lost) and
// must return when ctx ends.
type Driver interface {
	// Install applies spec.Version.
	Install(ctx context.Context, spec Spec) error
	// Upgrade moves the add-on from one version to another; the Machine also
	// uses it to roll back to the last good version.
	Upgrade(ctx context.Context, spec Spec, from, to string) error
	// Uninstall removes the add-on; removing what is already gone succeeds.
	Uninstall(ctx context.Context, spec Spec) error
	// Health reports the add-on's health; an error means it could not be read.
	Health(ctx context.Context, spec Spec) (Health, error)
}

// StatusWriter persists a status with optimistic concurrency. It returns an
// error for which IsConflict reports true when the object changed since it
// was read.
type StatusWriter interface {
	WriteStatus(ctx context.Context, spec Spec, status Status) error
}

// StatusWriterFunc adapts a function to StatusWriter.
type StatusWriterFunc func(ctx context.Context, spec Spec, status Status) error

// WriteStatus calls f.
func (f StatusWriterFunc) WriteStatus(ctx context.Context, spec Spec, status Status) error {
	return f(ctx, spec, status)
}

var _ StatusWriter = StatusWriterFunc(nil)

// Result is what the host returns to its work queue; it has the meaning of
// controller-runtime's reconcile.Result.
type Result struct {
	// Requeue asks to reconcile again at once: the next action is due now.
	Requeue bool
	// RequeueAfter, when Requeue is false and it is > 0, asks to reconcile
	// again after that long: when the next retry, health check or phase
	// deadline is due. Both zero mean: wait for a spec change.
	RequeueAfter time.Duration
	// Deleted is true when the add-on is uninstalled after a deletion
	// request: the host drops its finalizer.
	Deleted bool
	// Action is the action this call ran (ActionNone: none).
	Action Action
	// Events are the events to emit, in order.
	Events []Record
}

// Config configures a Machine. Only Driver is required.
type Config struct {
	// Driver acts on the add-ons: install, upgrade, uninstall, health. It is
	// required.
	Driver Driver
	// Writer, if set, persists the status before an action runs (so a
	// concurrent writer loses the race instead of starting the same action
	// twice), after its outcome, and whenever a look changed it. It is the
	// in-flight guard: it must refuse (with a conflict) a status derived from
	// a stale read, as a write with the object's resourceVersion does.
	//
	// Nil: the host persists the returned status, and there is no in-flight
	// guard. Such a host must serialise reconciles per add-on (a client-go
	// workqueue does: it never hands the same key to two workers at once);
	// otherwise two reconciles of one add-on may run the same action twice.
	Writer StatusWriter
	// IsConflict classifies a Writer error as a conflict; nil means
	// errors.Is(err, ErrConflict). Hosts using client-go pass
	// apierrors.IsConflict.
	IsConflict func(error) bool
	// Policy and Table: see Decide. A nil Table is DefaultTable.
	Policy Policy
	Table  *Table
	// Clock defaults to clock.RealClock{}.
	Clock clock.PassiveClock
	// Jitter returns values in [0, 1) and must be safe for concurrent use;
	// nil uses math/rand/v2.
	Jitter func() float64
}

// Machine is the thin shell around Decide: Reconcile looks, runs at most one
// Driver action, records its outcome and returns the status. It never starts
// a goroutine and keeps no state between calls, so one Machine serves any
// number of add-ons concurrently and a new Machine continues from status
// alone.
//
// Two reconciles of the same add-on at once (two workers, two processes)
// are kept from running the same action twice only by Config.Writer: the
// first to write its claim wins, the other gets ErrConflict and runs
// nothing. Without a Writer the host must serialise reconciles per add-on.
type Machine struct {
	cfg Config
}

// NewMachine validates cfg and returns a Machine. The error matches ErrInvalid.
func NewMachine(cfg Config) (*Machine, error) {
	var problems []string
	if cfg.Driver == nil {
		problems = append(problems, "nil driver")
	}
	if err := cfg.Policy.Validate(); err != nil {
		for _, p := range err.(*InvalidError).Problems {
			problems = append(problems, "policy: "+p)
		}
	}
	if cfg.Table != nil && len(cfg.Table.rows) == 0 {
		problems = append(problems, "empty table (build tables with NewTable)")
	}
	if len(problems) > 0 {
		return nil, invalid("config", problems...)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	if cfg.IsConflict == nil {
		cfg.IsConflict = func(err error) bool { return errors.Is(err, ErrConflict) }
	}
	return &Machine{cfg: cfg}, nil
}

// Reconcile advances one add-on. It decides from spec and status, runs the
// decided action (if any) through the Driver with the policy's
// ActionTimeout, decides again from the outcome, and returns the new status.
// A failed action is not an error: it is recorded in the status and the
// events, and retried as the policy says. The error is for bad input, for a
// status write that failed, or for an action cut short because ctx ended (the
// returned status then keeps the action pending). With a conflict
// (errors.Is(err, ErrConflict)) the returned status still holds what was
// decided.
func (m *Machine) Reconcile(ctx context.Context, spec Spec, status Status) (Status, Result, error) {
	log := klog.FromContext(ctx).WithValues("addon", spec.Name)
	in := Input{Spec: spec, Status: status, Policy: m.cfg.Policy, Table: m.cfg.Table, Now: m.cfg.Clock.Now(), Jitter: m.jitter()}
	d, err := Decide(in)
	if err != nil {
		return status, Result{}, err
	}
	events := d.Events
	if d.Action == ActionNone {
		logEvents(log, events)
		if equality.Semantic.DeepEqual(d.Status, status) {
			return d.Status, result(d, events, ActionNone), nil
		}
		return d.Status, result(d, events, ActionNone), m.write(ctx, spec, d.Status)
	}
	if err := m.write(ctx, spec, d.Status); err != nil {
		return d.Status, result(d, events, ActionNone), err
	}
	log.V(2).Info("Running action", "action", d.Action, "phase", d.Status.Phase)
	obs := m.run(ctx, spec, d.Status, d.Action)
	if err := ctx.Err(); err != nil {
		// The host is shutting down: the action's outcome says nothing about
		// the add-on. The status keeps it pending, so it runs again.
		return d.Status, result(d, events, d.Action), fmt.Errorf("addon: %s interrupted: %w", d.Action, err)
	}
	if obs.Err != nil {
		log.V(1).Info("Action failed", "action", d.Action, "err", obs.Err)
	}
	in.Status, in.Observation, in.Now, in.Jitter = d.Status, obs, m.cfg.Clock.Now(), m.jitter()
	after, err := Decide(in)
	if err != nil {
		return d.Status, result(d, events, d.Action), err
	}
	events = append(events, after.Events...)
	logEvents(log, events)
	return after.Status, result(after, events, d.Action), m.write(ctx, spec, after.Status)
}

func logEvents(log klog.Logger, events []Record) {
	for _, e := range events {
		log.V(1).Info("Event", "type", e.Type, "reason", e.Reason, "message", e.Message)
	}
}

func (m *Machine) jitter() float64 {
	j := m.cfg.Jitter()
	if !(j >= 0 && j < 1) {
		return 0
	}
	return j
}

func result(d Decision, events []Record, ran Action) Result {
	return Result{Requeue: d.Requeue, RequeueAfter: d.RequeueAfter, Deleted: d.Deleted, Action: ran, Events: events}
}

func (m *Machine) write(ctx context.Context, spec Spec, st Status) error {
	if m.cfg.Writer == nil {
		return nil
	}
	err := m.cfg.Writer.WriteStatus(ctx, spec, st)
	switch {
	case err == nil:
		return nil
	case m.cfg.IsConflict(err):
		return &conflictError{err: err}
	}
	return fmt.Errorf("addon: write status: %w", err)
}

// run performs one action with the policy's action timeout.
func (m *Machine) run(ctx context.Context, spec Spec, st Status, a Action) Observation {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Policy.withDefaults().ActionTimeout)
	defer cancel()
	drv := m.cfg.Driver
	obs := Observation{Action: a}
	switch a {
	case ActionInstall:
		obs.Err = drv.Install(ctx, spec)
	case ActionUpgrade:
		obs.Err = drv.Upgrade(ctx, spec, st.InstalledVersion, spec.Version)
	case ActionRollback:
		obs.Err = drv.Upgrade(ctx, spec, st.InstalledVersion, st.LastGoodVersion)
	case ActionUninstall:
		obs.Err = drv.Uninstall(ctx, spec)
	case ActionCheckHealth:
		obs.Health, obs.Err = drv.Health(ctx, spec)
	}
	return obs
}
