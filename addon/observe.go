package addon

// Object is one add-on as the host read it: what the Machine reconciles.
type Object struct {
	// Spec is what the add-on should be.
	Spec Spec
	// Status is the persisted status (zero for a new add-on).
	Status Status
	// ResourceVersion is the object's version for optimistic concurrency;
	// the Store compares it when it writes.
	ResourceVersion string
	// Host is the host's own object (for example its
	// *unstructured.Unstructured), handed to the Driver untouched so it can
	// set owner references or read settings without a lookup.
	Host any
}

// Request is what the Driver gets for one call.
type Request struct {
	// Spec is the add-on's spec.
	Spec Spec
	// Host is Object.Host.
	Host any
	// From is the installed version ("" when nothing is installed).
	From string
	// To is the version to apply: the desired one for an install or
	// upgrade, the last good one for a rollback ("" for an uninstall).
	To string
	// Rollback is true when an Upgrade call rolls back.
	Rollback bool
	// Revision is, for a rollback, the driver's revision that carried To
	// when it was last seen healthy (Status.LastGoodRevision); "" when none
	// was recorded.
	Revision string
	// Fence is the fencing token of the claim a mutating call runs under
	// (Claim.Fence), and for a read the newest token taken
	// (Status.Fence): a Driver never writes under a token older than the
	// newest it has seen (see Driver). Zero means no token.
	Fence int64
}

// Observation is what the host reported for this pass, as in every
// converge engine: nothing for a look (Action == ActionNone), or what its
// Driver returned for the action the previous decision chose: the action's
// error, the health (and drift) it read, or what its Inspector reported.
type Observation struct {
	// Action is the action the Driver ran.
	Action Action
	// Claim is the claim it ran under (Decision.Status.InFlight), for an
	// action that mutates; the outcome is recorded only while the status
	// still holds that claim, else it is discarded (fenced).
	Claim *Claim
	// Err is the action's error; for ActionCheckHealth, a failure to read the
	// health, which counts as HealthUnknown.
	Err error
	// Revision is what an install, upgrade or rollback returned: the
	// driver's revision that carries what it applied.
	Revision string
	// Health is the result of ActionCheckHealth.
	Health Health
	// Drifted and DriftDetail are the drift a DriftDetector reported with
	// ActionCheckHealth.
	Drifted     bool
	DriftDetail string
	// Installed is what an Inspector reported the cluster runs, for
	// ActionInspect (nil with Err when it could not say) and, while
	// Status.Mismatch stands, beside ActionCheckHealth; nil when it was not
	// asked.
	Installed *Installed
}

// successTrigger returns the trigger a successful action means.
func successTrigger(a Action) Trigger {
	switch a {
	case ActionInstall:
		return TriggerInstallSucceeded
	case ActionUpgrade:
		return TriggerUpgradeSucceeded
	case ActionRollback:
		return TriggerRollbackSucceeded
	}
	return TriggerUninstallSucceeded
}

// failureTrigger returns the trigger a failed action means.
func failureTrigger(a Action) Trigger {
	switch a {
	case ActionInstall:
		return TriggerInstallFailed
	case ActionUpgrade:
		return TriggerUpgradeFailed
	case ActionRollback:
		return TriggerRollbackFailed
	case ActionUninstall:
		return TriggerUninstallFailed
	}
	return TriggerDeadlinePassed
}

// verifies returns what PhaseChecking verifies after trigger t.
func verifies(t Trigger) Action {
	switch t {
	case TriggerInstallSucceeded:
		return ActionInstall
	case TriggerUpgradeSucceeded:
		return ActionUpgrade
	case TriggerRollbackSucceeded:
		return ActionRollback
	}
	return ActionNone
}
