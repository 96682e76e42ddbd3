package payload

import (
	"slices"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// The reasons the worker writes in its events, in Status.Failure and in its conditions,
// besides the cluster-version operator's classification of API errors (Reasons lists
// them too) and the reasons of the UpdateErrors a host's appliers return.
const (
	// ReasonInitializingStarted is the event of a first release: the worker
	// initializes it.
	ReasonInitializingStarted = "InitializingStarted"
	// ReasonUpdateStarted is the event of a release after a completed one: the worker
	// updates to it.
	ReasonUpdateStarted = "UpdateStarted"
	// ReasonPayloadApplied is the event of an initialization or an update that
	// applied every manifest.
	ReasonPayloadApplied = "PayloadApplied"
	// ReasonManifestsDeleted is the event of an apply that removed the objects of
	// manifests marked for deletion.
	ReasonManifestsDeleted = "ManifestsDeleted"
	// ReasonUpgradePreconditionCheckFailed is the failure of an update that
	// Config.Preconditions blocks.
	ReasonUpgradePreconditionCheckFailed = "UpgradePreconditionCheckFailed"
	// ReasonUpdatePayloadIntegrity is the failure of a payload that cannot be ordered
	// (a dependency cycle, an unknown dependency) or whose inclusion failed.
	ReasonUpdatePayloadIntegrity = "UpdatePayloadIntegrity"
	// ReasonUpdatePayloadRetrievalFailed is the failure of a payload the Loader could
	// not load, or loaded unusable.
	ReasonUpdatePayloadRetrievalFailed = "UpdatePayloadRetrievalFailed"
	// ReasonUpdatePayloadTimedOut is the failure of an apply that ran longer than
	// Policy.ApplyTimeout.
	ReasonUpdatePayloadTimedOut = "UpdatePayloadTimedOut"
	// ReasonManifestNotReady is the failure of a manifest whose object was not ready
	// within Policy.ReadinessTimeout.
	ReasonManifestNotReady = "ManifestNotReady"
	// ReasonUpdatePayloadFailed is the failure of an error nothing else classifies.
	ReasonUpdatePayloadFailed = "UpdatePayloadFailed"
	// ReasonMultipleErrors is the failure of an apply that met several unrelated
	// errors, each a bullet of its message.
	ReasonMultipleErrors = "MultipleErrors"
)

// Reasons returns, sorted, the closed list of the reasons the worker writes itself:
// the constants above, the cluster-version operator's classification of API errors
// (UpdatePayloadResourceNotFound, UpdatePayloadClusterDown, …), and its conditions'
// AsExpected and states (Available is False with reason Initializing, Progressing has
// the state as its reason), and the shared holds' reasons Progressing takes (converge.HoldPaused, converge.HoldWindowClosed). A host's UpdateError brings its own reason besides.
func Reasons() []string {
	reasons := []string{
		ReasonInitializingStarted, ReasonUpdateStarted, ReasonPayloadApplied, ReasonManifestsDeleted,
		ReasonUpgradePreconditionCheckFailed, ReasonUpdatePayloadIntegrity, ReasonUpdatePayloadRetrievalFailed,
		ReasonUpdatePayloadTimedOut, ReasonManifestNotReady, ReasonUpdatePayloadFailed, ReasonMultipleErrors,
		converge.HoldPaused, converge.HoldWindowClosed,
		conditions.ReasonAsExpected, string(StateInitializing), string(StateUpdating),
	}
	for _, c := range errorClasses {
		reasons = append(reasons, c.reason)
	}
	slices.Sort(reasons)
	return slices.Compact(reasons)
}
