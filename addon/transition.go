package addon

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

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
	d.clearFor(t)
	to, next := d.entry(row, t)
	reason := string(t)
	if next == ActionRollback {
		if stop := d.rollbackProblem(); stop != "" && d.table.has(PhaseFailed) {
			// The reason goes first: a long failure text is cut at the end.
			reason = stop
			msg = "not rolling back: " + d.rollbackProblemMessage(stop) + "; " + msg
			to, next = PhaseFailed, ActionNone
		}
	}
	d.enter(from, to, next, t)
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

// clearFor clears what trigger t ends: a new spec, the failures and lost
// attempts of the previous desire (a reset request keeps the backoff
// step); a reset or force request, the failed version and the lost
// attempts; a deletion, the failures and lost attempts before it;
// a healthy version, the failures behind it, and it becomes the last good
// one.
func (d *decider) clearFor(t Trigger) {
	st := &d.st
	switch t {
	case TriggerSpecChanged, TriggerVersionChanged:
		st.InstallFailures, st.UpgradeFailures, st.UninstallFailures, st.LostAttempts = 0, 0, 0, 0
		st.FailedVersion, st.LastFailedAction = "", ActionNone
		if !d.requested {
			st.Failures = 0
		}
	case TriggerResetRequested, TriggerForceRequested:
		st.FailedVersion, st.LastFailedAction, st.LostAttempts = "", ActionNone, 0
	case TriggerDeletionRequested:
		st.UninstallFailures, st.Failures, st.LostAttempts = 0, 0, 0
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
}

// entry is the phase row enters and the action that runs there, entered by
// trigger t: ActionRemediate resolved by the policy for the action that
// failed, an install or upgrade by what is installed (see Row).
func (d *decider) entry(row Row, t Trigger) (Phase, Action) {
	st := &d.st
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
	return to, next
}

// enter moves the status from phase from into phase to, entered by trigger
// t, with next pending: what Checking verifies, the version an upgrade
// restores (the installed one, after drift or a failed re-apply), the
// re-apply owed (kept only in Running, and not once it is due), and a new
// deadline when the phase changes or t starts it over.
func (d *decider) enter(from, to Phase, next Action, t Trigger) {
	st := &d.st
	st.Verifying = ActionNone
	if to == PhaseChecking {
		st.Verifying = verifies(t)
	}
	st.RestoreVersion = ""
	if next == ActionUpgrade && (t == TriggerDriftDetected || t == TriggerReapplyDue) {
		st.RestoreVersion = st.InstalledVersion
	}
	if to != PhaseRunning || t == TriggerReapplyDue {
		st.ReapplyTime = nil
	}
	st.Phase = to
	if from != to || restartsPhase(t) {
		st.LastTransitionTime = d.now
		st.Deadline = nil
		if st.HeldSince != nil {
			// The new deadline counts from now: time held before it is
			// not owed to it.
			st.HeldSince = d.at(0)
		}
		if to.waits() {
			st.Deadline = d.at(d.rules.timeout(to))
		}
	}
	st.PendingAction = next
	st.NextAttemptTime = d.schedule(next, t)
}

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
	return d.within(wait)
}

// within returns when a wait from now ends, never past the phase deadline
// or a re-apply owed; nil when that is now.
func (d *decider) within(wait time.Duration) *metav1.Time {
	for _, until := range [...]*metav1.Time{d.st.Deadline, d.st.ReapplyTime} {
		if until != nil {
			wait = min(wait, until.Sub(d.now.Time))
		}
	}
	if wait <= 0 {
		return nil
	}
	return d.at(wait)
}
