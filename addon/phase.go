package addon

// Phase is where an add-on is in its lifecycle. The phase, with the rest of
// Status, is all the engine needs to continue after a restart.
type Phase string

// The phases of the default table.
const (
	// PhaseInitializing installs the add-on for the first time, or re-applies
	// it after a spec change, within Policy.InstallTimeout.
	PhaseInitializing Phase = "Initializing"
	// PhaseReinitializing remediates a failed install (uninstall, by default)
	// and retries it after a backoff, until MaxRetries or, counted from
	// entering it, Policy.InstallTimeout runs out.
	PhaseReinitializing Phase = "Reinitializing"
	// PhaseChecking polls the add-on's health until it is healthy or the
	// check deadline passes.
	PhaseChecking Phase = "Checking"
	// PhaseRunning watches a healthy add-on at a slow interval.
	PhaseRunning Phase = "Running"
	// PhaseUpgrading moves the installed version to the desired one, within
	// Policy.UpgradeTimeout.
	PhaseUpgrading Phase = "Upgrading"
	// PhaseRemediating remediates a failed upgrade: it rolls back to the last
	// good version (the default), uninstalls, or retries the upgrade after a
	// backoff, as the Policy says, within Policy.RemediationTimeout.
	PhaseRemediating Phase = "Remediating"
	// PhaseFailed runs nothing. It is left when the spec changes, when a retry
	// is requested, or when deletion is requested.
	PhaseFailed Phase = "Failed"
	// PhaseDeleting uninstalls the add-on, retrying with backoff until it
	// succeeds or Policy.DeleteTimeout passes. Then it stops (Stalled; the
	// host keeps its finalizer) until a retry is requested.
	PhaseDeleting Phase = "Deleting"
	// PhaseDeleted is the only terminal phase: the add-on is uninstalled and
	// the host may drop its finalizer.
	PhaseDeleted Phase = "Deleted"
)

var allPhases = [...]Phase{
	PhaseInitializing, PhaseReinitializing, PhaseChecking, PhaseRunning, PhaseUpgrading,
	PhaseRemediating, PhaseFailed, PhaseDeleting, PhaseDeleted,
}

// Phases lists every known phase in lifecycle order.
func Phases() []Phase { return append([]Phase(nil), allPhases[:]...) }

// Known reports whether p is one of the phases above.
func (p Phase) Known() bool {
	for _, k := range allPhases {
		if p == k {
			return true
		}
	}
	return false
}

// Event is what an observation means for the add-on. Decide derives exactly
// one event (or none) per observation and looks it up in the Table.
type Event string

// The events Decide derives.
const (
	// EventInstallSucceeded: the install action returned without error.
	EventInstallSucceeded Event = "InstallSucceeded"
	// EventInstallFailed: the install action failed, or the installed version
	// did not become healthy before the check deadline.
	EventInstallFailed Event = "InstallFailed"
	// EventHealthy: a health check reported the add-on healthy.
	EventHealthy Event = "Healthy"
	// EventUnhealthy: a health check reported the add-on unhealthy.
	EventUnhealthy Event = "Unhealthy"
	// EventDeadlinePassed: the phase's deadline (Policy.Deadline) passed
	// before its pending action succeeded; in Checking, a running add-on that
	// broke did not recover before the check deadline.
	EventDeadlinePassed Event = "DeadlinePassed"
	// EventVersionChanged: the desired version differs from the installed one
	// (and is not a version that already failed).
	EventVersionChanged Event = "VersionChanged"
	// EventUpgradeSucceeded: the upgrade action returned without error. The
	// upgrade is not done yet: Checking must see the new version healthy.
	EventUpgradeSucceeded Event = "UpgradeSucceeded"
	// EventUpgradeFailed: the upgrade action failed, or the new version did
	// not become healthy before the check deadline.
	EventUpgradeFailed Event = "UpgradeFailed"
	// EventRollbackSucceeded: the rollback action returned without error.
	EventRollbackSucceeded Event = "RollbackSucceeded"
	// EventRollbackFailed: the rollback failed, or the rolled-back version did
	// not become healthy before the check deadline.
	EventRollbackFailed Event = "RollbackFailed"
	// EventUninstallSucceeded: the uninstall action returned without error.
	EventUninstallSucceeded Event = "UninstallSucceeded"
	// EventUninstallFailed: the uninstall action failed.
	EventUninstallFailed Event = "UninstallFailed"
	// EventRetriesExhausted: an install or upgrade failed once more than the
	// policy allows.
	EventRetriesExhausted Event = "RetriesExhausted"
	// EventDeletionRequested: the object is being deleted.
	EventDeletionRequested Event = "DeletionRequested"
	// EventSpecChanged: the spec's generation changed (with the same version,
	// or with nothing installed yet).
	EventSpecChanged Event = "SpecChanged"
	// EventRetryRequested: the spec carries a retry token not yet handled.
	EventRetryRequested Event = "RetryRequested"
)

var allEvents = [...]Event{
	EventInstallSucceeded, EventInstallFailed, EventHealthy, EventUnhealthy, EventDeadlinePassed,
	EventVersionChanged, EventUpgradeSucceeded, EventUpgradeFailed, EventRollbackSucceeded,
	EventRollbackFailed, EventUninstallSucceeded, EventUninstallFailed, EventRetriesExhausted,
	EventDeletionRequested, EventSpecChanged, EventRetryRequested,
}

// Events lists every known event.
func Events() []Event { return append([]Event(nil), allEvents[:]...) }

// Known reports whether e is one of the events above.
func (e Event) Known() bool {
	for _, k := range allEvents {
		if e == k {
			return true
		}
	}
	return false
}

// Action is the one thing the Machine asks the Driver to do in a reconcile.
type Action string

// The actions.
const (
	// ActionNone does nothing.
	ActionNone Action = ""
	// ActionInstall installs (applies) the desired version.
	ActionInstall Action = "Install"
	// ActionUpgrade upgrades from the installed version to the desired one.
	ActionUpgrade Action = "Upgrade"
	// ActionRollback upgrades from the installed version back to the last good one.
	ActionRollback Action = "Rollback"
	// ActionUninstall removes the add-on.
	ActionUninstall Action = "Uninstall"
	// ActionCheckHealth reads the add-on's health.
	ActionCheckHealth Action = "CheckHealth"
	// ActionRemediate is only valid in a Table row: it stands for the
	// remediation the Policy chooses for the action that last failed
	// (uninstall or nothing after an install; rollback, uninstall or nothing
	// after an upgrade). "Nothing" means: retry the failed action after the
	// backoff, unless the row enters PhaseFailed.
	ActionRemediate Action = "Remediate"
)

// Known reports whether a is one of the actions above.
func (a Action) Known() bool {
	switch a {
	case ActionNone, ActionInstall, ActionUpgrade, ActionRollback, ActionUninstall, ActionCheckHealth, ActionRemediate:
		return true
	}
	return false
}

// Health is what a health check reports.
type Health string

// The health values.
const (
	// HealthUnknown: the health could not be read (a transient error). It
	// never moves the phase by itself; only the check deadline does.
	HealthUnknown Health = "Unknown"
	// HealthHealthy: the add-on serves.
	HealthHealthy Health = "Healthy"
	// HealthUnhealthy: the add-on exists but does not serve.
	HealthUnhealthy Health = "Unhealthy"
)
