package addon

// Observation is what the Machine saw since the last decision: the outcome of
// the action it just ran, or nothing (a fresh look, Action == ActionNone).
type Observation struct {
	// Action is the action just run; it must be the status's PendingAction.
	Action Action
	// Err is the action's error; for ActionCheckHealth, a failure to read the
	// health, which counts as HealthUnknown.
	Err error
	// Health is the result of ActionCheckHealth.
	Health Health
}

// successEvent returns the event a successful action means.
func successEvent(a Action) Event {
	switch a {
	case ActionInstall:
		return EventInstallSucceeded
	case ActionUpgrade:
		return EventUpgradeSucceeded
	case ActionRollback:
		return EventRollbackSucceeded
	}
	return EventUninstallSucceeded
}

// failureEvent returns the event a failed action means.
func failureEvent(a Action) Event {
	switch a {
	case ActionInstall:
		return EventInstallFailed
	case ActionUpgrade:
		return EventUpgradeFailed
	case ActionRollback:
		return EventRollbackFailed
	case ActionUninstall:
		return EventUninstallFailed
	}
	return EventDeadlinePassed
}

// verifies returns what PhaseChecking verifies after event e.
func verifies(e Event) Action {
	switch e {
	case EventInstallSucceeded:
		return ActionInstall
	case EventUpgradeSucceeded:
		return ActionUpgrade
	case EventRollbackSucceeded:
		return ActionRollback
	}
	return ActionNone
}

// specEvents lists, in priority order, the events the spec raises against
// the status. Decide fires the first that has a row in the current phase.
func specEvents(spec Spec, st *Status) []Event {
	var out []Event
	if spec.RetryToken != "" && spec.RetryToken != st.LastRetryToken {
		out = append(out, EventRetryRequested)
	}
	if st.InstalledVersion != "" && spec.Version != st.InstalledVersion && spec.Version != st.FailedVersion {
		out = append(out, EventVersionChanged)
	}
	if spec.Generation != st.ObservedGeneration {
		out = append(out, EventSpecChanged)
	}
	return out
}
