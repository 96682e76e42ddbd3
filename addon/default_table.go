package addon

// defaultRows reproduce the seed's lifecycle with its bugs fixed and Flux's
// remediation model added: every waiting phase has a way on, and a
// DeadlinePassed row for when its deadline passes (Checking turns it into
// the checked action's failure); every re-apply (a new version, a new spec,
// a forced retry, a drift correction) is an upgrade once something is
// installed (see Row), and its failure is remediated like a failed upgrade,
// unless it re-applied the version last seen healthy: that version still
// runs, so the add-on goes back to Running, watched, and the re-apply is
// retried after its backoff (ReapplyFailed, ReapplyDue); Failed is left on
// a spec change or a request; an unhealthy Running add-on stays Running
// (Degraded), never removed; every phase but Deleting and
// Deleted goes to Deleting on a deletion request; and Deleting stops
// uninstalling at its deadline until a reset or force is requested.
var defaultRows = []Row{
	{PhaseInitializing, TriggerInstallSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseInitializing, TriggerInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseInitializing, TriggerUpgradeSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseInitializing, TriggerUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseInitializing, TriggerReapplyFailed, PhaseRunning, ActionCheckHealth},
	{PhaseInitializing, TriggerRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseInitializing, TriggerDeadlinePassed, PhaseReinitializing, ActionRemediate},
	{PhaseInitializing, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseInitializing, TriggerSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseInitializing, TriggerResetRequested, PhaseInitializing, ActionInstall},
	{PhaseInitializing, TriggerForceRequested, PhaseInitializing, ActionInstall},
	{PhaseInitializing, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseReinitializing, TriggerUninstallSucceeded, PhaseReinitializing, ActionInstall},
	{PhaseReinitializing, TriggerUninstallFailed, PhaseReinitializing, ActionInstall},
	{PhaseReinitializing, TriggerInstallSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseReinitializing, TriggerInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseReinitializing, TriggerUpgradeSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseReinitializing, TriggerUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseReinitializing, TriggerReapplyFailed, PhaseRunning, ActionCheckHealth},
	{PhaseReinitializing, TriggerRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseReinitializing, TriggerDeadlinePassed, PhaseFailed, ActionRemediate},
	{PhaseReinitializing, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseReinitializing, TriggerSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseReinitializing, TriggerResetRequested, PhaseInitializing, ActionInstall},
	{PhaseReinitializing, TriggerForceRequested, PhaseInitializing, ActionInstall},
	{PhaseReinitializing, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseChecking, TriggerHealthy, PhaseRunning, ActionCheckHealth},
	{PhaseChecking, TriggerInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseChecking, TriggerDeadlinePassed, PhaseReinitializing, ActionRemediate},
	{PhaseChecking, TriggerUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseChecking, TriggerReapplyFailed, PhaseRunning, ActionCheckHealth},
	{PhaseChecking, TriggerRollbackFailed, PhaseFailed, ActionNone},
	{PhaseChecking, TriggerRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseChecking, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseChecking, TriggerSpecChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseChecking, TriggerResetRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseChecking, TriggerForceRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseChecking, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseRunning, TriggerUnhealthy, PhaseRunning, ActionCheckHealth},
	{PhaseRunning, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseRunning, TriggerSpecChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseRunning, TriggerForceRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseRunning, TriggerDriftDetected, PhaseUpgrading, ActionUpgrade},
	{PhaseRunning, TriggerReapplyDue, PhaseUpgrading, ActionUpgrade},
	{PhaseRunning, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseUpgrading, TriggerUpgradeSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseUpgrading, TriggerUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseUpgrading, TriggerReapplyFailed, PhaseRunning, ActionCheckHealth},
	{PhaseUpgrading, TriggerInstallSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseUpgrading, TriggerInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseUpgrading, TriggerRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseUpgrading, TriggerDeadlinePassed, PhaseRemediating, ActionRemediate},
	{PhaseUpgrading, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseUpgrading, TriggerSpecChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseUpgrading, TriggerResetRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseUpgrading, TriggerForceRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseUpgrading, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseRemediating, TriggerRollbackSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseRemediating, TriggerRollbackFailed, PhaseFailed, ActionNone},
	{PhaseRemediating, TriggerUninstallSucceeded, PhaseReinitializing, ActionInstall},
	{PhaseRemediating, TriggerUninstallFailed, PhaseFailed, ActionNone},
	{PhaseRemediating, TriggerUpgradeSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseRemediating, TriggerUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseRemediating, TriggerReapplyFailed, PhaseRunning, ActionCheckHealth},
	{PhaseRemediating, TriggerInstallSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseRemediating, TriggerInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseRemediating, TriggerRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseRemediating, TriggerDeadlinePassed, PhaseFailed, ActionNone},
	{PhaseRemediating, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseRemediating, TriggerSpecChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseRemediating, TriggerResetRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseRemediating, TriggerForceRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseRemediating, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseFailed, TriggerUninstallSucceeded, PhaseFailed, ActionNone},
	{PhaseFailed, TriggerUninstallFailed, PhaseFailed, ActionNone},
	{PhaseFailed, TriggerRollbackSucceeded, PhaseFailed, ActionNone},
	{PhaseFailed, TriggerRollbackFailed, PhaseFailed, ActionNone},
	{PhaseFailed, TriggerVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseFailed, TriggerSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseFailed, TriggerResetRequested, PhaseInitializing, ActionInstall},
	{PhaseFailed, TriggerForceRequested, PhaseInitializing, ActionInstall},
	{PhaseFailed, TriggerDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseDeleting, TriggerUninstallSucceeded, PhaseDeleted, ActionNone},
	{PhaseDeleting, TriggerUninstallFailed, PhaseDeleting, ActionUninstall},
	{PhaseDeleting, TriggerDeadlinePassed, PhaseDeleting, ActionNone},
	{PhaseDeleting, TriggerResetRequested, PhaseDeleting, ActionUninstall},
	{PhaseDeleting, TriggerForceRequested, PhaseDeleting, ActionUninstall},
}

// defaultTable is checked by TestDefaultTableIsValid.
var defaultTable = indexRows(defaultRows)

// DefaultTable returns the lifecycle learnt from TKEStack's add-on
// controllers and Flux's helm-controller. The same *Table is returned every
// time; it is immutable.
func DefaultTable() *Table { return defaultTable }
