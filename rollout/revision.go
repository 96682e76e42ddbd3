package rollout

// RevisionToStart returns the revision a node without a target should start
// installing, or 0 for none.
//
// For the first node of a pass (prev == nil) it is the latest revision,
// unless the node already runs it (or something newer). That includes a
// latest revision the node failed: PlanRollout starts such a retry only once
// the installer backoff has passed and while MaxInstallerRetries allows it.
// For the next nodes it follows the previous node's current revision when
// that is ahead, unless this node already failed that revision; nothing while
// the previous node is still in transition.
func RevisionToStart(curr NodeStatus, prev *NodeStatus, latest int32) int32 {
	if curr.InTransition() {
		return 0
	}
	if prev == nil {
		if curr.CurrentRevision >= latest {
			return 0
		}
		return latest
	}
	if prev.InTransition() {
		return 0
	}
	if prev.CurrentRevision > curr.CurrentRevision && prev.CurrentRevision <= latest &&
		curr.LastFailedRevision != prev.CurrentRevision {
		return prev.CurrentRevision
	}
	return 0
}
