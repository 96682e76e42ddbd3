package addon

// defaultRows reproduces the seed's lifecycle with its bugs fixed: every
// waiting phase has a way on, and a DeadlinePassed row for when its deadline
// passes (Checking turns it into the checked action's failure); Failed is
// left on a spec change or a retry request; an upgrade is only done once
// Checking sees it healthy; every phase but Deleting and Deleted goes to
// Deleting on a deletion request; and Deleting stops uninstalling at its
// deadline until a retry is requested.
var defaultRows = []Row{
	{PhaseInitializing, EventInstallSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseInitializing, EventInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseInitializing, EventRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseInitializing, EventDeadlinePassed, PhaseReinitializing, ActionRemediate},
	{PhaseInitializing, EventVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseInitializing, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseInitializing, EventRetryRequested, PhaseInitializing, ActionInstall},
	{PhaseInitializing, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseReinitializing, EventUninstallSucceeded, PhaseReinitializing, ActionInstall},
	{PhaseReinitializing, EventUninstallFailed, PhaseReinitializing, ActionInstall},
	{PhaseReinitializing, EventInstallSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseReinitializing, EventInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseReinitializing, EventRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseReinitializing, EventDeadlinePassed, PhaseFailed, ActionRemediate},
	{PhaseReinitializing, EventVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseReinitializing, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseReinitializing, EventRetryRequested, PhaseInitializing, ActionInstall},
	{PhaseReinitializing, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseChecking, EventHealthy, PhaseRunning, ActionCheckHealth},
	{PhaseChecking, EventInstallFailed, PhaseReinitializing, ActionRemediate},
	{PhaseChecking, EventDeadlinePassed, PhaseReinitializing, ActionRemediate},
	{PhaseChecking, EventUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseChecking, EventRollbackFailed, PhaseFailed, ActionNone},
	{PhaseChecking, EventRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseChecking, EventVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseChecking, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseChecking, EventRetryRequested, PhaseInitializing, ActionInstall},
	{PhaseChecking, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseRunning, EventUnhealthy, PhaseChecking, ActionCheckHealth},
	{PhaseRunning, EventVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseRunning, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseRunning, EventRetryRequested, PhaseRunning, ActionCheckHealth},
	{PhaseRunning, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseUpgrading, EventUpgradeSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseUpgrading, EventUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseUpgrading, EventRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseUpgrading, EventDeadlinePassed, PhaseRemediating, ActionRemediate},
	{PhaseUpgrading, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseUpgrading, EventRetryRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseUpgrading, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseRemediating, EventRollbackSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseRemediating, EventRollbackFailed, PhaseFailed, ActionNone},
	{PhaseRemediating, EventUninstallSucceeded, PhaseReinitializing, ActionInstall},
	{PhaseRemediating, EventUninstallFailed, PhaseFailed, ActionNone},
	{PhaseRemediating, EventUpgradeSucceeded, PhaseChecking, ActionCheckHealth},
	{PhaseRemediating, EventUpgradeFailed, PhaseRemediating, ActionRemediate},
	{PhaseRemediating, EventRetriesExhausted, PhaseFailed, ActionRemediate},
	{PhaseRemediating, EventDeadlinePassed, PhaseFailed, ActionNone},
	{PhaseRemediating, EventVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseRemediating, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseRemediating, EventRetryRequested, PhaseUpgrading, ActionUpgrade},
	{PhaseRemediating, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseFailed, EventUninstallSucceeded, PhaseFailed, ActionNone},
	{PhaseFailed, EventUninstallFailed, PhaseFailed, ActionNone},
	{PhaseFailed, EventRollbackSucceeded, PhaseFailed, ActionNone},
	{PhaseFailed, EventRollbackFailed, PhaseFailed, ActionNone},
	{PhaseFailed, EventVersionChanged, PhaseUpgrading, ActionUpgrade},
	{PhaseFailed, EventSpecChanged, PhaseInitializing, ActionInstall},
	{PhaseFailed, EventRetryRequested, PhaseInitializing, ActionInstall},
	{PhaseFailed, EventDeletionRequested, PhaseDeleting, ActionUninstall},

	{PhaseDeleting, EventUninstallSucceeded, PhaseDeleted, ActionNone},
	{PhaseDeleting, EventUninstallFailed, PhaseDeleting, ActionUninstall},
	{PhaseDeleting, EventDeadlinePassed, PhaseDeleting, ActionNone},
	{PhaseDeleting, EventRetryRequested, PhaseDeleting, ActionUninstall},
}

// defaultTable is checked by TestDefaultTableIsValid.
var defaultTable = indexRows(defaultRows)

// DefaultTable returns the lifecycle learnt from TKEStack's add-on
// controllers, with their bugs fixed. The same *Table is returned every time;
// it is immutable.
func DefaultTable() *Table { return defaultTable }
