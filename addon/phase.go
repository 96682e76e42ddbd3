package addon

// Phase is where an add-on is in its lifecycle. The phase, with the rest of
// Status, is all the engine needs to continue after a restart.
type Phase string

// The phases of the default table.
const (
	// PhaseInitializing installs the add-on for the first time within
	// Policy.InstallTimeout. Nothing is installed in it: once something is,
	// a re-apply is an upgrade and runs in PhaseUpgrading.
	PhaseInitializing Phase = "Initializing"
	// PhaseReinitializing remediates a failed install (uninstall, by default)
	// and retries it after a backoff, until MaxRetries or, counted from
	// entering it, Policy.InstallTimeout runs out.
	PhaseReinitializing Phase = "Reinitializing"
	// PhaseChecking polls the health of what an install, upgrade or
	// rollback applied until it is healthy (and, with Policy.Test, its tests
	// pass) or the check deadline passes.
	PhaseChecking Phase = "Checking"
	// PhaseRunning watches a healthy add-on at a slow interval, and for
	// drift when the policy asks. An unhealthy read keeps it in Running,
	// Degraded: nothing that once was healthy is removed for it.
	PhaseRunning Phase = "Running"
	// PhaseUpgrading re-applies the desired version onto the installed one
	// (a new version, a new spec at the same version, a forced retry, a
	// drift correction) within Policy.UpgradeTimeout.
	PhaseUpgrading Phase = "Upgrading"
	// PhaseRemediating remediates a failed upgrade: it rolls back to the last
	// good version (the default), uninstalls, or retries the upgrade after a
	// backoff, as the Policy says, within Policy.RemediationTimeout.
	PhaseRemediating Phase = "Remediating"
	// PhaseFailed runs nothing. It is left when the spec changes, when a
	// reset or force is requested, or when deletion is requested.
	PhaseFailed Phase = "Failed"
	// PhaseDeleting uninstalls the add-on, retrying with backoff until it
	// succeeds or Policy.DeleteTimeout passes. Then it stops (Stalled; the
	// host keeps its finalizer) until a reset or force is requested.
	PhaseDeleting Phase = "Deleting"
	// PhaseDeleted is the only terminal phase: the add-on is uninstalled and
	// the host may drop its finalizer.
	PhaseDeleted Phase = "Deleted"
)

var allPhases = [...]Phase{
	PhaseInitializing, PhaseReinitializing, PhaseChecking, PhaseRunning, PhaseUpgrading,
	PhaseRemediating, PhaseFailed, PhaseDeleting, PhaseDeleted,
}

// known reports whether p is one of the phases above.
func (p Phase) known() bool {
	for _, k := range allPhases {
		if p == k {
			return true
		}
	}
	return false
}

// waits reports whether phase p waits for something and so has a deadline.
func (p Phase) waits() bool {
	switch p {
	case PhaseInitializing, PhaseReinitializing, PhaseChecking, PhaseUpgrading, PhaseRemediating, PhaseDeleting:
		return true
	}
	return false
}

// Trigger is what an observation means for the add-on: the input of the
// transition table. Decide derives at most one trigger per step and looks it
// up in the Table. (A Kubernetes event is an Event; a Trigger is not one.)
type Trigger string

// The triggers Decide derives.
const (
	// TriggerInstallSucceeded: the install action returned without error.
	TriggerInstallSucceeded Trigger = "InstallSucceeded"
	// TriggerInstallFailed: the install action failed, its tests failed, or
	// the installed version did not become healthy before the check deadline.
	TriggerInstallFailed Trigger = "InstallFailed"
	// TriggerHealthy: a health check reported the add-on healthy (and its
	// tests, when the policy runs them, passed).
	TriggerHealthy Trigger = "Healthy"
	// TriggerUnhealthy: a health check reported the add-on unhealthy.
	TriggerUnhealthy Trigger = "Unhealthy"
	// TriggerDeadlinePassed: the phase's deadline passed before its pending
	// action succeeded.
	TriggerDeadlinePassed Trigger = "DeadlinePassed"
	// TriggerVersionChanged: a new spec generation asks for a version other
	// than the installed one.
	TriggerVersionChanged Trigger = "VersionChanged"
	// TriggerUpgradeSucceeded: the upgrade action returned without error. The
	// upgrade is not done yet: Checking must see the new version healthy.
	TriggerUpgradeSucceeded Trigger = "UpgradeSucceeded"
	// TriggerUpgradeFailed: the upgrade action failed, its tests failed, or
	// the new version did not become healthy before the check deadline.
	TriggerUpgradeFailed Trigger = "UpgradeFailed"
	// TriggerRollbackSucceeded: the rollback action returned without error.
	TriggerRollbackSucceeded Trigger = "RollbackSucceeded"
	// TriggerRollbackFailed: the rollback failed, or the rolled-back version
	// did not become healthy before the check deadline.
	TriggerRollbackFailed Trigger = "RollbackFailed"
	// TriggerUninstallSucceeded: the uninstall action returned without error.
	TriggerUninstallSucceeded Trigger = "UninstallSucceeded"
	// TriggerUninstallFailed: the uninstall action failed.
	TriggerUninstallFailed Trigger = "UninstallFailed"
	// TriggerRetriesExhausted: an install or upgrade failed once more than
	// Policy.MaxRetries allows.
	TriggerRetriesExhausted Trigger = "RetriesExhausted"
	// TriggerDeletionRequested: the object is being deleted.
	TriggerDeletionRequested Trigger = "DeletionRequested"
	// TriggerSpecChanged: a new spec generation with the installed version,
	// or with nothing installed yet.
	TriggerSpecChanged Trigger = "SpecChanged"
	// TriggerResetRequested: the spec carries a new Spec.ResetToken; the
	// failure counters and the failed version were cleared (Flux's
	// reconcile.fluxcd.io/resetAt).
	TriggerResetRequested Trigger = "ResetRequested"
	// TriggerForceRequested: the spec carries a new Spec.ForceToken: re-apply
	// now, once (Flux's reconcile.fluxcd.io/forceAt).
	TriggerForceRequested Trigger = "ForceRequested"
	// TriggerDriftDetected: the Driver reported that the cluster drifted from
	// what the add-on applied, and Policy.Drift is DriftCorrect.
	TriggerDriftDetected Trigger = "DriftDetected"
	// TriggerReapplyFailed: a re-apply of the installed version, last seen
	// healthy (a new spec at the same version, a forced retry, a drift
	// correction), failed, did not become healthy or failed its tests. The
	// version still runs: the re-apply is retried after the backoff, under
	// Policy.MaxRetries, and never remediated.
	TriggerReapplyFailed Trigger = "ReapplyFailed"
	// TriggerReapplyDue: the backoff after a failed re-apply is over
	// (Status.ReapplyTime).
	TriggerReapplyDue Trigger = "ReapplyDue"
)

var allTriggers = [...]Trigger{
	TriggerInstallSucceeded, TriggerInstallFailed, TriggerHealthy, TriggerUnhealthy, TriggerDeadlinePassed,
	TriggerVersionChanged, TriggerUpgradeSucceeded, TriggerUpgradeFailed, TriggerRollbackSucceeded,
	TriggerRollbackFailed, TriggerUninstallSucceeded, TriggerUninstallFailed, TriggerRetriesExhausted,
	TriggerDeletionRequested, TriggerSpecChanged, TriggerResetRequested, TriggerForceRequested,
	TriggerDriftDetected, TriggerReapplyFailed, TriggerReapplyDue,
}

// known reports whether t is one of the triggers above.
func (t Trigger) known() bool {
	for _, k := range allTriggers {
		if t == k {
			return true
		}
	}
	return false
}

// request reports whether t is a request from the spec: it clears what the
// failures of the previous desire recorded and restarts the phase.
func (t Trigger) request() bool {
	switch t {
	case TriggerSpecChanged, TriggerVersionChanged, TriggerResetRequested, TriggerForceRequested:
		return true
	}
	return false
}

// Action is the one thing the Machine asks the Driver to do in a step.
type Action string

// The actions.
const (
	// ActionNone does nothing.
	ActionNone Action = ""
	// ActionInstall installs the desired version. Decide never chooses it
	// while a version is installed: a re-apply is an ActionUpgrade.
	ActionInstall Action = "Install"
	// ActionUpgrade applies the desired version onto the installed one (the
	// same version too: a new spec, a forced retry, a drift correction).
	ActionUpgrade Action = "Upgrade"
	// ActionRollback applies the last good version onto the installed one.
	ActionRollback Action = "Rollback"
	// ActionUninstall removes the add-on.
	ActionUninstall Action = "Uninstall"
	// ActionCheckHealth reads the add-on's health (and drift, when the
	// policy asks).
	ActionCheckHealth Action = "CheckHealth"
	// ActionTest runs the add-on's tests after a healthy install or upgrade
	// (Policy.Test).
	ActionTest Action = "Test"
	// ActionInspect asks the Driver's Inspector what the cluster runs. Decide
	// chooses it on its own, never from a Table row and never as
	// Status.PendingAction: on the look that takes over an expired claim,
	// after an outcome that arrived under a claim no longer held, and beside
	// the health reads while Status.Mismatch stands (see Inspector).
	ActionInspect Action = "Inspect"
	// ActionRemediate is only valid in a Table row: it stands for the
	// remediation the Policy chooses for the action that last failed
	// (uninstall or nothing after an install; rollback, uninstall or nothing
	// after an upgrade). "Nothing" means: retry the failed action after the
	// backoff, unless the row enters PhaseFailed.
	ActionRemediate Action = "Remediate"
)

// known reports whether a is one of the actions above.
func (a Action) known() bool {
	switch a {
	case ActionNone, ActionInstall, ActionUpgrade, ActionRollback, ActionUninstall, ActionCheckHealth, ActionTest, ActionRemediate, ActionInspect:
		return true
	}
	return false
}

// pendable reports whether a may stand in a status (PendingAction,
// Verifying, LastFailedAction): a known action that is neither a table's
// ActionRemediate nor the engine's own ActionInspect.
func (a Action) pendable() bool {
	return a.known() && a != ActionRemediate && a != ActionInspect
}

// mutates reports whether a changes the cluster: such an action runs under
// a claim (Status.InFlight), so only one runs at a time.
func (a Action) mutates() bool {
	switch a {
	case ActionInstall, ActionUpgrade, ActionRollback, ActionUninstall, ActionTest:
		return true
	}
	return false
}

// Health is what a health check reports.
type Health string

// The health values.
const (
	// HealthUnknown: the health could not be read (a transient error). It
	// never moves the phase by itself; in Running, after
	// Policy.HealthUnknownTimeout, Ready becomes Unknown.
	HealthUnknown Health = "Unknown"
	// HealthHealthy: the add-on serves.
	HealthHealthy Health = "Healthy"
	// HealthUnhealthy: the add-on exists but does not serve.
	HealthUnhealthy Health = "Unhealthy"
)

// Outcome is how an attempt in Status.History ended.
type Outcome string

// The outcomes.
const (
	// OutcomeSucceeded: the action returned without error.
	OutcomeSucceeded Outcome = "Succeeded"
	// OutcomeFailed: the action returned an error.
	OutcomeFailed Outcome = "Failed"
	// OutcomeLost: the claim expired before its owner recorded an outcome
	// (the process crashed, shut down, lost its writes or paused past the
	// claim). It is retried after the backoff and counts as a failure only
	// beyond Policy.MaxLostRetries lost attempts in a row (see Status.LostAttempts).
	OutcomeLost Outcome = "Lost"
)
