package addon

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

// record handles what the Driver returned for the action just run.
func (d *decider) record() {
	obs := &d.in.Observation
	st := &d.st
	if !d.staleSpec && st.Phase != PhaseDeleted {
		st.SeenGeneration = d.in.Spec.Generation
	}
	d.boundWaits()
	switch obs.Action {
	case ActionCheckHealth:
		if st.PendingAction == ActionCheckHealth && st.InFlight == nil && st.Phase != PhaseDeleted {
			d.recordHealth()
		}
		return
	case ActionInspect:
		d.recordInspection()
		return
	}
	if !obs.Claim.same(st.InFlight) {
		d.discard()
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
	st.LostAttempts = 0
	d.outcome(st.InFlight, obs.Err, outcome, revision, "")
}

// discard drops an outcome that arrived under a claim the status no longer
// holds (fenced): a replica that paused past its claim, or whose claim was
// taken over, ran its action late. The action may have changed the
// cluster, so with an Inspector the engine asks what it runs now.
func (d *decider) discard() {
	obs := &d.in.Observation
	msg := fmt.Sprintf("outcome of %s by %s (fence %d) discarded: its claim no longer holds", obs.Action, obs.Claim.Owner, obs.Claim.Fence)
	if d.in.Inspect && obs.Action != ActionTest && d.st.Phase != PhaseDeleted {
		d.action = ActionInspect
		msg += "; asking what the cluster runs"
	}
	d.event(converge.EventTypeWarning, ReasonOutcomeDiscarded, msg)
}

// outcome records how the claimed attempt c ended, with the driver's
// revision it returned; note ends the message of a success.
func (d *decider) outcome(c *Claim, err error, o Outcome, revision, note string) {
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
	msg := what + " succeeded" + note
	st.Mismatch = nil
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
	d.st.History = append(out, Attempt{Action: c.Action, Version: cut(c.To, maxHistoryVersion), Revision: revision, Outcome: o, Started: c.Started, Finished: d.now, Fence: c.Fence})
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
	if obs.Installed != nil && st.Mismatch != nil && d.inspected(*obs.Installed) {
		d.reportMismatch()
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
	if st.Phase == PhaseRunning && d.drift() {
		return
	}
	d.stay(ActionCheckHealth, msg)
}

// drift handles, in Running, a mismatch the Inspector reported and what a
// DriftDetector reported; true when it moved the phase (see correct).
func (d *decider) drift() bool {
	if d.st.Mismatch != nil && d.correct(d.mismatchMessage()) {
		return true
	}
	obs := &d.in.Observation
	if d.rules.drift == DriftIgnore {
		return false
	}
	if !obs.Drifted {
		if obs.Err == nil {
			d.setCond(TypeDrifted, metav1.ConditionFalse, ReasonNoDrift, "the cluster matches "+d.st.InstalledVersion)
		}
		return false
	}
	msg := "drift from " + d.st.InstalledVersion + ": " + d.redact(obs.DriftDetail)
	if d.correctable() {
		d.setCond(TypeDrifted, metav1.ConditionTrue, string(TriggerDriftDetected), msg)
		return d.correct(msg)
	}
	if !d.condIs(TypeDrifted, metav1.ConditionTrue) {
		d.event(converge.EventTypeWarning, string(TriggerDriftDetected), msg)
	}
	d.setCond(TypeDrifted, metav1.ConditionTrue, string(TriggerDriftDetected), msg)
	return false
}

// correctable reports whether a drift correction may start: the policy
// corrects, and no failed re-apply of the installed version waits out its
// backoff or ran out of retries.
func (d *decider) correctable() bool {
	st := &d.st
	return d.rules.drift == DriftCorrect && st.InstalledVersion != "" && st.ReapplyTime == nil && st.FailedVersion != st.InstalledVersion
}

// correct fires DriftDetected when a correction may start: an upgrade that
// restores what is installed (Status.RestoreVersion), never the spec's
// version, which may be the one that failed. True when it fired.
func (d *decider) correct(msg string) bool {
	return d.correctable() && d.fire(TriggerDriftDetected, msg+"; restoring "+d.st.InstalledVersion)
}

// recordTest handles the outcome of the test step.
func (d *decider) recordTest(err error) {
	st := &d.st
	what := "tests of " + st.InstalledVersion
	if err == nil {
		d.setCond(TypeTestSuccess, metav1.ConditionTrue, ReasonTestSucceeded, what+" passed")
		if !d.fire(TriggerHealthy, what+" passed") {
			d.stay(ActionCheckHealth, "")
		}
		return
	}
	msg := what + " failed: " + d.redact(err.Error())
	d.setCond(TypeTestSuccess, metav1.ConditionFalse, ReasonTestFailed, msg)
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
