package addon

import (
	"slices"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// The reasons the engine writes besides its triggers (the reason of every
// transition's event and of Status.Reason) and its phases (the reason of
// Ready, Reconciling and Degraded while the phase says it all). Each is
// written alike in the events, Status.Reason and the conditions that
// report it; Reasons lists them all.
const (
	// ReasonCreated: a new add-on's status starts in Initializing (an
	// event, Status.Reason).
	ReasonCreated = "Created"
	// ReasonStaleGeneration: a look ignored a spec whose generation is below
	// one already seen, an old cache's (a Warning event).
	ReasonStaleGeneration = "StaleGeneration"
	// ReasonOutcomeDiscarded: an outcome arrived under a claim the status no
	// longer holds, and was not recorded (a Warning event).
	ReasonOutcomeDiscarded = "OutcomeDiscarded"
	// ReasonClaimExpiryBounded: a claim expired later than the engine
	// writes, and was bounded (a Warning event).
	ReasonClaimExpiryBounded = "ClaimExpiryBounded"
	// ReasonClaimLost: a claim expired before its owner recorded an
	// outcome; the attempt is retried after the backoff, not counted as a
	// failure (a Warning event, Status.Reason; see Status.LostAttempts).
	ReasonClaimLost = "ClaimLost"
	// ReasonInstalledVersionMismatch: the Inspector reports that the
	// cluster runs another version than Status.InstalledVersion (a Warning
	// event, Status.Reason, Degraded True and, in Running, Ready False; see
	// Status.Mismatch).
	ReasonInstalledVersionMismatch = "InstalledVersionMismatch"
	// ReasonInspectionFailed: the Inspector could not say what the cluster
	// runs; a takeover then trusts the status (a Warning event).
	ReasonInspectionFailed = "InspectionFailed"
	// ReasonRollbackTargetMissing: a rollback was not attempted because no
	// version was ever healthy; the add-on stops in Failed (a Warning event,
	// Status.Reason, Stalled, Ready False).
	ReasonRollbackTargetMissing = "RollbackTargetMissing"
	// ReasonRollbackTargetUnusable: a rollback was not attempted because the
	// last good version is the version that just failed; the add-on stops in
	// Failed (a Warning event, Status.Reason, Stalled, Ready False).
	ReasonRollbackTargetUnusable = "RollbackTargetUnusable"
	// ReasonHealthUnknown: the health stayed unreadable in Running past
	// Policy.HealthUnknownTimeout (Ready Unknown, Degraded).
	ReasonHealthUnknown = "HealthUnknown"
	// ReasonUnhealthy: the last health read in Running was unhealthy (Ready
	// False, Degraded); the trigger of the same name has the same value.
	ReasonUnhealthy = "Unhealthy"
	// ReasonVersionFailed: Running the installed version after the desired
	// one failed (Degraded).
	ReasonVersionFailed = "VersionFailed"
	// ReasonUninstallFailing: a deletion's uninstall failed more often than
	// Policy.MaxRetries allows and goes on failing (Stalled, Ready False).
	ReasonUninstallFailing = "UninstallFailing"
	// ReasonNoDrift: the DriftDetector found the cluster as applied
	// (Drifted False).
	ReasonNoDrift = "NoDrift"
	// ReasonTestSucceeded and ReasonTestFailed: the tests of the installed
	// version passed or failed (TestSuccess True or False).
	ReasonTestSucceeded = "TestSucceeded"
	ReasonTestFailed    = "TestFailed"
)

// reasons is the closed list Reasons returns, sorted.
var reasons = func() []string {
	out := []string{
		ReasonCreated, ReasonStaleGeneration, ReasonOutcomeDiscarded, HoldPaused, HoldWindowClosed,
		ReasonClaimExpiryBounded, ReasonClaimLost, ReasonInstalledVersionMismatch, ReasonInspectionFailed, ReasonRollbackTargetMissing, ReasonRollbackTargetUnusable, ReasonHealthUnknown,
		ReasonUnhealthy, ReasonVersionFailed, ReasonUninstallFailing, ReasonNoDrift, ReasonTestSucceeded, ReasonTestFailed,
		conditions.ReasonAsExpected,
	}
	for _, t := range allTriggers {
		out = append(out, string(t))
	}
	for _, p := range allPhases {
		out = append(out, string(p))
	}
	slices.Sort(out)
	return slices.Compact(out)
}()

// Reasons returns, sorted, every reason Decide writes in an event, in
// Status.Reason or in a condition: the constants above, every Trigger,
// every Phase, the hold reasons (Reconciling while a hold keeps the pending
// action from starting), and conditions.ReasonAsExpected (Degraded False). A status
// written by someone else may carry a reason of its own, which Decide keeps
// (sanitized, in the Stalled condition of a Failed add-on). The slice is
// the caller's.
func Reasons() []string { return slices.Clone(reasons) }

// event appends an event, its message bounded.
func (d *decider) event(typ, reason, msg string) {
	d.events = append(d.events, converge.Event{Type: typ, Reason: reason, Message: conditions.TruncateMessage(msg, maxMessage)})
}
