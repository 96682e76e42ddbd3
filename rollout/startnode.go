package rollout

import (
	"fmt"
	"math"

	"github.com/converge-dev/converge/internal/input"
)

// errNoNodes is returned by StartNode for an empty node list.
var errNoNodes = input.Invalidf("rollout", "input", "StartNode needs nodes")

// StartNode picks the node a pass starts with — the node in the worst state —
// and says why. Only reachable nodes are candidates; the first rule that
// matches wins, ties go to the earlier node:
//
//  1. a node already moving to a target revision;
//  2. a node whose operand runs below its current revision;
//  3. a node whose last failed revision is newer than every node's current revision;
//  4. the node whose operand is not ready (or missing) with the oldest operand revision;
//  5. the node whose operand runs another revision than its current one, oldest first;
//  6. the node with the oldest current revision.
//
// When every node is unreachable it returns index 0. The pass then walks the
// other nodes in ring order from the returned index. An empty list is an
// error matching converge.ErrInvalid. It is linear in the number of nodes.
func StartNode(nodes []NodeStatus, obs Observation) (int, string, error) {
	if len(nodes) == 0 {
		return 0, "", errNoNodes
	}
	views := make([]NodeObservation, len(nodes))
	for i, n := range nodes {
		views[i] = obs[n.NodeName]
	}
	i, why := startNode(nodes, views)
	return i, why, nil
}

// startNode is StartNode on observations aligned with the nodes.
func startNode(nodes []NodeStatus, views []NodeObservation) (int, string) {
	var newestCurrent int32
	transition, regressed := -1, -1
	for i := range nodes {
		n := &nodes[i]
		newestCurrent = max(newestCurrent, n.CurrentRevision)
		if views[i].Unreachable {
			continue
		}
		if transition < 0 && n.InTransition() {
			transition = i
		}
		if regressed < 0 && n.RegressedRevision != 0 {
			regressed = i
		}
	}
	if transition >= 0 {
		return transition, fmt.Sprintf("%s is moving to revision %d", nodes[transition].NodeName, nodes[transition].TargetRevision)
	}
	if regressed >= 0 {
		n := nodes[regressed]
		return regressed, fmt.Sprintf("%s runs revision %d below its current revision %d", n.NodeName, n.RegressedRevision, n.CurrentRevision)
	}
	for i := range nodes {
		if n := &nodes[i]; !views[i].Unreachable && n.LastFailedRevision > newestCurrent {
			return i, fmt.Sprintf("%s failed revision %d, newer than every current revision", n.NodeName, n.LastFailedRevision)
		}
	}

	notReady, notReadyRev := -1, int32(math.MaxInt32)
	mismatch, mismatchRev := -1, int32(math.MaxInt32)
	oldest := -1
	for i := range nodes {
		n, o := &nodes[i], &views[i]
		if o.Unreachable {
			continue
		}
		rev := o.Operand.Revision
		if o.Operand.Phase == OperandNotFound {
			rev = 0
		}
		if !o.operandReady() && (notReady < 0 || rev < notReadyRev) {
			notReady, notReadyRev = i, rev
		}
		if o.Operand.Revision != n.CurrentRevision && (mismatch < 0 || rev < mismatchRev) {
			mismatch, mismatchRev = i, rev
		}
		if oldest < 0 || n.CurrentRevision < nodes[oldest].CurrentRevision {
			oldest = i
		}
	}
	switch {
	case notReady >= 0:
		return notReady, fmt.Sprintf("%s has the oldest operand that is not ready", nodes[notReady].NodeName)
	case mismatch >= 0:
		return mismatch, fmt.Sprintf("%s has the oldest operand not at its current revision", nodes[mismatch].NodeName)
	case oldest >= 0:
		return oldest, fmt.Sprintf("%s has the oldest current revision", nodes[oldest].NodeName)
	}
	return 0, "every node is unreachable"
}
