package rollout

import (
	"fmt"
	"math"
)

// errNoNodes is returned by StartNode for an empty node list.
var errNoNodes = fmt.Errorf("%w: no nodes", ErrInvalid)

// StartNode picks the node a pass starts with — the node in the worst state —
// and says why. Only reachable nodes are candidates; the first rule that
// matches wins, ties go to the earlier node:
//
//  1. a node already moving to a target revision;
//  2. a node whose last failed revision is newer than every node's current revision;
//  3. the node whose operand is not ready (or missing) with the oldest operand revision;
//  4. the node whose operand runs another revision than its current one, oldest first;
//  5. the node with the oldest current revision.
//
// When every node is unreachable it returns index 0. The pass then walks the
// other nodes in ring order from the returned index. An empty list is an
// error wrapping ErrInvalid.
func StartNode(nodes []NodeStatus, obs Observation) (int, string, error) {
	if len(nodes) == 0 {
		return 0, "", errNoNodes
	}
	reachable := func(i int) bool { return !obs[nodes[i].NodeName].Unreachable }

	for i := range nodes {
		if reachable(i) && nodes[i].InTransition() {
			return i, fmt.Sprintf("%s is moving to revision %d", nodes[i].NodeName, nodes[i].TargetRevision), nil
		}
	}

	var newestCurrent int32
	for _, n := range nodes {
		newestCurrent = max(newestCurrent, n.CurrentRevision)
	}
	for i := range nodes {
		if reachable(i) && nodes[i].LastFailedRevision > newestCurrent {
			return i, fmt.Sprintf("%s failed revision %d, newer than every current revision", nodes[i].NodeName, nodes[i].LastFailedRevision), nil
		}
	}

	if i := oldestOperand(nodes, obs, func(n NodeStatus, o NodeObservation) bool { return !o.operandReady() }); i >= 0 {
		return i, fmt.Sprintf("%s has the oldest operand that is not ready", nodes[i].NodeName), nil
	}
	if i := oldestOperand(nodes, obs, func(n NodeStatus, o NodeObservation) bool { return o.Operand.Revision != n.CurrentRevision }); i >= 0 {
		return i, fmt.Sprintf("%s has the oldest operand not at its current revision", nodes[i].NodeName), nil
	}

	best := -1
	for i := range nodes {
		if reachable(i) && (best < 0 || nodes[i].CurrentRevision < nodes[best].CurrentRevision) {
			best = i
		}
	}
	if best < 0 {
		return 0, "every node is unreachable", nil
	}
	return best, fmt.Sprintf("%s has the oldest current revision", nodes[best].NodeName), nil
}

// oldestOperand returns the reachable node matching pick with the lowest
// operand revision (a missing operand counts as revision 0), or -1.
func oldestOperand(nodes []NodeStatus, obs Observation, pick func(NodeStatus, NodeObservation) bool) int {
	best, bestRev := -1, int32(math.MaxInt32)
	for i, n := range nodes {
		o := obs[n.NodeName]
		if o.Unreachable || !pick(n, o) {
			continue
		}
		rev := o.Operand.Revision
		if o.Operand.Phase.normal() == OperandNotFound {
			rev = 0
		}
		if best < 0 || rev < bestRev {
			best, bestRev = i, rev
		}
	}
	return best
}
