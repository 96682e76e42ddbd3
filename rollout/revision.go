package rollout

// RevisionToStart returns the revision a node without a target should start
// installing, or 0 for none. The engine never moves a node down.
//
// For the first node of a pass (prev == nil) it is the latest revision,
// unless the node already runs it (or something newer). That includes a
// latest revision the node failed: Decide starts such a retry only once
// the installer backoff has passed and while MaxInstallerRetries allows it.
// For the next nodes it follows the previous node's current revision when
// that is ahead, unless this node already failed that revision; nothing while
// the previous node is still in transition. A node whose operand regressed
// below its current revision, with nothing newer to start, installs its
// current revision again.
func RevisionToStart(curr NodeStatus, prev *NodeStatus, latest int32) int32 {
	if curr.InTransition() {
		return 0
	}
	rev := int32(0)
	switch {
	case prev == nil:
		if curr.CurrentRevision < latest {
			rev = latest
		}
	case prev.InTransition():
		return 0
	case prev.CurrentRevision > curr.CurrentRevision && prev.CurrentRevision <= latest &&
		curr.LastFailedRevision != prev.CurrentRevision:
		rev = prev.CurrentRevision
	}
	if rev == 0 && curr.RegressedRevision != 0 {
		rev = curr.CurrentRevision
	}
	return rev
}
