package addon

import (
	"fmt"

	"github.com/converge-dev/converge"
)

// look handles a fresh reconcile: the spec's generation, the stored waits,
// claims (claim.go), the spec's triggers, then the pending action.
func (d *decider) look() {
	st := &d.st
	spec := &d.in.Spec
	if st.Phase == PhaseDeleted {
		return
	}
	if d.staleSpec {
		d.stale = true
		d.event(converge.EventTypeWarning, ReasonStaleGeneration, fmt.Sprintf("ignored spec generation %d: generation %d was already seen",
			spec.Generation, max(st.SeenGeneration, st.ObservedGeneration)))
		return
	}
	st.SeenGeneration = spec.Generation
	d.boundWaits()
	if d.claimHolds() {
		return
	}
	reset := spec.ResetToken != "" && spec.ResetToken != st.LastResetToken
	if reset {
		d.reset()
	}
	if spec.Deleting {
		d.requestDeletion(reset)
	} else {
		d.requestChanges(reset)
	}
	st.LastResetToken, st.LastForceToken = spec.ResetToken, spec.ForceToken
	st.ObservedGeneration = spec.Generation
	d.takeDue()
}

// forced reports a new force request.
func (d *decider) forced() bool {
	return d.in.Spec.ForceToken != "" && d.in.Spec.ForceToken != d.st.LastForceToken
}

// requestDeletion fires what a deletion asks: DeletionRequested once, then,
// in Deleting, a reset or force request (which restarts a deletion stopped
// at its deadline).
func (d *decider) requestDeletion(reset bool) {
	switch {
	case d.st.Phase != PhaseDeleting:
		d.fire(TriggerDeletionRequested, "deletion requested")
	case reset:
		d.fire(TriggerResetRequested, d.requestMessage(TriggerResetRequested))
	case d.forced():
		d.fire(TriggerForceRequested, d.requestMessage(TriggerForceRequested))
	}
}

// requestChanges fires the first of what the spec asks that has a row: a
// new version (under a new generation, or a reset), a new spec, a force or
// a reset request; else a re-apply whose backoff is over.
func (d *decider) requestChanges(reset bool) {
	st := &d.st
	spec := &d.in.Spec
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
	if !fired && d.forced() {
		fired = d.fire(TriggerForceRequested, d.requestMessage(TriggerForceRequested))
	}
	if !fired && reset {
		fired = d.fire(TriggerResetRequested, d.requestMessage(TriggerResetRequested))
	}
	if !fired && st.ReapplyTime != nil && !d.in.Now.Before(st.ReapplyTime.Time) {
		d.fire(TriggerReapplyDue, "re-applying "+st.InstalledVersion+" after its re-apply failed")
	}
}

// takeDue ends a phase whose deadline passed, unless the retry of a lost
// attempt is pending (a lost attempt fails nothing, the deadline neither),
// and takes the pending action once it is due. Deleting only ever
// uninstalls, whatever a table row says. A pause or closed windows hold
// the gated actions: neither their deadline passes nor they start.
func (d *decider) takeDue() {
	st := &d.st
	if p := st.PendingAction; st.Phase == PhaseDeleting && p != ActionUninstall && p != ActionNone {
		st.PendingAction, st.NextAttemptTime = ActionUninstall, nil
	}
	if d.held() {
		return
	}
	d.lift()
	if st.PendingAction != ActionNone && st.Phase != PhaseChecking && d.pastDeadline() && !d.lostRetryPending() {
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
	d.claim(a)
}

// target is the version action a applies: the spec's for an install or
// upgrade, but the installed one when the upgrade restores it
// (Status.RestoreVersion).
func (d *decider) target(a Action) string {
	switch a {
	case ActionInstall, ActionUpgrade:
		if d.st.RestoreVersion != "" {
			return d.st.RestoreVersion
		}
		return d.in.Spec.Version
	case ActionRollback:
		return d.st.LastGoodVersion
	case ActionTest:
		return d.st.InstalledVersion
	}
	return ""
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
