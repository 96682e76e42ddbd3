package addon

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
)

// Input is everything Decide looks at.
type Input struct {
	// Spec is what the add-on should be.
	Spec Spec
	// Status is the persisted status (zero for a new add-on).
	Status Status
	// Observation is the outcome of the action just run, or zero for a look.
	Observation Observation
	// Policy holds the retry, remediation, deadline and polling rules.
	Policy Policy
	// Table is the lifecycle; nil means DefaultTable.
	Table *Table
	// Now is the current time; stored timestamps are truncated to seconds.
	Now time.Time
	// Jitter in [0, 1) scales the backoff jitter of a failure decided now.
	Jitter float64
}

// Record is an event for the host to emit on its object (with its own
// record.EventRecorder): Type is corev1.EventTypeNormal or EventTypeWarning.
type Record struct {
	// Type is Normal or Warning.
	Type string `json:"type"`
	// Reason is the event (or "Created", "Suspended", "Resumed").
	Reason string `json:"reason"`
	// Message reads "From -> To: what happened; next: Action".
	Message string `json:"message"`
}

// Decision is what Decide decided.
type Decision struct {
	// Status is the new status to persist.
	Status Status
	// Action is the one action to run now (ActionNone: nothing). After
	// running it, report its outcome to Decide in Observation.
	Action Action
	// Events are the transitions and failures to emit, in order.
	Events []Record
	// Requeue asks to look again at once: the pending action is due now.
	Requeue bool
	// RequeueAfter, when Requeue is false and it is > 0, asks to look again
	// after that long: when the pending action (a retry, a health check) or
	// the phase deadline is due. Both zero mean: wait for a spec change.
	RequeueAfter time.Duration
	// Deleted is true once the add-on is uninstalled after a deletion
	// request: the host drops its finalizer.
	Deleted bool
}

// Decide is the whole lifecycle as a pure function: from the spec, the
// persisted status, what was observed, the policy, the table and the time, it
// returns the new status, the one action to run, the events and when to look
// again. It does no I/O and reads no clock. It is total: for every valid input
// it returns a decision; invalid input returns an error matching ErrInvalid.
//
// With an empty Observation it looks: deletion, retry requests and spec
// changes fire their events, then the pending action is returned if due. With
// an Observation it records the action's outcome: the event it means fires,
// and the row's action becomes the next pending one.
func Decide(in Input) (Decision, error) {
	if err := in.validate(); err != nil {
		return Decision{}, err
	}
	d := &decider{in: in, policy: in.Policy.withDefaults(), table: in.tableOrDefault(), now: metav1.NewTime(in.Now.Truncate(time.Second))}
	in.Status.DeepCopyInto(&d.st)
	if d.st.Phase == "" {
		d.start()
	}
	if in.Observation.Action == ActionNone {
		d.look()
	} else {
		d.record()
	}
	if err := d.setConditions(); err != nil {
		return Decision{}, err
	}
	return d.decision(), nil
}

func (in *Input) validate() error {
	var problems []string
	for _, err := range []error{in.Spec.Validate(), in.Status.Validate(), in.Policy.Validate()} {
		if ie, ok := err.(*InvalidError); ok {
			for _, p := range ie.Problems {
				problems = append(problems, ie.What+": "+p)
			}
		}
	}
	if in.Table != nil && len(in.Table.rows) == 0 {
		problems = append(problems, "table: no rows (build tables with NewTable)")
	} else if p := in.Status.Phase; p != "" && p.Known() && !in.tableOrDefault().Has(p) {
		problems = append(problems, fmt.Sprintf("status: phase %s is not in the table", p))
	}
	if in.Now.IsZero() {
		problems = append(problems, "zero time")
	}
	if !(in.Jitter >= 0 && in.Jitter < 1) {
		problems = append(problems, fmt.Sprintf("jitter %v is outside [0, 1)", in.Jitter))
	}
	obs := in.Observation
	if !obs.Action.Known() || obs.Action == ActionRemediate {
		problems = append(problems, fmt.Sprintf("observation: unknown action %q", obs.Action))
	} else if obs.Action != ActionNone && obs.Action != in.Status.PendingAction {
		problems = append(problems, fmt.Sprintf("observation: outcome of %s but the pending action is %q", obs.Action, in.Status.PendingAction))
	}
	if len(problems) > 0 {
		return invalid("input", problems...)
	}
	return nil
}

func (in *Input) tableOrDefault() *Table {
	if in.Table == nil {
		return DefaultTable()
	}
	return in.Table
}

type decider struct {
	in     Input
	policy Policy
	table  *Table
	now    metav1.Time
	st     Status
	action Action
	events []Record
	// note explains an observation that moved nothing (a health read error).
	note string
}

// start initialises the status of an add-on never seen before.
func (d *decider) start() {
	d.st.Phase = PhaseInitializing
	d.st.PendingAction = ActionInstall
	d.st.LastTransitionTime = d.now
	d.st.ObservedGeneration = d.in.Spec.Generation
	d.st.LastRetryToken = d.in.Spec.RetryToken
	d.st.Reason = "Created"
	d.st.Message = fmt.Sprintf("installing %s", d.in.Spec.Version)
	d.events = append(d.events, Record{Type: corev1.EventTypeNormal, Reason: "Created", Message: fmt.Sprintf("-> %s: %s", PhaseInitializing, d.st.Message)})
}

// look handles a fresh reconcile: spec events first, then the pending action.
func (d *decider) look() {
	spec := d.in.Spec
	if d.st.Phase == PhaseDeleted {
		return
	}
	if spec.Deleting {
		d.st.Suspended = false
		switch {
		case d.st.Phase != PhaseDeleting:
			d.fire(EventDeletionRequested, "deletion requested")
		case spec.RetryToken != "" && spec.RetryToken != d.st.LastRetryToken:
			d.fire(EventRetryRequested, d.specMessage(EventRetryRequested))
		}
		d.st.LastRetryToken = spec.RetryToken
	} else if spec.Suspended {
		if !d.st.Suspended {
			d.events = append(d.events, Record{Type: corev1.EventTypeNormal, Reason: "Suspended", Message: "reconciliation suspended"})
		}
		d.st.Suspended = true
		d.st.Reason, d.st.Message = "Suspended", fmt.Sprintf("suspended in %s", d.st.Phase)
		return
	} else {
		if d.st.Suspended {
			d.events = append(d.events, Record{Type: corev1.EventTypeNormal, Reason: "Resumed", Message: fmt.Sprintf("reconciliation resumed in %s", d.st.Phase)})
			// Time suspended does not count against the phase deadline.
			d.st.LastTransitionTime = d.now
		}
		d.st.Suspended = false
		for _, e := range specEvents(spec, &d.st) {
			if d.fire(e, d.specMessage(e)) {
				break
			}
		}
		d.st.LastRetryToken = spec.RetryToken
		d.st.ObservedGeneration = spec.Generation
	}
	// Failed, and a deletion stopped at its deadline, wait for the spec: a
	// change or a retry request.
	if d.st.PendingAction == ActionNone && d.st.Phase != PhaseFailed && !d.deletionStopped() {
		d.st.PendingAction = d.resumeAction()
	}
	if p := d.st.PendingAction; d.st.Phase == PhaseDeleting && p != ActionUninstall && p != ActionNone {
		// Deleting only ever uninstalls, whatever a table row or a foreign
		// status says.
		d.st.PendingAction, d.st.NextAttemptTime = ActionUninstall, nil
	}
	if d.st.PendingAction != ActionNone && d.st.Phase != PhaseChecking && d.pastDeadline() {
		d.expire()
	}
	if d.st.PendingAction != ActionNone && d.due() {
		d.action = d.st.PendingAction
		t := d.now
		d.st.LastAttemptTime = &t
	}
}

// resumeAction is the action a phase runs when the status has nothing
// pending (a hand-edited or foreign status): the first concrete action a row
// runs on entering the phase, else its remediation.
func (d *decider) resumeAction() Action {
	remediate := false
	for _, r := range d.table.rows {
		if r.To != d.st.Phase {
			continue
		}
		switch r.Action {
		case ActionNone:
		case ActionRemediate:
			remediate = true
		default:
			return r.Action
		}
	}
	if remediate {
		return d.policy.remediation(d.st.LastFailedAction, d.st.Phase)
	}
	return ActionNone
}

func (d *decider) specMessage(e Event) string {
	switch e {
	case EventRetryRequested:
		return fmt.Sprintf("retry requested (token %q)", d.in.Spec.RetryToken)
	case EventVersionChanged:
		return fmt.Sprintf("desired version %s, installed %s", d.in.Spec.Version, d.st.InstalledVersion)
	}
	return fmt.Sprintf("generation %d, observed %d", d.in.Spec.Generation, d.st.ObservedGeneration)
}

// deletionStopped reports a deletion stopped at its deadline: Deleting with
// nothing pending, under a table whose DeadlinePassed row in Deleting stays
// there and runs nothing (the default table). Under another table, Deleting
// with nothing pending uninstalls.
func (d *decider) deletionStopped() bool {
	if d.st.Phase != PhaseDeleting || d.st.PendingAction != ActionNone {
		return false
	}
	r, ok := d.table.Next(PhaseDeleting, EventDeadlinePassed)
	return ok && r.To == PhaseDeleting && r.Action == ActionNone
}

// pastDeadline reports whether the phase's deadline has passed.
func (d *decider) pastDeadline() bool {
	dl, ok := d.policy.Deadline(d.st)
	return ok && !d.in.Now.Before(dl)
}

// expire fires DeadlinePassed on a look past the phase deadline: the
// pending action did not succeed in time (its outcome was lost, or its
// retry was not due before the deadline). An install or upgrade becomes the
// failed action, for remediation, and its version the failed one. No counter
// moves: a failed attempt was counted when its outcome was recorded. Without
// a DeadlinePassed row for the phase, nothing happens.
func (d *decider) expire() {
	if _, ok := d.table.Next(d.st.Phase, EventDeadlinePassed); !ok {
		return
	}
	a := d.st.PendingAction
	msg := fmt.Sprintf("%s: not done within %s in %s", d.describe(a), d.policy.Timeout(d.st.Phase), d.st.Phase)
	if a == ActionInstall || a == ActionUpgrade {
		d.st.LastFailedAction, d.st.FailedVersion = a, d.in.Spec.Version
	}
	d.fire(EventDeadlinePassed, msg)
}

func (d *decider) due() bool {
	return d.st.NextAttemptTime == nil || !d.in.Now.Before(d.st.NextAttemptTime.Time)
}

// record handles the outcome of the action just run.
func (d *decider) record() {
	obs := d.in.Observation
	spec := d.in.Spec
	if obs.Action == ActionCheckHealth {
		d.recordHealth()
		return
	}
	if obs.Err != nil {
		d.fail(obs.Action, fmt.Sprintf("%s failed: %v", d.describe(obs.Action), obs.Err))
		return
	}
	msg := d.describe(obs.Action) + " succeeded"
	switch obs.Action {
	case ActionInstall, ActionUpgrade:
		d.st.InstalledVersion = spec.Version
	case ActionRollback:
		d.st.InstalledVersion = d.st.LastGoodVersion
	case ActionUninstall:
		d.st.InstalledVersion = ""
		d.st.UninstallFailures = 0
	}
	if !d.fire(successEvent(obs.Action), msg) {
		d.stay(ActionNone, msg)
	}
}

// describe names an action with its versions, for messages.
func (d *decider) describe(a Action) string {
	switch a {
	case ActionInstall:
		return "install of " + d.in.Spec.Version
	case ActionUpgrade:
		return fmt.Sprintf("upgrade from %s to %s", d.st.InstalledVersion, d.in.Spec.Version)
	case ActionRollback:
		return fmt.Sprintf("rollback from %s to %s", d.st.InstalledVersion, d.st.LastGoodVersion)
	case ActionUninstall:
		return "uninstall"
	}
	return "recovery"
}

func (d *decider) recordHealth() {
	obs := d.in.Observation
	h := obs.Health
	if obs.Err != nil || (h != HealthHealthy && h != HealthUnhealthy) {
		h = HealthUnknown
	}
	switch {
	case h == HealthHealthy:
		if d.fire(EventHealthy, fmt.Sprintf("%s is healthy", d.st.InstalledVersion)) {
			return
		}
	case d.st.Phase == PhaseChecking && d.pastDeadline():
		d.fail(d.st.Verifying, fmt.Sprintf("%s: not healthy within %s (health %s)", d.describeVerifying(), d.policy.CheckTimeout, h))
		return
	case h == HealthUnhealthy:
		if d.fire(EventUnhealthy, fmt.Sprintf("%s is unhealthy", d.st.InstalledVersion)) {
			return
		}
	}
	if obs.Err != nil {
		d.note = fmt.Sprintf("health unknown: %v", obs.Err)
	} else if h != HealthHealthy {
		d.note = fmt.Sprintf("health %s", h)
	}
	d.stay(ActionCheckHealth, "")
}

func (d *decider) describeVerifying() string {
	switch d.st.Verifying {
	case ActionInstall:
		return "install of " + d.st.InstalledVersion
	case ActionUpgrade:
		return "upgrade to " + d.st.InstalledVersion
	case ActionRollback:
		return "rollback to " + d.st.InstalledVersion
	}
	return "recovery of " + d.st.InstalledVersion
}

// fail counts a failure of action a (ActionNone: a broken add-on that did not
// recover, counted as an install failure) and fires the event it means.
func (d *decider) fail(a Action, msg string) {
	e := failureEvent(a)
	switch a {
	case ActionInstall, ActionNone:
		d.st.InstallFailures++
		d.st.LastFailedAction = ActionInstall
		d.st.FailedVersion = d.in.Spec.Version
		if d.policy.Exhausted(d.st.InstallFailures) {
			e = EventRetriesExhausted
		}
	case ActionUpgrade:
		d.st.UpgradeFailures++
		d.st.LastFailedAction = ActionUpgrade
		d.st.FailedVersion = d.in.Spec.Version
		if d.policy.Exhausted(d.st.UpgradeFailures) {
			e = EventRetriesExhausted
		}
	case ActionUninstall:
		d.st.UninstallFailures++
	}
	if e == EventRetriesExhausted {
		msg = fmt.Sprintf("%s; retried %d times", msg, d.policy.MaxRetries)
	} else if _, ok := d.table.Next(d.st.Phase, EventDeadlinePassed); ok && d.st.Phase != PhaseChecking && d.pastDeadline() {
		e = EventDeadlinePassed
		msg = fmt.Sprintf("%s; not done within %s in %s", msg, d.policy.Timeout(d.st.Phase), d.st.Phase)
	}
	if d.fire(e, msg) {
		return
	}
	if e == EventRetriesExhausted {
		// No row for it here: stop retrying rather than exceed the policy.
		d.st.Reason = string(e)
		a = ActionNone
	}
	d.stay(a, msg)
}

// stay keeps the phase: the next pending action is next (ActionNone: none).
func (d *decider) stay(next Action, msg string) {
	if next == ActionNone && d.in.Observation.Action == ActionCheckHealth {
		next = ActionCheckHealth
	}
	d.st.PendingAction = next
	d.st.NextAttemptTime = d.schedule(next)
	if msg != "" {
		d.st.Message = msg
	}
}

// fire looks event e up in the table from the current phase and, if a row
// exists, makes the transition and returns true.
func (d *decider) fire(e Event, msg string) bool {
	row, ok := d.table.Next(d.st.Phase, e)
	if !ok {
		return false
	}
	st := &d.st
	from := st.Phase
	switch e {
	case EventSpecChanged, EventVersionChanged, EventRetryRequested:
		st.InstallFailures, st.UpgradeFailures, st.UninstallFailures = 0, 0, 0
		st.FailedVersion, st.LastFailedAction = "", ActionNone
	case EventDeletionRequested:
		st.UninstallFailures = 0
	case EventHealthy:
		st.InstallFailures, st.UpgradeFailures = 0, 0
		st.LastGoodVersion = st.InstalledVersion
		st.LastFailedAction = ActionNone
		if st.FailedVersion == st.InstalledVersion {
			st.FailedVersion = ""
		}
	}
	st.Verifying = ActionNone
	if row.To == PhaseChecking {
		st.Verifying = verifies(e)
	}
	st.Phase = row.To
	if from != row.To || restartsPhase(e) {
		st.LastTransitionTime = d.now
	}
	next := row.Action
	if next == ActionRemediate {
		next = d.policy.remediation(st.LastFailedAction, row.To)
	}
	if next == ActionRollback && st.LastGoodVersion == "" {
		next = ActionUninstall
	}
	st.PendingAction = next
	st.NextAttemptTime = d.schedule(next)
	st.Reason, st.Message = string(e), msg
	typ := corev1.EventTypeNormal
	if isWarning(e) {
		typ = corev1.EventTypeWarning
	}
	text := fmt.Sprintf("%s -> %s: %s", from, row.To, msg)
	if next != ActionNone {
		text += "; next: " + string(next)
	}
	d.events = append(d.events, Record{Type: typ, Reason: string(e), Message: text})
	return true
}

// restartsPhase reports whether event e, even when its row stays in the
// same phase, starts the phase over, with a new deadline: a request from the
// spec, or a deadline that passed.
func restartsPhase(e Event) bool {
	switch e {
	case EventSpecChanged, EventVersionChanged, EventRetryRequested, EventDeletionRequested, EventDeadlinePassed:
		return true
	}
	return false
}

func isWarning(e Event) bool {
	switch e {
	case EventInstallFailed, EventUnhealthy, EventDeadlinePassed, EventUpgradeFailed, EventRollbackFailed,
		EventUninstallFailed, EventRetriesExhausted:
		return true
	}
	return false
}

// schedule returns when action a becomes due: a retry of a failed action
// after its backoff, a health check after a health check at the phase's
// poll interval, anything else at once; never past the phase deadline.
func (d *decider) schedule(a Action) *metav1.Time {
	var wait time.Duration
	switch {
	case a == ActionInstall && d.st.InstallFailures > 0:
		wait = d.policy.Backoff.Delay(d.st.InstallFailures, d.in.Jitter)
	case a == ActionUpgrade && d.st.UpgradeFailures > 0:
		wait = d.policy.Backoff.Delay(d.st.UpgradeFailures, d.in.Jitter)
	case a == ActionUninstall && d.st.UninstallFailures > 0:
		wait = d.policy.Backoff.Delay(d.st.UninstallFailures, d.in.Jitter)
	case a == ActionCheckHealth && d.in.Observation.Action == ActionCheckHealth:
		wait = d.policy.RunningInterval
		if d.st.Phase == PhaseChecking {
			wait = d.policy.CheckInterval
		}
	default:
		return nil
	}
	if dl, ok := d.policy.Deadline(d.st); ok {
		if left := dl.Sub(d.now.Time); left < wait {
			wait = max(left, 0)
		}
	}
	t := metav1.NewTime(d.now.Add(wait))
	return &t
}

// setConditions writes Ready, Reconciling, Stalled and Degraded for the phase.
func (d *decider) setConditions() error {
	st := &d.st
	if st.Suspended {
		return nil
	}
	gen := conditions.WithObservedGeneration(st.ObservedGeneration)
	now := d.now.Time
	msg := st.Message
	if d.note != "" {
		msg += " (" + d.note + ")"
	}
	msg = truncate(msg)
	var err error
	switch {
	case st.Phase == PhaseRunning:
		_, err = conditions.SetReady(&st.Conditions, string(st.Phase), msg, now, gen)
	case st.Phase == PhaseFailed:
		_, err = conditions.SetStalled(&st.Conditions, safeReason(st.Reason, st.Phase), msg, now, gen)
	case st.Phase == PhaseDeleted:
		conditions.Remove(&st.Conditions, conditions.TypeReconciling)
		conditions.Remove(&st.Conditions, conditions.TypeStalled)
		_, err = conditions.Set(&st.Conditions, metav1.Condition{Type: conditions.TypeReady, Status: metav1.ConditionFalse, Reason: string(st.Phase), Message: msg}, now, gen)
	case d.deletionStopped():
		_, err = conditions.SetStalled(&st.Conditions, safeReason(st.Reason, st.Phase), msg, now, gen)
	case st.Phase == PhaseDeleting && d.policy.Exhausted(st.UninstallFailures):
		_, err = conditions.SetStalled(&st.Conditions, "UninstallFailing", msg, now, gen)
	default:
		_, err = conditions.SetReconciling(&st.Conditions, string(st.Phase), msg, now, gen)
	}
	if err != nil {
		return fmt.Errorf("addon: conditions: %w", err)
	}
	degraded := metav1.Condition{Type: conditions.TypeDegraded, Status: metav1.ConditionFalse, Reason: conditions.ReasonAsExpected}
	switch {
	case st.Phase == PhaseFailed || st.Phase == PhaseReinitializing || st.Phase == PhaseRemediating:
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, string(st.Phase), msg
	case st.Phase == PhaseChecking && st.Verifying == ActionNone, st.Phase == PhaseChecking && st.Verifying == ActionRollback:
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionTrue, "Unhealthy", msg
	case st.FailedVersion != "" && st.Phase == PhaseRunning:
		degraded.Status, degraded.Reason = metav1.ConditionTrue, "VersionFailed"
		degraded.Message = fmt.Sprintf("version %s failed; running %s", st.FailedVersion, st.InstalledVersion)
	case d.note != "":
		degraded.Status, degraded.Reason, degraded.Message = metav1.ConditionUnknown, "HealthUnknown", truncate(d.note)
	}
	if _, err := conditions.Set(&st.Conditions, degraded, now, gen); err != nil {
		return fmt.Errorf("addon: conditions: %w", err)
	}
	return nil
}

// reasonPattern is the API's format for a condition reason.
var reasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// safeReason returns reason if the API accepts it as a condition reason (a
// host may have persisted anything), else the phase.
func safeReason(reason string, p Phase) string {
	if len(reason) <= 1024 && reasonPattern.MatchString(reason) {
		return reason
	}
	return string(p)
}

// maxMessage keeps condition messages within the API's 32768 bytes.
const maxMessage = 32000

func truncate(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	return strings.ToValidUTF8(msg[:maxMessage], "") + "…"
}

func (d *decider) decision() Decision {
	out := Decision{Status: d.st, Action: d.action, Events: d.events}
	switch {
	case d.st.Phase == PhaseDeleted:
		out.Deleted = true
	case d.st.Suspended && !d.in.Spec.Deleting, d.action != ActionNone, d.st.PendingAction == ActionNone:
	case d.due():
		out.Requeue = true
	default:
		out.RequeueAfter = d.st.NextAttemptTime.Sub(d.in.Now)
	}
	return out
}
