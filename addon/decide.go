package addon

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
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
	// Policy holds the retry, remediation, deadline and polling rules.
	Policy Policy
	// Table is the lifecycle; nil means DefaultTable.
	Table *Table
	// Now is the current time; stored timestamps are truncated to seconds.
	Now time.Time
	// Jitter in [0, 1) scales the backoff jitter of a failure decided now.
	Jitter float64
	// Owner names whoever will run the decided action: the owner of its
	// claim (Config.Identity); empty means "addon".
	Owner string
	// Redact cleans driver error text before it reaches the status, the
	// conditions or the events; nil means DefaultRedact. (A function cannot
	// live in a CRD, so it is not part of Policy.)
	Redact func(string) string
}

// defaultOwner is the claim owner when Input.Owner and Config.Identity are empty.
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
	// Status is the new status to persist. It may share unchanged slices and
	// pointers with Input.Status; Decide modifies neither.
	Status Status
	// Action is the one action to run now (ActionNone: nothing). A mutating
	// action is claimed in Status.InFlight: persist the status before
	// running it, then report what the Driver returned (with that claim)
	// in the next Input's Observation.
	Action Action
	// Events are the transitions and failures to emit, in order; a
	// Reason is the trigger, or Flux's wording.
	Events []converge.Event
	// RequeueAfter is when to look again: RequeueNow when the next action is
	// due at once, the time to the next retry, health check, deadline or
	// claim expiry otherwise, and zero to wait for a change of the spec.
	RequeueAfter time.Duration
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
// an unexpired claim waits; an expired one counts as a failed attempt;
// deletion, suspension, spec changes and requests fire their triggers; then
// the pending action is returned (and claimed) if due. With an Observation
// it records what the action did, if the claim it ran under still holds.
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
	d.staleSpec = in.Spec.Generation < max(d.st.SeenGeneration, d.st.ObservedGeneration)
	if in.Observation.Action == ActionNone {
		d.look()
	} else {
		d.record()
	}
	if !d.stale && d.waitUntil == nil {
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
	problems = append(problems, input.Problems(sErr, "spec: ")...)
	problems = append(problems, input.Problems(stErr, "status: ")...)
	problems = append(problems, input.Problems(pErr, "policy: ")...)
	if in.Table != nil && len(in.Table.rows) == 0 {
		problems = append(problems, "table: no rows (build tables with NewTable)")
	} else if p := in.Status.Phase; p != "" && p.known() && !in.tableOrDefault().has(p) {
		problems = append(problems, fmt.Sprintf("status: phase %s is not in the table", p))
	} else if a := in.Status.PendingAction; p != "" && !in.tableOrDefault().handles(p, a) {
		problems = append(problems, fmt.Sprintf("status: the table has no rows in %s for the outcome of %s", p, a))
	}
	if in.Now.IsZero() {
		problems = append(problems, "zero time")
	}
	if !(in.Jitter >= 0 && in.Jitter < 1) {
		problems = append(problems, fmt.Sprintf("jitter %v is outside [0, 1)", in.Jitter))
	}
	if !obs.Action.known() || obs.Action == ActionRemediate {
		problems = append(problems, fmt.Sprintf("observation: unknown action %q", obs.Action))
	} else if obs.Action.mutates() && obs.Claim == nil {
		problems = append(problems, fmt.Sprintf("observation: outcome of %s without the claim it ran under", obs.Action))
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
	st.Reason = "Created"
	st.Message = "installing " + d.in.Spec.Version
	d.event(converge.EventTypeNormal, "Created", "-> "+string(PhaseInitializing)+": "+st.Message)
}

// at returns now plus wait, as a stored time.
func (d *decider) at(wait time.Duration) *metav1.Time {
	t := metav1.NewTime(d.now.Add(wait))
	return &t
}

func (d *decider) event(typ, reason, msg string) {
	d.events = append(d.events, converge.Event{Type: typ, Reason: reason, Message: conditions.TruncateMessage(msg, maxMessage)})
}

// look handles a fresh reconcile: the spec's generation, the stored waits,
// claims, the spec's triggers, then the pending action.
func (d *decider) look() {
	st := &d.st
	spec := &d.in.Spec
	if st.Phase == PhaseDeleted {
		return
	}
	if d.staleSpec {
		d.stale = true
		d.event(converge.EventTypeWarning, "StaleGeneration", fmt.Sprintf("ignored spec generation %d: generation %d was already seen",
			spec.Generation, max(st.SeenGeneration, st.ObservedGeneration)))
		return
	}
	st.SeenGeneration = spec.Generation
	d.boundWaits()
	if c := st.InFlight; c != nil {
		if d.in.Now.Before(c.Expires.Time) {
			d.waitUntil = &c.Expires
			return
		}
		d.outcome(c, fmt.Errorf("claim by %s expired at %s before its outcome was recorded", c.Owner, c.Expires.UTC().Format(time.RFC3339)), OutcomeLost, "")
	}
	force := spec.ForceToken != "" && spec.ForceToken != st.LastForceToken
	reset := spec.ResetToken != "" && spec.ResetToken != st.LastResetToken
	switch {
	case spec.Deleting:
		d.resume()
		if reset {
			d.reset()
		}
		switch {
		case st.Phase != PhaseDeleting:
			d.fire(TriggerDeletionRequested, "deletion requested")
		case reset:
			d.fire(TriggerResetRequested, d.requestMessage(TriggerResetRequested))
		case force:
			d.fire(TriggerForceRequested, d.requestMessage(TriggerForceRequested))
		}
	case spec.Suspended:
		if st.SuspendedTime == nil {
			st.SuspendedTime = d.at(0)
			d.event(converge.EventTypeNormal, "Suspended", "reconciliation suspended in "+string(st.Phase))
		}
		st.Reason, st.Message = "Suspended", "suspended in "+string(st.Phase)
		return
	default:
		d.resume()
		if reset {
			d.reset()
		}
		genChanged := spec.Generation != st.ObservedGeneration
		fired := false
		if st.InstalledVersion != "" && spec.Version != st.InstalledVersion && spec.Version != st.FailedVersion && (genChanged || reset) {
			d.requested = !genChanged
			fired = d.fire(TriggerVersionChanged, d.requestMessage(TriggerVersionChanged))
			d.requested = false
		}
		if !fired && genChanged {
			// Also a new version under a table without a VersionChanged row.
			fired = d.fire(TriggerSpecChanged, d.requestMessage(TriggerSpecChanged))
		}
		if !fired && force {
			fired = d.fire(TriggerForceRequested, d.requestMessage(TriggerForceRequested))
		}
		if !fired && reset {
			fired = d.fire(TriggerResetRequested, d.requestMessage(TriggerResetRequested))
		}
		if !fired && st.ReapplyTime != nil && !d.in.Now.Before(st.ReapplyTime.Time) {
			d.fire(TriggerReapplyDue, "re-applying "+st.InstalledVersion+" after its re-apply failed")
		}
	}
	st.LastResetToken, st.LastForceToken = spec.ResetToken, spec.ForceToken
	st.ObservedGeneration = spec.Generation
	if p := st.PendingAction; st.Phase == PhaseDeleting && p != ActionUninstall && p != ActionNone {
		// Deleting only ever uninstalls, whatever a table row says.
		st.PendingAction, st.NextAttemptTime = ActionUninstall, nil
	}
	if st.PendingAction != ActionNone && st.Phase != PhaseChecking && d.pastDeadline() {
		d.expire()
	}
	if st.PendingAction != ActionNone && d.due() {
		d.take()
	}
}

// take starts the pending action: a mutating one is claimed. An install or
// upgrade is resolved again by what is installed (a status written by
// someone else may say otherwise): a re-apply is never a fresh install.
func (d *decider) take() {
	st := &d.st
	if a := st.PendingAction; a == ActionInstall || a == ActionUpgrade {
		e := resolve(st.Phase, a, st.InstalledVersion != "")
		if d.table.has(e.phase) && d.table.handles(e.phase, e.action) {
			st.Phase, st.PendingAction = e.phase, e.action
		}
	}
	a := st.PendingAction
	d.action = a
	st.NextAttemptTime = nil
	if !a.mutates() {
		return
	}
	st.LastAttemptTime = d.at(0)
	st.InFlight = &Claim{
		Action: a, Owner: d.owner(), From: st.InstalledVersion, To: d.target(a),
		Started: d.now, Expires: *d.at(d.rules.actionTimeout + ClaimGrace),
	}
}

func (d *decider) owner() string {
	if d.in.Owner == "" {
		return defaultOwner
	}
	return d.in.Owner
}

// target is the version action a applies.
func (d *decider) target(a Action) string {
	switch a {
	case ActionInstall, ActionUpgrade:
		return d.in.Spec.Version
	case ActionRollback:
		return d.st.LastGoodVersion
	case ActionTest:
		return d.st.InstalledVersion
	}
	return ""
}

// resume ends a suspension: the deadline moves on by the time suspended,
// never further than the phase's timeout from now.
func (d *decider) resume() {
	st := &d.st
	if st.SuspendedTime == nil {
		return
	}
	suspended := d.now.Sub(st.SuspendedTime.Time)
	if st.Deadline != nil {
		d.setDeadline(st.Deadline.Add(max(suspended, 0)))
	}
	st.SuspendedTime = nil
	st.Reason, st.Message = "Resumed", fmt.Sprintf("resumed in %s after %s", st.Phase, suspended)
	d.event(converge.EventTypeNormal, "Resumed", st.Message)
}

// reset clears what failures recorded against the retries (Flux's resetAt);
// the backoff step (Failures) stays, so requests are rate-limited too.
func (d *decider) reset() {
	st := &d.st
	st.InstallFailures, st.UpgradeFailures, st.UninstallFailures = 0, 0, 0
	st.FailedVersion, st.LastFailedAction = "", ActionNone
}

func (d *decider) requestMessage(t Trigger) string {
	spec := &d.in.Spec
	switch t {
	case TriggerResetRequested:
		return fmt.Sprintf("reset requested (token %q)", spec.ResetToken)
	case TriggerForceRequested:
		return fmt.Sprintf("force requested (token %q): re-applying %s", spec.ForceToken, spec.Version)
	case TriggerVersionChanged:
		return fmt.Sprintf("desired version %s, installed %s", spec.Version, d.st.InstalledVersion)
	}
	return fmt.Sprintf("generation %d, observed %d", spec.Generation, d.st.ObservedGeneration)
}

// deletionStopped reports a deletion stopped at its deadline: Deleting with
// nothing pending and nothing in flight.
func (d *decider) deletionStopped() bool {
	return d.st.Phase == PhaseDeleting && d.st.PendingAction == ActionNone && d.st.InFlight == nil
}

// pastDeadline reports whether the phase's deadline has passed.
func (d *decider) pastDeadline() bool {
	return d.st.Deadline != nil && !d.in.Now.Before(d.st.Deadline.Time)
}

// expire fires DeadlinePassed on a look past the phase deadline: the
// pending action did not succeed in time. An install or upgrade becomes the
// failed action, for remediation, and its version the failed one; a
// re-apply of the version last seen healthy fires ReapplyFailed instead. No
// counter moves: a failed attempt was counted when its outcome was recorded.
func (d *decider) expire() {
	a := d.st.PendingAction
	msg := fmt.Sprintf("%s: not done within %s in %s", d.describe(a, d.st.InstalledVersion, d.target(a)), d.rules.timeout(d.st.Phase), d.st.Phase)
	if d.reapplies(a, d.st.InstalledVersion, d.target(a)) && d.reapplyFailed(msg) {
		return
	}
	if _, ok := d.table.Next(d.st.Phase, TriggerDeadlinePassed); !ok {
		return
	}
	if a == ActionInstall || a == ActionUpgrade {
		d.st.LastFailedAction, d.st.FailedVersion = a, d.in.Spec.Version
	}
	d.fire(TriggerDeadlinePassed, msg)
}

func (d *decider) due() bool {
	return d.st.NextAttemptTime == nil || !d.in.Now.Before(d.st.NextAttemptTime.Time)
}

// record handles what the Driver returned for the action just run.
func (d *decider) record() {
	obs := &d.in.Observation
	st := &d.st
	if !d.staleSpec && st.Phase != PhaseDeleted {
		st.SeenGeneration = d.in.Spec.Generation
	}
	d.boundWaits()
	if obs.Action == ActionCheckHealth {
		if st.PendingAction == ActionCheckHealth && st.InFlight == nil && st.Phase != PhaseDeleted {
			d.recordHealth()
		}
		return
	}
	if !obs.Claim.same(st.InFlight) {
		d.event(converge.EventTypeWarning, "OutcomeDiscarded", fmt.Sprintf("outcome of %s by %s discarded: its claim no longer holds", obs.Action, obs.Claim.Owner))
		return
	}
	outcome := OutcomeSucceeded
	if obs.Err != nil {
		outcome = OutcomeFailed
	}
	revision := obs.Revision
	if len(revision) > MaxRevisionLength {
		revision = ""
	}
	d.outcome(st.InFlight, obs.Err, outcome, revision)
}

// outcome records how the claimed attempt c ended, with the driver's
// revision it returned.
func (d *decider) outcome(c *Claim, err error, o Outcome, revision string) {
	st := &d.st
	st.InFlight = nil
	d.remember(c, o, revision)
	if c.Action == ActionTest {
		d.recordTest(err)
		return
	}
	what := d.describe(c.Action, c.From, c.To)
	if err != nil {
		msg := what + " failed: " + d.redact(err.Error())
		if o == OutcomeLost {
			msg = what + " lost: " + err.Error()
		}
		reapply := d.reapplies(c.Action, c.From, c.To)
		switch c.Action {
		case ActionInstall, ActionUpgrade:
			reason := string(failureTrigger(c.Action))
			if reapply {
				reason = string(TriggerReapplyFailed)
			}
			d.setCond(TypeReleased, metav1.ConditionFalse, reason, msg)
		case ActionRollback:
			d.setCond(TypeRemediated, metav1.ConditionFalse, string(TriggerRollbackFailed), msg)
		case ActionUninstall:
			if st.Phase != PhaseDeleting {
				d.setCond(TypeRemediated, metav1.ConditionFalse, string(TriggerUninstallFailed), msg)
			}
		}
		d.fail(c.Action, c.To, reapply, msg)
		return
	}
	msg := what + " succeeded"
	switch c.Action {
	case ActionInstall, ActionUpgrade:
		st.InstalledVersion, st.InstalledRevision = c.To, revision
		d.setCond(TypeReleased, metav1.ConditionTrue, string(successTrigger(c.Action)), msg)
		d.removeCond(TypeRemediated)
		d.removeCond(TypeTestSuccess)
	case ActionRollback:
		st.InstalledVersion, st.InstalledRevision = c.To, revision
		d.setCond(TypeRemediated, metav1.ConditionTrue, string(TriggerRollbackSucceeded), msg)
	case ActionUninstall:
		st.InstalledVersion, st.InstalledRevision = "", ""
		st.UninstallFailures = 0
		if st.Phase != PhaseDeleting {
			d.setCond(TypeRemediated, metav1.ConditionTrue, string(TriggerUninstallSucceeded), msg)
		}
	}
	if !d.fire(successTrigger(c.Action), msg) {
		d.stay(ActionNone, msg)
	}
}

func (d *decider) redact(s string) string {
	if d.in.Redact != nil {
		return d.in.Redact(s)
	}
	return DefaultRedact(s)
}

// remember appends the attempt to the bounded history.
func (d *decider) remember(c *Claim, o Outcome, revision string) {
	limit := d.rules.historyLimit
	h := d.st.History
	if len(h) >= limit {
		h = h[len(h)-limit+1:]
	}
	out := make([]Attempt, len(h), len(h)+1)
	copy(out, h)
	d.st.History = append(out, Attempt{Action: c.Action, Version: cut(c.To, maxHistoryVersion), Revision: revision, Outcome: o, Started: c.Started, Finished: d.now})
}

// maxHistoryVersion bounds a version in Status.History, so a full history
// stays within 2 KiB.
const maxHistoryVersion = 63

// MaxRevisionLength bounds a driver's revision the engine records: a longer
// one is not recorded (a cut one would name another revision).
const MaxRevisionLength = 63

// describe names an action with its versions, for messages.
func (d *decider) describe(a Action, from, to string) string {
	switch a {
	case ActionInstall:
		return "install of " + to
	case ActionUpgrade:
		if from == to {
			return "re-apply of " + to
		}
		return "upgrade from " + from + " to " + to
	case ActionRollback:
		return "rollback from " + from + " to " + to
	case ActionUninstall:
		return "uninstall"
	case ActionTest:
		return "tests of " + to
	}
	return string(a)
}

func (d *decider) recordHealth() {
	obs := &d.in.Observation
	st := &d.st
	h := obs.Health
	if obs.Err != nil || (h != HealthHealthy && h != HealthUnhealthy) {
		h = HealthUnknown
	}
	was := st.Health
	st.Health = h
	if h != HealthUnknown {
		st.HealthUnknownSince = nil
	} else if st.HealthUnknownSince == nil && st.Phase == PhaseRunning {
		st.HealthUnknownSince = d.at(0)
	}
	switch {
	case h == HealthHealthy && st.Phase == PhaseChecking && d.rules.test.Enable && (st.Verifying == ActionInstall || st.Verifying == ActionUpgrade):
		d.stay(ActionTest, st.InstalledVersion+" is healthy; testing")
		return
	case h == HealthHealthy:
		if d.fire(TriggerHealthy, st.InstalledVersion+" is healthy") {
			return
		}
		if st.Phase == PhaseRunning {
			// A table may enter Running without a Healthy row: the
			// version serves, so it is the last good one.
			st.LastGoodVersion, st.LastGoodRevision = st.InstalledVersion, st.InstalledRevision
		}
		if was != HealthHealthy && st.Phase == PhaseRunning {
			st.Reason, st.Message = string(TriggerHealthy), st.InstalledVersion+" is healthy"
			d.event(converge.EventTypeNormal, string(TriggerHealthy), st.Message)
		}
	case st.Phase == PhaseChecking && d.pastDeadline():
		d.fail(st.Verifying, st.InstalledVersion, d.reapplies(st.Verifying, st.InstalledVersion, st.InstalledVersion),
			fmt.Sprintf("%s: not healthy within %s (health %s)", d.describeVerifying(), d.rules.checkTimeout, h))
		return
	case h == HealthUnhealthy && was != HealthUnhealthy:
		if d.fire(TriggerUnhealthy, st.InstalledVersion+" is unhealthy") {
			return
		}
	}
	msg := ""
	switch {
	case obs.Err != nil:
		msg = st.InstalledVersion + ": health unknown: " + d.redact(obs.Err.Error())
	case h != HealthHealthy && st.Phase == PhaseChecking:
		msg = "waiting for " + st.InstalledVersion + " to be healthy: health " + string(h)
	case was != h && st.Phase == PhaseRunning:
		msg = st.InstalledVersion + " health " + string(h)
	}
	if st.Phase == PhaseRunning && d.rules.drift != DriftIgnore && d.drift() {
		return
	}
	d.stay(ActionCheckHealth, msg)
}

// drift handles what a DriftDetector reported in Running; true when it
// moved the phase. A correction is a re-apply: none starts while a failed
// one waits out its backoff or once its retries ran out.
func (d *decider) drift() bool {
	obs := &d.in.Observation
	if !obs.Drifted {
		if obs.Err == nil {
			d.setCond(TypeDrifted, metav1.ConditionFalse, "NoDrift", "the cluster matches "+d.st.InstalledVersion)
		}
		return false
	}
	msg := "drift from " + d.st.InstalledVersion + ": " + d.redact(obs.DriftDetail)
	if d.rules.drift == DriftCorrect && d.st.ReapplyTime == nil && d.st.FailedVersion != d.st.InstalledVersion {
		d.setCond(TypeDrifted, metav1.ConditionTrue, string(TriggerDriftDetected), msg)
		return d.fire(TriggerDriftDetected, msg+"; correcting")
	}
	if !d.condIs(TypeDrifted, metav1.ConditionTrue) {
		d.event(converge.EventTypeWarning, string(TriggerDriftDetected), msg)
	}
	d.setCond(TypeDrifted, metav1.ConditionTrue, string(TriggerDriftDetected), msg)
	return false
}

// recordTest handles the outcome of the test step.
func (d *decider) recordTest(err error) {
	st := &d.st
	what := "tests of " + st.InstalledVersion
	if err == nil {
		d.setCond(TypeTestSuccess, metav1.ConditionTrue, "TestSucceeded", what+" passed")
		if !d.fire(TriggerHealthy, what+" passed") {
			d.stay(ActionCheckHealth, "")
		}
		return
	}
	msg := what + " failed: " + d.redact(err.Error())
	d.setCond(TypeTestSuccess, metav1.ConditionFalse, "TestFailed", msg)
	if d.rules.test.IgnoreFailures {
		if !d.fire(TriggerHealthy, msg+" (ignored)") {
			d.stay(ActionCheckHealth, "")
		}
		return
	}
	d.fail(st.Verifying, st.InstalledVersion, d.reapplies(st.Verifying, st.InstalledVersion, st.InstalledVersion), msg)
}

func (d *decider) describeVerifying() string {
	v := d.st.InstalledVersion
	switch d.st.Verifying {
	case ActionInstall:
		return "install of " + v
	case ActionUpgrade:
		return "upgrade to " + v
	case ActionRollback:
		return "rollback to " + v
	}
	return "recovery of " + v
}

// reapplies reports whether action a, from the installed version from to
// version to, re-applies the version last seen healthy: a failure of it is
// TriggerReapplyFailed, never remediated.
func (d *decider) reapplies(a Action, from, to string) bool {
	return a == ActionUpgrade && to != "" && from == to && to == d.st.LastGoodVersion
}

// fail counts a failure of action a, applying version (reapply: the
// installed version, last seen healthy, again), and fires the trigger it
// means.
func (d *decider) fail(a Action, version string, reapply bool, msg string) {
	st := &d.st
	t := failureTrigger(a)
	st.Failures = satInc(st.Failures)
	switch a {
	case ActionInstall:
		st.InstallFailures = satInc(st.InstallFailures)
		st.LastFailedAction, st.FailedVersion = ActionInstall, version
		if d.rules.exhausted(st.InstallFailures) {
			t = TriggerRetriesExhausted
		}
	case ActionUpgrade:
		st.UpgradeFailures = satInc(st.UpgradeFailures)
		st.LastFailedAction = ActionUpgrade
		if reapply {
			if d.rules.exhausted(st.UpgradeFailures) {
				st.FailedVersion = version
				msg = fmt.Sprintf("%s; retried %d times", msg, d.rules.maxRetries)
			}
			if !d.reapplyFailed(msg) {
				d.stay(a, msg)
			}
			return
		}
		st.FailedVersion = version
		if d.rules.exhausted(st.UpgradeFailures) {
			t = TriggerRetriesExhausted
		}
	case ActionUninstall:
		st.UninstallFailures = satInc(st.UninstallFailures)
	}
	if t == TriggerRetriesExhausted {
		msg = fmt.Sprintf("%s; retried %d times", msg, d.rules.maxRetries)
	} else if _, ok := d.table.Next(st.Phase, TriggerDeadlinePassed); ok && st.Phase != PhaseChecking && d.pastDeadline() {
		t = TriggerDeadlinePassed
		msg = fmt.Sprintf("%s; not done within %s in %s", msg, d.rules.timeout(st.Phase), st.Phase)
	}
	if d.fire(t, msg) {
		return
	}
	if t == TriggerRetriesExhausted {
		// No row for it here: stop retrying rather than exceed the policy.
		st.Reason = string(t)
		a = ActionNone
	}
	d.stay(a, msg)
}

// reapplyFailed fires TriggerReapplyFailed: the installed version still
// runs, so it is watched while the re-apply waits out its backoff in the
// phase the row enters (Status.ReapplyTime), unless its retries ran out
// (FailedVersion). False when the phase has no row for it.
func (d *decider) reapplyFailed(msg string) bool {
	st := &d.st
	if st.FailedVersion != st.InstalledVersion {
		msg += "; " + st.InstalledVersion + " still runs"
	} else {
		msg += "; " + st.InstalledVersion + " still runs and is not re-applied until the spec changes or a force request arrives"
	}
	if !d.fire(TriggerReapplyFailed, msg) {
		return false
	}
	if _, ok := d.table.Next(st.Phase, TriggerReapplyDue); ok && st.FailedVersion != st.InstalledVersion {
		st.ReapplyTime = d.at(d.rules.backoff.Delay(st.Failures, d.in.Jitter))
	}
	return true
}

func satInc(n int32) int32 {
	if n == 1<<31-1 {
		return n
	}
	return n + 1
}

// stay keeps the phase: the next pending action is next (ActionNone: none).
func (d *decider) stay(next Action, msg string) {
	if next == ActionNone && d.in.Observation.Action == ActionCheckHealth {
		next = ActionCheckHealth
	}
	d.st.PendingAction = next
	d.st.NextAttemptTime = d.schedule(next, "")
	if msg != "" {
		d.st.Message = conditions.TruncateMessage(msg, maxMessage)
	}
}

// fire looks trigger t up in the table from the current phase and, if a row
// exists, makes the transition and returns true.
func (d *decider) fire(t Trigger, msg string) bool {
	row, ok := d.table.Next(d.st.Phase, t)
	if !ok {
		return false
	}
	st := &d.st
	from := st.Phase
	switch t {
	case TriggerSpecChanged, TriggerVersionChanged:
		st.InstallFailures, st.UpgradeFailures, st.UninstallFailures = 0, 0, 0
		st.FailedVersion, st.LastFailedAction = "", ActionNone
		if !d.requested {
			st.Failures = 0
		}
	case TriggerResetRequested, TriggerForceRequested:
		st.FailedVersion, st.LastFailedAction = "", ActionNone
	case TriggerDeletionRequested:
		st.UninstallFailures, st.Failures = 0, 0
	case TriggerHealthy:
		if st.Verifying == ActionInstall || st.Verifying == ActionUpgrade {
			// The desired version serves: the failures behind it are over.
			st.InstallFailures, st.UpgradeFailures, st.Failures = 0, 0, 0
			st.LastFailedAction = ActionNone
		}
		st.LastGoodVersion, st.LastGoodRevision = st.InstalledVersion, st.InstalledRevision
		if st.FailedVersion == st.InstalledVersion {
			st.FailedVersion = ""
		}
	}
	to, next := row.To, row.Action
	if next == ActionRemediate {
		failed := st.LastFailedAction
		if failed != ActionInstall && failed != ActionUpgrade {
			// Nothing recorded what failed (a foreign status): what was
			// being applied, as what is installed says.
			failed = resolve(to, ActionInstall, st.InstalledVersion != "").action
		}
		next = d.rules.remediation(failed, to, t == TriggerRetriesExhausted)
	}
	if next == ActionInstall || next == ActionUpgrade {
		e := resolve(to, next, st.InstalledVersion != "")
		to, next = e.phase, e.action
	}
	reason := string(t)
	if next == ActionRollback {
		if stop := d.rollbackProblem(); stop != "" && d.table.has(PhaseFailed) {
			// The reason goes first: a long failure text is cut at the end.
			reason = stop
			msg = "not rolling back: " + d.rollbackProblemMessage(stop) + "; " + msg
			to, next = PhaseFailed, ActionNone
		}
	}
	st.Verifying = ActionNone
	if to == PhaseChecking {
		st.Verifying = verifies(t)
	}
	if to != PhaseRunning || t == TriggerReapplyDue {
		st.ReapplyTime = nil
	}
	st.Phase = to
	if from != to || restartsPhase(t) {
		st.LastTransitionTime = d.now
		st.Deadline = nil
		if to.waits() {
			st.Deadline = d.at(d.rules.timeout(to))
		}
	}
	st.PendingAction = next
	st.NextAttemptTime = d.schedule(next, t)
	msg = conditions.TruncateMessage(msg, maxMessage)
	st.Reason, st.Message = reason, msg
	typ := converge.EventTypeNormal
	if isWarning(t) || reason != string(t) {
		typ = converge.EventTypeWarning
	}
	text := string(from) + " -> " + string(to) + ": " + msg
	if next != ActionNone {
		text += "; next: " + string(next)
	}
	d.event(typ, reason, text)
	return true
}

// The reasons of a rollback that is not attempted.
const (
	ReasonRollbackTargetMissing  = "RollbackTargetMissing"
	ReasonRollbackTargetUnusable = "RollbackTargetUnusable"
)

// rollbackProblem checks the rollback target: missing when no version was
// ever healthy, unusable when it is the version that just failed.
func (d *decider) rollbackProblem() string {
	switch {
	case d.st.LastGoodVersion == "":
		return ReasonRollbackTargetMissing
	case d.st.LastGoodVersion == d.st.FailedVersion:
		return ReasonRollbackTargetUnusable
	}
	return ""
}

func (d *decider) rollbackProblemMessage(reason string) string {
	if reason == ReasonRollbackTargetMissing {
		return "no version was ever healthy"
	}
	return "the last good version " + d.st.LastGoodVersion + " is the version that failed"
}

// restartsPhase reports whether trigger t, even when its row stays in the
// same phase, starts the phase over, with a new deadline: a request from the
// spec, a deletion, or a deadline that passed.
func restartsPhase(t Trigger) bool {
	return t.request() || t == TriggerDeletionRequested || t == TriggerDeadlinePassed || t == TriggerDriftDetected
}

func isWarning(t Trigger) bool {
	switch t {
	case TriggerInstallFailed, TriggerUnhealthy, TriggerDeadlinePassed, TriggerUpgradeFailed, TriggerRollbackFailed,
		TriggerUninstallFailed, TriggerRetriesExhausted, TriggerDriftDetected, TriggerReapplyFailed:
		return true
	}
	return false
}

// schedule returns when action a, entered by trigger t ("" when the phase
// stays), becomes due: a retry of a failed action after its backoff, a
// request after the backoff of the failures before it but one, a health
// check after a health check at the phase's poll interval, anything else at
// once (a re-apply whose backoff is over too); never past the phase
// deadline or a re-apply owed.
func (d *decider) schedule(a Action, t Trigger) *metav1.Time {
	st := &d.st
	var wait time.Duration
	switch {
	case a == ActionNone || a == ActionTest || t == TriggerReapplyDue:
		return nil
	case (t == TriggerResetRequested || t == TriggerForceRequested || d.requested) && a.mutates():
		if st.Failures <= 1 || st.LastAttemptTime == nil {
			return nil
		}
		backoff := d.rules.backoff.Delay(st.Failures-1, d.in.Jitter)
		wait = min(st.LastAttemptTime.Add(backoff).Sub(d.now.Time), backoff)
	case a == ActionInstall && st.InstallFailures > 0, a == ActionUpgrade && st.UpgradeFailures > 0,
		a == ActionUninstall && st.UninstallFailures > 0:
		wait = d.rules.backoff.Delay(st.Failures, d.in.Jitter)
	case a == ActionCheckHealth && d.in.Observation.Action == ActionCheckHealth:
		wait = d.rules.runningInterval
		if st.Phase == PhaseChecking {
			wait = d.rules.checkInterval
		}
	default:
		return nil
	}
	for _, until := range [...]*metav1.Time{st.Deadline, st.ReapplyTime} {
		if until != nil {
			wait = min(wait, until.Sub(d.now.Time))
		}
	}
	if wait <= 0 {
		return nil
	}
	return d.at(wait)
}

func (d *decider) decision() Decision {
	out := Decision{Status: d.st, Action: d.action, Events: d.events}
	st := &d.st
	switch {
	case st.Phase == PhaseDeleted:
		out.Deleted = true
	case d.action != ActionNone:
	case d.waitUntil != nil:
		out.RequeueAfter = max(d.waitUntil.Sub(d.now.Time), RequeueNow)
	case d.stale:
		out.RequeueAfter = d.rules.checkInterval
	case st.SuspendedTime != nil && !d.in.Spec.Deleting, st.PendingAction == ActionNone:
	case d.due():
		out.RequeueAfter = RequeueNow
	default:
		out.RequeueAfter = max(st.NextAttemptTime.Sub(d.now.Time), RequeueNow)
	}
	return out
}

// cut returns s cut to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
