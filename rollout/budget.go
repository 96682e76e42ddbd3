package rollout

import (
	"fmt"
	"strconv"
)

// budget is what a decision knows of MaxUnavailable while it decides the
// nodes in transition (the pass counts afresh once they are decided).
type budget struct {
	// down counts the unavailable nodes once a node in transition needs
	// it (-1 before), and each node taken down since.
	down int
	// heldRetry is true once MaxUnavailable held a node in transition from
	// its next installer: the holds name the unavailable nodes once every
	// node is decided.
	heldRetry bool
	// named is true once the holds name the unavailable nodes.
	named bool
}

// overBudget reports whether taking one more node down would make more
// than MaxUnavailable nodes unavailable, with down nodes unavailable
// already, self 1 of them when the node itself is (taking it down then
// adds nothing).
func (p Policy) overBudget(down, self int) bool { return down+1-self > p.maxUnavailable() }

// unavailable reports whether node i is down, as MaxUnavailable counts it:
// unreachable, installing, its operand not ready, regressed or missing, or
// an installer of it recorded for deletion may still run.
func (x *decider) unavailable(i int) bool {
	n, o := &x.nodes[i], &x.views[i]
	return o.Unreachable || installing(n, o) || isDown(n, o) || x.mayRun[n.NodeName]
}

// downCount counts the unavailable nodes, once, as the nodes decided so far
// are.
func (x *decider) downCount() int {
	if x.budget.down < 0 {
		x.budget.down = 0
		for i := range x.nodes {
			if x.unavailable(i) {
				x.budget.down++
			}
		}
	}
	return x.budget.down
}

// isDown reports whether a reachable node serves nothing: its operand is
// not ready or missing. Taking it down takes nothing more down.
func isDown(_ *NodeStatus, o *NodeObservation) bool {
	return !o.operandReady()
}

// self is 1 when node i already counts as unavailable: taking it down adds
// nothing to the count.
func (x *decider) self(i int) int {
	if x.unavailable(i) {
		return 1
	}
	return 0
}

// whyDown says why an unavailable node is down, for a hold.
func (x *decider) whyDown(i int) string {
	n, o := &x.nodes[i], &x.views[i]
	switch {
	case o.Unreachable:
		return "unreachable"
	case n.InTransition():
		return "installing revision " + strconv.Itoa(int(n.TargetRevision))
	case n.RegressedRevision != 0:
		return fmt.Sprintf("runs revision %d below %d", n.RegressedRevision, n.CurrentRevision)
	case n.OperandMissing:
		return "operand missing"
	case !o.operandReady():
		return "operand not ready"
	}
	return "an old installer may still run"
}

// holdUnavailable explains a node that is up held back by MaxUnavailable:
// each unavailable node that is not simply installing is a hold
// (HoldNodeUnavailable). It names them once, as they are when it is first
// called: a node started since is installing, which the holds leave out.
func (x *decider) holdUnavailable() {
	if x.budget.named {
		return
	}
	for i := range x.nodes {
		if x.unavailable(i) && !installing(&x.nodes[i], &x.views[i]) {
			x.budget.named = true
			x.hold(unavailableHold(x.nodes[i].NodeName, x.whyDown(i), x.in.Policy.maxUnavailable()))
		}
	}
}
