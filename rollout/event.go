package rollout

// The rollout's one vocabulary. A failure has one word, used alike as the
// persisted NodeStatus.LastFailedReason, the reason of the event that reports
// it and the reason of the Degraded condition that keeps it visible; the
// words are library-go's installer controller's wherever it has one.
const (
	// ReasonInstallerPodFailed: an installer failed, was OOM killed or did not
	// finish within Policy.InstallerPendingTimeout (a failure, an event, Degraded).
	ReasonInstallerPodFailed = "InstallerPodFailed"
	// ReasonInstallerPodDisappeared: an installer the engine created vanished
	// before it finished (a failure, an event, Degraded).
	ReasonInstallerPodDisappeared = "InstallerPodDisappeared"
	// ReasonInstallerCreateFailed: the host refused to create an installer
	// (Installers.EnsureInstaller returned an error: RBAC, quota, an
	// admission webhook), recorded by the sync's last write (a failure, an
	// event, Degraded), so a refusal that never ends backs off and is
	// bounded by Policy.MaxInstallerRetries.
	ReasonInstallerCreateFailed = "InstallerCreateFailed"
	// ReasonOperandFailed: the operand failed after its installer succeeded
	// (a failure, an event, Degraded).
	ReasonOperandFailed = "OperandFailed"
	// ReasonOperandNotReady: the operand was not ready within
	// Policy.OperandReadyTimeout after its installer succeeded (a failure, an
	// event, Degraded).
	ReasonOperandNotReady = "OperandNotReady"
	// ReasonOperandFailedFallback: a node fell back from a revision to its
	// last good one, because the startup monitor on the node did, or
	// because the operand was not ready within Policy.FallbackTimeout (a
	// failure, an event, Degraded); the revision is retried after
	// Policy.FallbackBackoff.
	ReasonOperandFailedFallback = "OperandFailedFallback"
	// ReasonInstallerRetriesExhausted: a node failed its revision more often
	// than Policy.MaxInstallerRetries allows and gave up (an event, Degraded).
	ReasonInstallerRetriesExhausted = "InstallerRetriesExhausted"
	// ReasonNodeRevisionRegressed: a node's operand runs a revision below the
	// node's current revision (an event, Degraded); the node is installed again.
	ReasonNodeRevisionRegressed = "NodeRevisionRegressed"
	// ReasonNodeOperandMissing: a node at a revision runs no operand (an
	// event, Degraded); the node is installed again.
	ReasonNodeOperandMissing = "NodeOperandMissing"

	// ReasonNodeTargetRevisionChanged: a node starts installing a revision, or
	// jumps to a newer one (an event).
	ReasonNodeTargetRevisionChanged = "NodeTargetRevisionChanged"
	// ReasonNodeCurrentRevisionChanged: a node's operand is ready at its
	// target revision (an event).
	ReasonNodeCurrentRevisionChanged = "NodeCurrentRevisionChanged"

	// ReasonNodesActive and ReasonZeroNodesActive: Available.
	ReasonNodesActive     = "NodesActive"
	ReasonZeroNodesActive = "ZeroNodesActive"
	// ReasonNodesProgressing and ReasonAllNodesAtLatestRevision:
	// Progressing.
	ReasonNodesProgressing         = "NodesProgressing"
	ReasonAllNodesAtLatestRevision = "AllNodesAtLatestRevision"
	// ReasonRolloutHeld: a hold keeps nodes from starting (Status.Holds, a
	// pause or a soak alone aside): Progressing at once, and Degraded once
	// the hold is older than Policy.HoldDegradedAfter.
	ReasonRolloutHeld = "RolloutHeld"
)

// isFailureReason reports whether r may be persisted as LastFailedReason.
func isFailureReason(r string) bool {
	switch r {
	case ReasonInstallerPodFailed, ReasonInstallerPodDisappeared, ReasonInstallerCreateFailed, ReasonOperandFailed, ReasonOperandNotReady, ReasonOperandFailedFallback:
		return true
	}
	return false
}
