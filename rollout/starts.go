package rollout

import (
	"fmt"
	"time"

	"github.com/converge-dev/converge"
)

// pass is one walk over the reachable nodes, in ring order from the start
// node, that starts what the rules (holdsBack) allow.
type pass struct {
	x *decider
	// start is the node the pass starts with.
	start int
	// installing and unavailable count the nodes installing and
	// unavailable (see Policy.MaxUnavailable), the pass's starts included.
	installing, unavailable int
	// unreachable counts the unreachable nodes.
	unreachable int
	// soakUntil is when every ready operand has been ready for
	// MinReadyDuration.
	soakUntil time.Time
	// failingOn holds, by revision, the first reachable node failing it;
	// fellBack the first node in fallback from it.
	failingOn, fellBack map[int32]int
	// stopped is true once a rule stopped the pass: no later node starts.
	stopped bool
	// backoff is how long the last retry held by its backoff waits.
	backoff time.Duration
}

// candidate is a node the pass may start.
type candidate struct {
	i int
	// n is its status: the status decided so far, which the pass changes
	// only once it starts the node.
	n *NodeStatus
	o *NodeObservation
	// rev is the revision it would start.
	rev int32
	// down is true when it serves nothing: starting it takes nothing more
	// down.
	down bool
	// retry is true when it would retry a revision it failed.
	retry bool
	// self is 1 when it counts as unavailable already.
	self int
	// create is the installer it creates, once made (plan).
	create Installer
}

// starts walks the nodes in ring order from the start node and starts what
// the budget, the failures, the gate and the policy allow; it explains
// what it does not start in holds.
func (x *decider) starts() {
	p := pass{x: x, failingOn: map[int32]int{}, fellBack: map[int32]int{}}
	start, why := startNode(x.nodes, x.views)
	p.count()
	if x.budget.heldRetry {
		x.holdUnavailable()
	}
	p.start, why = p.handOff(start, why)
	x.d.Start, x.d.StartReason = x.nodes[p.start].NodeName, why
	p.walk()
	if q := x.d.Unadmitted; q != nil {
		for i := range x.nodes {
			if i != x.asked && x.unavailable(i) {
				q.Down = append(q.Down, x.nodes[i].NodeName)
			}
		}
	}
	if p.unreachable > 0 {
		x.holdUnreachable()
	}
}

// count counts the nodes installing and unavailable, the unreachable
// ones, the first node failing each revision and in fallback from it, and
// when the ready operands have soaked.
func (p *pass) count() {
	x, minReady, now := p.x, p.x.in.Policy.MinReadyDuration.Duration, p.x.in.Now
	nodes, views := x.nodes, x.views
	for i := range nodes {
		n, o := &nodes[i], &views[i]
		if installing(n, o) {
			p.installing++
		}
		if x.unavailable(i) {
			p.unavailable++
		}
		if _, seen := p.fellBack[n.LastFailedRevision]; n.fallenBack() && !seen {
			p.fellBack[n.LastFailedRevision] = i
		}
		if r := o.Operand.fallbackFor(); r != 0 && !hasKey(p.fellBack, r) {
			p.fellBack[r] = i // it runs a fallback for r, whatever its status records since
		}
		if o.Unreachable {
			p.unreachable++
			continue
		}
		if _, seen := p.failingOn[n.LastFailedRevision]; n.Failing() && !seen {
			p.failingOn[n.LastFailedRevision] = i
		}
		if minReady > 0 && o.operandReady() && !o.Operand.ReadySince.IsZero() && !o.Operand.ReadySince.After(now) {
			if until := o.Operand.ReadySince.Add(minReady); until.After(p.soakUntil) {
				p.soakUntil = until
			}
		}
	}
}

// handOff returns the node the pass starts with instead of s, the start
// node, and why: the node that alone may retry the revision s would start
// (or retry, in transition). Only the node that failed a revision retries
// it, and only as the start of a pass, so a start node held back by a
// revision another node failed hands the start to that node, and the
// rollout never waits forever on a retry nobody makes. A start node that
// is up hands the start to a node in fallback from its revision, which
// retries it first.
func (p *pass) handOff(s int, why string) (int, string) {
	nodes, views := p.x.nodes, p.x.views
	rev := RevisionToStart(nodes[s], nil, p.x.d.Latest)
	if p.x.waitsForFallback[nodes[s].NodeName] {
		rev = nodes[s].TargetRevision
	}
	if rev == 0 || views[s].Unreachable {
		return s, why
	}
	if f, ok := p.fellBack[rev]; ok && f != s && !nodes[f].InTransition() && !views[f].Unreachable && !isDown(&nodes[s], &views[s]) {
		return f, fmt.Sprintf("%s fell back from revision %d, which %s would start", nodes[f].NodeName, rev, nodes[s].NodeName)
	} else if f, ok := p.failingOn[rev]; ok && f != s && !nodes[f].InTransition() {
		return f, fmt.Sprintf("%s failed revision %d, which %s would start", nodes[f].NodeName, rev, nodes[s].NodeName)
	}
	return s, why
}

// walk walks the reachable nodes in ring order from the start and starts
// each candidate no rule holds back. A node held back is skipped, not the
// end of the walk: a node further on that is already down may still start
// (it takes nothing more down, and waiting for it could hold the rollout
// forever); once a rule stopped the pass, every node is still walked, so
// that every hold is explained whatever stopped the starts.
func (p *pass) walk() {
	x := p.x
	var prev *NodeStatus
	var c candidate
	for k := range x.nodes {
		i := (p.start + k) % len(x.nodes)
		if x.views[i].Unreachable {
			continue
		}
		leader := leaderView(prev)
		prev = &x.nodes[i]
		if !p.candidate(i, leader, &c) || p.holdsBack(&c) {
			continue
		}
		p.begin(&c)
		prev = &x.nodes[i]
	}
	x.requeue(p.backoff)
}

// candidate returns node i as the pass may start it after leader, or false
// when it starts nothing: it is in transition, or has no revision to start.
func (p *pass) candidate(i int, leader *NodeStatus, c *candidate) bool {
	n, o, latest := &p.x.nodes[i], &p.x.views[i], p.x.d.Latest
	if n.InTransition() {
		return false
	}
	rev := RevisionToStart(*n, leader, latest)
	down := isDown(n, o)
	if down && n.CurrentRevision < latest && !(n.Failing() && n.LastFailedRevision == latest) {
		// A node already down goes straight to the latest revision,
		// whatever its leader runs: it has nothing to lose.
		rev = latest
	}
	if op := &o.Operand; rev != 0 && op.Phase != OperandNotFound && !op.fallback() && op.Revision > rev && op.Revision <= latest {
		// Never below what the operand runs, even failing: that would
		// be a fallback the engine did not decide.
		rev = op.Revision
	}
	if rev == 0 {
		return false
	}
	retry := (n.LastFailedRevision == rev && n.Failing()) || reinstallsInFallback(*n, rev)
	*c = candidate{i: i, n: n, o: o, rev: rev, down: down, retry: retry, self: p.x.self(i)}
	return true
}

// plan makes, once, the installer c creates.
func (c *candidate) plan() {
	if c.create.Name == "" {
		to := *c.n
		to.TargetRevision = c.rev
		c.create = installerFor(to)
	}
}

// begin starts c: its new status, the installer it creates and the event.
func (p *pass) begin(c *candidate) {
	x, n := p.x, *c.n
	c.plan()
	to, create := n, c.create
	to.TargetRevision = c.rev
	to.order(x.in.Now)
	x.set(c.i, to)
	reason := fmt.Sprintf("starting revision %d", c.rev)
	if c.retry {
		reason = fmt.Sprintf("retrying revision %d after %s", c.rev, failures(max(n.LastFailedCount, n.LastFallbackCount)))
	}
	from := n.CurrentRevision
	if n.RegressedRevision != 0 {
		from = n.RegressedRevision
	}
	x.d.Steps = append(x.d.Steps, NodeDecision{
		Node: n.NodeName, Reason: reason, To: &to, Create: &create,
		Events: []converge.Event{{Type: converge.EventTypeNormal, Reason: ReasonNodeTargetRevisionChanged,
			Message: fmt.Sprintf("Updating node %q from revision %d to %d because %s", n.NodeName, from, c.rev, reason)}},
	})
	p.installing++
	if !c.down && c.self == 0 {
		p.unavailable++
	}
}

// holdUnreachable explains the unreachable nodes that cannot move: those
// in transition, and those that need a revision unless the holds of
// MaxUnavailable name them already (holdUnavailable).
func (x *decider) holdUnreachable() {
	for i := range x.nodes {
		n := &x.nodes[i]
		if !x.views[i].Unreachable {
			continue
		}
		if n.InTransition() || (!x.budget.named && (n.CurrentRevision < x.d.Latest || n.reinstall())) {
			x.hold(unreachableHold(n.NodeName))
		}
	}
}

// leaderView is how a node sees the node before it in the walk: a node in
// transition that is not failing counts as already at its target.
func leaderView(prev *NodeStatus) *NodeStatus {
	if prev == nil || !prev.InTransition() || prev.Failing() {
		return prev
	}
	v := *prev
	v.CurrentRevision, v.TargetRevision = prev.TargetRevision, 0
	return &v
}
