package addon

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Input is everything Decide looks at.
type Input struct {
	// Spec is what the add-on should be.
	Spec Spec
	// Status is the persisted status (zero for a new add-on).
	Status Status
	// Observation is what the host reported for this pass: zero for a look,
	// or what its Driver returned for the action the previous decision chose.
	Observation Observation
	// Policy holds the retry, remediation, deadline, polling, pause and
	// window rules.
	Policy Policy
	// Zones holds the location of every time zone Policy.Windows names
	// (converge.Zones.Load; the Machine loads and keeps them), so that
	// Decide does no I/O. A zone it lacks is invalid input.
	Zones converge.Zones
	// Table is the lifecycle; nil means DefaultTable.
	Table *Table
	// Now is the current time; stored timestamps are truncated to seconds.
	Now time.Time
	// Jitter in [0, 1) scales the backoff jitter of a failure decided now.
	Jitter float64
	// Owner names whoever will run the decided action: the owner of its
	// claim (Config.Owner); empty means "addon".
	Owner string
	// Inspect is true when the Driver implements Inspector (the Machine
	// sets it): a takeover and an outcome that arrived too late are then
	// followed by ActionInspect, before anything else.
	Inspect bool
	// Redact cleans driver error text before it reaches the status, the
	// conditions or the events; nil means DefaultRedact. (A function cannot
	// live in a CRD, so it is not part of Policy.)
	Redact func(string) string
}

// defaultOwner is the claim owner when Input.Owner and Config.Owner are empty.
const defaultOwner = "addon"

// ClaimGrace is how long a claim outlives Policy.ActionTimeout, for the
// outcome's write.
const ClaimGrace = 30 * time.Second

// RequeueNow is the RequeueAfter of a decision whose next action is due at
// once (Result has no Requeue flag).
const RequeueNow = time.Millisecond

// maxMessage bounds Status.Message and event messages.
const maxMessage = 1024

// Decision is what Decide decided.
type Decision struct {
	// Result holds the events to emit, in order (each transition's reason is
	// its trigger; Reasons lists every reason), and when to look again:
	// RequeueNow when the next action is due at once, the time to the next
	// retry, health check, deadline, claim expiry or windows' opening
	// otherwise, and zero to wait for a change of the spec (a pause).
	converge.Result
	// Status is the new status to persist. It may share unchanged slices and
	// pointers with Input.Status; Decide modifies neither.
	Status Status
	// Action is the one action to run now (ActionNone: nothing). A mutating
	// action is claimed in Status.InFlight: persist the status before
	// running it, then report what the Driver returned (with that claim)
	// in the next Input's Observation. A read (ActionCheckHealth,
	// ActionInspect) claims nothing: run it and report it with this
	// Status, then persist what that decides.
	Action Action
	// Deleted is true once the add-on is uninstalled after a deletion
	// request: the host drops its finalizer.
	Deleted bool
}

// Decide is the whole lifecycle as a pure function: from the spec, the
// persisted status, what was observed, the policy, the table and the time, it
// returns the new status, the one action to run, the events and when to look
// again. It does no I/O and reads no clock. It is total: for every valid input
// it returns a decision; invalid input returns an error matching
// converge.ErrInvalid.
//
// With an empty Observation it looks: a stale spec generation is ignored;
// an unexpired claim waits; an expired one is taken over (inspected first,
// with Input.Inspect, else a lost attempt);
// deletion, spec changes and requests fire their triggers; then the
// pending action is returned (and claimed) if due and neither a pause nor
// closed windows hold it. With an Observation it records what the action
// did, if the claim it ran under still holds.
func Decide(in Input) (Decision, error) {
	if err := in.validate(); err != nil {
		return Decision{}, err
	}
	d := decider{in: in, rules: in.Policy.rules(), table: in.Table, now: metav1.NewTime(in.Now.Truncate(time.Second)), st: in.Status}
	if d.table == nil {
		d.table = defaultTable
	}
	if d.st.Phase == "" {
		d.start()
	}
	if err := d.gate(); err != nil {
		return Decision{}, err
	}
	d.staleSpec = in.Spec.Generation < max(d.st.SeenGeneration, d.st.ObservedGeneration)
	if in.Observation.Action == ActionNone {
		d.look()
	} else {
		d.record()
	}
	if !d.stale && d.waitUntil == nil {
		d.markHolds()
		if err := d.setConditions(); err != nil {
			return Decision{}, err
		}
	}
	return d.decision(), nil
}

func (in *Input) validate() error {
	sErr, stErr, pErr := in.Spec.Validate(), in.Status.Validate(), in.Policy.Validate()
	obs := &in.Observation
	ok := sErr == nil && stErr == nil && pErr == nil && !in.Now.IsZero() && in.Jitter >= 0 && in.Jitter < 1 &&
		(in.Table == nil || len(in.Table.rows) > 0) && obs.Action.known() && obs.Action != ActionRemediate &&
		(!obs.Action.mutates() || obs.Claim != nil)
	if ok && (in.Status.Phase == "" || in.tableOrDefault().has(in.Status.Phase) && in.tableOrDefault().handles(in.Status.Phase, in.Status.PendingAction)) {
		return nil
	}
	var problems []string
	problems = append(problems, input.Problems(sErr, "Spec: ")...)
	problems = append(problems, input.Problems(stErr, "Status: ")...)
	problems = append(problems, input.Problems(pErr, "Policy: ")...)
	if in.Table != nil && len(in.Table.rows) == 0 {
		problems = append(problems, "Table has no rows (build tables with NewTable)")
	} else if p := in.Status.Phase; p != "" && p.known() && !in.tableOrDefault().has(p) {
		problems = append(problems, fmt.Sprintf("Status: phase %s is not in the table", p))
	} else if a := in.Status.PendingAction; p != "" && !in.tableOrDefault().handles(p, a) {
		problems = append(problems, fmt.Sprintf("Status: the table has no rows in %s for the outcome of %s", p, a))
	}
	if in.Now.IsZero() {
		problems = append(problems, input.ZeroNow)
	}
	if !(in.Jitter >= 0 && in.Jitter < 1) {
		problems = append(problems, fmt.Sprintf("Jitter %v is outside [0, 1)", in.Jitter))
	}
	if !obs.Action.known() || obs.Action == ActionRemediate {
		problems = append(problems, fmt.Sprintf("Observation: unknown action %q", obs.Action))
	} else if obs.Action.mutates() && obs.Claim == nil {
		problems = append(problems, fmt.Sprintf("Observation: outcome of %s without the claim it ran under", obs.Action))
	}
	return input.Invalid("addon", "input", problems...)
}

func (in *Input) tableOrDefault() *Table {
	if in.Table == nil {
		return defaultTable
	}
	return in.Table
}

type decider struct {
	in     Input
	rules  rules
	table  *Table
	now    metav1.Time
	st     Status
	action Action
	events []converge.Event
	// condsOwned is true once st.Conditions is a copy Decide may change.
	condsOwned bool
	// waitUntil is the expiry of a claim another attempt holds.
	waitUntil *metav1.Time
	// staleSpec is true when the spec's generation is below one already
	// seen; stale when a look ignored it for that.
	staleSpec, stale bool
	// requested is true while a reset request (not a new generation)
	// fires a version change: it keeps the backoff of the failures before.
	requested bool
	// paused and closed are true when Policy.Paused or closed windows keep
	// gated actions from starting (never during a deletion); opens is when
	// the windows open, the zero time if no opening was found.
	paused, closed bool
	opens          time.Time
	// holding is true when they hold the pending action (markHolds).
	holding bool
	// err is the first error a condition write reported.
	err error
}

// start initialises the status of an add-on never seen before: a status
// without a phase is one, whatever else it holds (but its conditions).
func (d *decider) start() {
	d.st = Status{Conditions: d.st.Conditions}
	st := &d.st
	st.Phase = PhaseInitializing
	st.PendingAction = ActionInstall
	st.LastTransitionTime = d.now
	st.Deadline = d.at(d.rules.timeout(PhaseInitializing))
	st.ObservedGeneration, st.SeenGeneration = d.in.Spec.Generation, d.in.Spec.Generation
	st.LastResetToken, st.LastForceToken = d.in.Spec.ResetToken, d.in.Spec.ForceToken
	st.Reason = ReasonCreated
	st.Message = "installing " + d.in.Spec.Version
	d.event(converge.EventTypeNormal, ReasonCreated, "-> "+string(PhaseInitializing)+": "+st.Message)
}

// at returns now plus wait, as a stored time.
func (d *decider) at(wait time.Duration) *metav1.Time {
	t := metav1.NewTime(d.now.Add(wait))
	return &t
}

func (d *decider) decision() Decision {
	out := Decision{Result: converge.Result{Events: d.events}, Status: d.st, Action: d.action}
	st := &d.st
	switch {
	case st.Phase == PhaseDeleted:
		out.Deleted = true
	case d.action != ActionNone:
	case d.waitUntil != nil:
		out.RequeueAfter = max(d.waitUntil.Sub(d.now.Time), RequeueNow)
	case d.stale:
		out.RequeueAfter = d.rules.checkInterval
	case d.holding:
		out.RequeueAfter = d.holdRequeue()
	case st.SeenGeneration > st.ObservedGeneration:
		// A spec seen while a claim held, not yet acted on: a look takes
		// it at once (the host saw it earlier and will not bring it again).
		out.RequeueAfter = RequeueNow
	case st.PendingAction == ActionNone:
	case d.due():
		out.RequeueAfter = RequeueNow
	default:
		out.RequeueAfter = max(st.NextAttemptTime.Sub(d.now.Time), RequeueNow)
	}
	return out
}
