package addon

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Result is what the host returns to its work queue (RequeueAfter is
// RequeueNow when the next action is due at once) and the events to emit
// on its object, returned even beside an error for what was already
// persisted.
type Result struct {
	converge.Result
	// Deleted is true when the add-on is uninstalled after a deletion
	// request: the host drops its finalizer. (Indispensable: the status the
	// Store wrote says so too, but the host's copy may be older.)
	Deleted bool
}

// Config configures a Machine. Driver and Store are required; every other
// zero field takes its documented default.
type Config struct {
	// Driver acts on the add-ons. It may also implement DriftDetector and
	// Tester, which the Policy's Drift and Test need, and Inspector, which
	// the engine asks what the cluster runs after a takeover.
	Driver Driver
	// Store persists the status with optimistic concurrency: it is what
	// keeps one action in flight per add-on (the claim is written before
	// the action runs) and what a conflict re-reads.
	Store Store
	// Owner names this Machine in the claims it writes
	// (Status.InFlight.Owner): make it unique per process (such as the pod
	// name). Empty means "addon".
	Owner string
	// Policy and Table: see Decide. A nil Table is DefaultTable.
	Policy Policy
	Table  *Table
	// Clock defaults to clock.RealClock{}.
	Clock clock.PassiveClock
	// Jitter returns values in [0, 1) and must be safe for concurrent use;
	// nil uses math/rand/v2's Float64.
	Jitter func() float64
	// Redact cleans driver error text before it reaches the status, the
	// conditions or the events; nil means DefaultRedact.
	Redact func(string) string
}

// maxConflicts is how many conflicts in a row one Reconcile re-reads and
// decides again before it returns ErrConflict, as long as no action has run;
// the outcome of an action that ran is recorded however many conflicts it
// meets, until it is written or ctx ends.
const maxConflicts = 5

// Machine is the thin shell around Decide: Reconcile looks, claims and runs
// at most one Driver action, records its outcome and writes the status. It
// never starts a goroutine and keeps no state between calls, so one Machine
// serves any number of add-ons concurrently and a new Machine continues from
// status alone.
//
// Two reconciles of the same add-on at once (two workers, two processes)
// never run the same mutating action twice: the first to write its claim
// wins; the other re-reads, sees the claim, and waits for it to be recorded
// or to expire. A status conflict never loses an outcome: the Machine
// re-reads the add-on and records the outcome on the fresh status, as long
// as the claim it ran under still holds.
type Machine struct {
	cfg       Config
	rules     rules
	drift     DriftDetector
	tester    Tester
	inspector Inspector
	// zones are the locations of the time zones Policy.Windows names,
	// loaded once by NewMachine for every decision.
	zones converge.Zones
}

// NewMachine validates cfg, loads the time zones of its Policy.Windows
// (converge.Zones.Load: the Machine keeps them, so its decisions do no
// I/O), and returns a Machine. The error matches converge.ErrInvalid; it
// names a time zone that cannot be loaded.
func NewMachine(cfg Config) (*Machine, error) {
	problems := input.Fields(
		input.FieldValue{Name: "Driver", Value: cfg.Driver, Required: true},
		input.FieldValue{Name: "Store", Value: cfg.Store, Required: true},
		input.FieldValue{Name: "Clock", Value: cfg.Clock},
	)
	problems = append(problems, input.Problems(cfg.Policy.Validate(), "Policy: ")...)
	if cfg.Table != nil && len(cfg.Table.rows) == 0 {
		problems = append(problems, "Table has no rows (build tables with NewTable)")
	}
	m := &Machine{cfg: cfg, rules: cfg.Policy.rules()}
	zones, err := converge.Zones(nil).Load(cfg.Policy.Windows)
	problems = append(problems, input.Problems(err, "Policy: ")...)
	m.zones = zones
	m.drift, _ = cfg.Driver.(DriftDetector)
	m.tester, _ = cfg.Driver.(Tester)
	m.inspector, _ = cfg.Driver.(Inspector)
	if cfg.Policy.Drift != DriftIgnore && m.drift == nil {
		problems = append(problems, "Policy: drift "+string(cfg.Policy.Drift)+" needs a Driver that implements DriftDetector")
	}
	if cfg.Policy.Test.Enable && m.tester == nil {
		problems = append(problems, "Policy: test needs a Driver that implements Tester")
	}
	if len(problems) > 0 {
		return nil, input.Invalid("addon", "config", problems...)
	}
	if m.cfg.Clock == nil {
		m.cfg.Clock = clock.RealClock{}
	}
	if m.cfg.Jitter == nil {
		m.cfg.Jitter = rand.Float64
	}
	return m, nil
}

// Reconcile advances one add-on. It decides from obj, writes the status
// (with the claim of the action it decided, if any), runs that action
// through the Driver with the policy's ActionTimeout, records the outcome
// and writes the status again. A failed action is not an error: it is
// recorded in the status and the events, and retried as the policy says.
//
// A conflict on any write makes it re-read the add-on (Store.Get) and
// decide again: a look is made afresh, an outcome is recorded on the fresh
// status. The error is for bad input, a failed read or write, conflicts that
// went on past a few re-reads before any action ran (matching
// converge.ErrConflict; the outcome of an action that ran is re-recorded
// until it is written or ctx ends), or an action cut short because ctx ended
// (its claim then expires and it runs again). The Result is returned beside
// an error too, with the events of what was persisted.
func (m *Machine) Reconcile(ctx context.Context, obj Object) (Result, error) {
	if m == nil || m.cfg.Store == nil {
		return Result{}, input.NotMade("addon", "Machine")
	}
	log := klog.FromContext(ctx).WithValues("addon", obj.Spec.Name)
	var res Result
	for conflicts := 0; ; {
		d, err := m.decide(obj, Observation{})
		if err != nil {
			return res, err
		}
		if d.Action == ActionNone && reflect.DeepEqual(d.Status, obj.Status) {
			return m.done(log, res, d), nil
		}
		if d.Action != ActionNone && !d.Action.mutates() {
			// A read claims nothing: what it read is written with the look,
			// over the status it was decided from. After a conflict it is
			// dropped and the fresh status decides again (and reads again),
			// for a health read taken before another writer's action ended
			// says nothing of what that action applied.
			look := obj
			look.Status = d.Status
			obs := m.run(ctx, log, obj, d)
			read, err := m.decide(look, obs)
			if err != nil {
				return res, err
			}
			if _, err := m.cfg.Store.UpdateStatus(ctx, obj, read.Status); err != nil {
				if obj, err = m.reread(ctx, obj, err, &conflicts); err != nil {
					return res, err
				}
				continue
			}
			res.Events = append(res.Events, d.Events...)
			return m.done(log, res, read), nil
		}
		written, err := m.cfg.Store.UpdateStatus(ctx, obj, d.Status)
		if err != nil {
			if obj, err = m.reread(ctx, obj, err, &conflicts); err != nil {
				return res, err
			}
			continue
		}
		if d.Action == ActionNone {
			return m.done(log, res, d), nil
		}
		written.Host = obj.Host
		res.Events = append(res.Events, d.Events...)
		log.V(2).Info("Running action", "action", d.Action, "phase", d.Status.Phase)
		obs := m.run(ctx, log, written, d)
		if err := ctx.Err(); err != nil {
			// Shutting down: the outcome says nothing about the add-on. The
			// claim stays, expires, and the action runs again.
			return res, fmt.Errorf("addon: %s interrupted: %w", d.Action, err)
		}
		if obs.Err != nil {
			log.V(1).Info("Action failed", "action", d.Action, "err", m.redact(obs.Err.Error()))
		}
		return m.record(ctx, log, written, obs, res)
	}
}

// record writes the outcome obs of the claimed action onto obj, and after
// a conflict onto the add-on read afresh: the claim it ran under fences it.
// An outcome that came too late (its claim taken over) is discarded, and
// the Inspector is asked what the cluster runs now, written in the same
// write.
func (m *Machine) record(ctx context.Context, log klog.Logger, obj Object, obs Observation, res Result) (Result, error) {
	for {
		d, err := m.decide(obj, obs)
		if err != nil {
			return res, err
		}
		if d.Action == ActionInspect {
			if d, err = m.inspect(ctx, log, obj, d); err != nil {
				return res, err
			}
		}
		if _, err := m.cfg.Store.UpdateStatus(ctx, obj, d.Status); err != nil {
			if obj, err = m.reread(ctx, obj, err, nil); err != nil {
				return res, err
			}
			continue
		}
		return m.done(log, res, d), nil
	}
}

// inspect runs the inspection decision d asks for, decided from obj, and
// returns the decision that records it, with d's events before its own.
func (m *Machine) inspect(ctx context.Context, log klog.Logger, obj Object, d Decision) (Decision, error) {
	look := obj
	look.Status = d.Status
	read, err := m.decide(look, m.run(ctx, log, obj, d))
	if err != nil {
		return d, err
	}
	read.Events = append(d.Events, read.Events...)
	return read, nil
}

// reread handles a failed write: after a conflict it reads the add-on
// afresh, unless conflicts went on too long. With a nil count (the outcome
// of an action that ran, which must not be lost) it reads again after every
// conflict until the write lands or ctx ends.
func (m *Machine) reread(ctx context.Context, obj Object, err error, conflicts *int) (Object, error) {
	if !converge.IsConflict(err) {
		return Object{}, fmt.Errorf("addon: write status: %w", err)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return Object{}, fmt.Errorf("addon: write status: %w (%w)", err, ctxErr)
	}
	if conflicts != nil {
		*conflicts++
		if *conflicts >= maxConflicts {
			return Object{}, fmt.Errorf("addon: %d status conflicts in a row: %w", *conflicts, converge.Conflict(err))
		}
	}
	fresh, err := m.cfg.Store.Get(ctx, obj.Spec.Name)
	if err != nil {
		return Object{}, fmt.Errorf("addon: read after conflict: %w", err)
	}
	if fresh.Host == nil {
		fresh.Host = obj.Host
	}
	return fresh, nil
}

func (m *Machine) done(log klog.Logger, res Result, d Decision) Result {
	res.Events = append(res.Events, d.Events...)
	res.RequeueAfter, res.Deleted = d.RequeueAfter, d.Deleted
	for _, e := range res.Events {
		log.V(1).Info("Event", "type", e.Type, "reason", e.Reason, "message", e.Message)
	}
	return res
}

func (m *Machine) decide(obj Object, obs Observation) (Decision, error) {
	return Decide(Input{
		Spec: obj.Spec, Status: obj.Status, Observation: obs, Policy: m.cfg.Policy, Zones: m.zones, Table: m.cfg.Table,
		Now: m.cfg.Clock.Now(), Jitter: m.jitter(), Owner: m.cfg.Owner, Inspect: m.inspector != nil, Redact: m.cfg.Redact,
	})
}

func (m *Machine) jitter() float64 {
	j := m.cfg.Jitter()
	if !(j >= 0 && j < 1) {
		return 0
	}
	return j
}

func (m *Machine) redact(s string) string {
	if m.cfg.Redact != nil {
		return m.cfg.Redact(s)
	}
	return DefaultRedact(s)
}

// run performs the decided action with the policy's action timeout; a
// panic of the host's code is the call's *PanicError, its stack logged.
func (m *Machine) run(ctx context.Context, log klog.Logger, obj Object, d Decision) (obs Observation) {
	ctx, cancel := context.WithTimeout(ctx, m.rules.actionTimeout)
	defer cancel()
	st := &d.Status
	req := Request{Spec: obj.Spec, Host: obj.Host, From: st.InstalledVersion, To: st.InstalledVersion, Fence: st.Fence}
	if c := st.InFlight; c != nil {
		req.From, req.To, req.Fence = c.From, c.To, c.Fence
	}
	obs = Observation{Action: d.Action, Claim: st.InFlight}
	defer func() {
		if pe := (*PanicError)(nil); errors.As(obs.Err, &pe) {
			log.Error(pe, "Driver panicked; the attempt failed", "method", pe.Method, "stack", string(pe.Stack))
		}
	}()
	drv := m.cfg.Driver
	switch d.Action {
	case ActionInstall:
		obs.Err = recovered("Install", func() (err error) {
			obs.Revision, err = drv.Install(ctx, req)
			return err
		})
	case ActionUpgrade:
		obs.Err = recovered("Upgrade", func() (err error) {
			obs.Revision, err = drv.Upgrade(ctx, req)
			return err
		})
	case ActionRollback:
		req.Rollback, req.Revision = true, st.LastGoodRevision
		obs.Err = recovered("Upgrade", func() (err error) {
			obs.Revision, err = drv.Upgrade(ctx, req)
			return err
		})
	case ActionUninstall:
		obs.Err = recovered("Uninstall", func() error { return drv.Uninstall(ctx, req) })
	case ActionTest:
		obs.Err = recovered("Test", func() error { return m.tester.Test(ctx, req) })
	case ActionCheckHealth:
		m.checkHealth(ctx, log, req, st, &obs)
	case ActionInspect:
		obs.Err = m.inspected(ctx, req, &obs)
	}
	return obs
}

// checkHealth reads the health, and in Running the drift the policy looks
// for; while a mismatch stands it asks the Inspector too.
func (m *Machine) checkHealth(ctx context.Context, log klog.Logger, req Request, st *Status, obs *Observation) {
	obs.Err = recovered("Health", func() (err error) {
		obs.Health, err = m.cfg.Driver.Health(ctx, req)
		return err
	})
	if obs.Err == nil && m.drift != nil && m.rules.drift != DriftIgnore && st.Phase == PhaseRunning {
		err := recovered("Drift", func() (err error) {
			obs.Drifted, obs.DriftDetail, err = m.drift.Drift(ctx, req)
			return err
		})
		if err != nil {
			// Drift that cannot be read is health that cannot be read.
			obs.Drifted, obs.DriftDetail = false, ""
			obs.Err, obs.Health = fmt.Errorf("drift: %w", err), HealthUnknown
		}
	}
	if st.Mismatch != nil && m.inspector != nil {
		if err := m.inspected(ctx, req, obs); err != nil {
			log.V(1).Info("Inspection beside a health read failed", "err", m.redact(err.Error()))
		}
	}
}

// inspected asks the Inspector what the cluster runs into obs.Installed.
func (m *Machine) inspected(ctx context.Context, req Request, obs *Observation) error {
	if m.inspector == nil {
		return errors.New("addon: the Driver is no Inspector")
	}
	return recovered("Inspect", func() error {
		inst, err := m.inspector.Inspect(ctx, req)
		if err == nil {
			obs.Installed = &inst
		}
		return err
	})
}
