package rollout

// RevisionToStart returns the revision a node without a target should start
// installing, or 0 for none.
//
// For the first node of a pass (prev == nil) it is the latest revision,
// unless the node already runs it (or something newer) or already failed it.
// For the next nodes it follows the previous node's current revision when
// that is ahead, unless this node already failed that revision; nothing while
// the previous node is still in transition.
func RevisionToStart(curr NodeStatus, prev *NodeStatus, latest int32) int32 {
	if curr.InTransition() {
		return 0
	}
	if prev == nil {
		if curr.CurrentRevision >= latest || curr.LastFailedRevision == latest {
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
