package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Step is what a plan does to one node: the status to write, the installers
// to delete before writing it (a target the node leaves) and after (a
// timed-out attempt whose failure it records), the installer to create after,
// and the events to emit once it is written. A step without a status change or an action only
// explains why the node waits.
type Step struct {
	// Node is the node's name.
	Node string
	// Reason says in a few words what happens to the node.
	Reason string
	// From is the node's status before the step.
	From NodeStatus
	// To is the node's new status, nil when it does not change.
	To *NodeStatus
	// Delete lists installers of a target the node leaves, deleted before To is written.
	Delete []Installer
	// DeleteAfter lists timed-out installers of the node's target, deleted once To is written.
	DeleteAfter []Installer
	// Create is the installer to ensure after To is written.
	Create *Installer
	// Events are emitted once To is written.
	Events []Event
}

// Acts reports whether the step changes status or calls the host.
func (s Step) Acts() bool {
	return s.To != nil || len(s.Delete) > 0 || len(s.DeleteAfter) > 0 || s.Create != nil
}

// Plan is the whole decision of one sync, made by PlanRollout. It is plain
// data: it prints (String), compares and can be tested without a cluster.
type Plan struct {
	// Latest is the latest available revision the plan rolls out.
	Latest int32
	// Start is the node the pass for new installs started with (worst first), and StartReason why.
	Start, StartReason string
	// Steps are the node changes in the order they must be applied: first
	// the nodes in transition (by name), then the nodes started, in ring order from Start.
	Steps []Step
	// Blocked says why no further node was started ("" when nothing held it back).
	Blocked string
	// Status is the status once every step is applied, conditions included.
	Status Status
	// Reason is a one-line summary.
	Reason string
	// RequeueAfter is when to look again at the latest (0 = on the next change).
	RequeueAfter time.Duration
}

// Events returns the events of all steps, in step order.
func (p Plan) Events() []Event {
	var out []Event
	for _, s := range p.Steps {
		out = append(out, s.Events...)
	}
	return out
}

// Converged reports whether every node runs the latest revision and none is in transition.
func (s Status) Converged() bool {
	if len(s.NodeStatuses) == 0 {
		return false
	}
	for _, n := range s.NodeStatuses {
		if n.InTransition() || n.CurrentRevision != s.LatestAvailableRevision {
			return false
		}
	}
	return true
}

// PlanRollout decides one sync of a rollout from the persisted status, what
// the host observed, the policy and the current time. It is pure and
// deterministic: node statuses come back sorted by name whatever the input order.
//
// First every node in transition goes through NextNodeStatus. Then, unless
// the policy is paused or an operand is still soaking (MinReadyDuration),
// the pass walks the reachable nodes in ring order from StartNode and starts
// the revision RevisionToStart gives each one, as long as starting it keeps
// at most MaxUnavailable reachable nodes in transition and at most
// MaxUnavailable reachable nodes unavailable (in transition or with an operand
// that is not ready). A node in transition whose last failure is not its
// target counts, for the node after it, as already at its target, so that
// with a budget above 1 healthy nodes move together; no node starts a
// revision another reachable node is failing, so a failure does not spread.
//
// A node that failed the latest revision (its operand failed, which clears
// the target) retries it as the start of a pass: after the installer backoff
// (Backoff.RetryAt) and while MaxInstallerRetries allows; once they are
// exhausted the rollout stops there and Degraded says so. The retry uses a
// new installer name (InstallerName).
func PlanRollout(st Status, obs Observation, p Policy, now time.Time) (Plan, error) {
	if err := p.Validate(); err != nil {
		return Plan{}, err
	}
	if err := st.Validate(); err != nil {
		return Plan{}, err
	}
	if err := obs.Validate(); err != nil {
		return Plan{}, err
	}
	out := *st.DeepCopy()
	slices.SortFunc(out.NodeStatuses, func(a, b NodeStatus) int { return strings.Compare(a.NodeName, b.NodeName) })
	nodes := out.NodeStatuses
	plan := Plan{Latest: st.LatestAvailableRevision}
	requeue := func(d time.Duration) {
		if d > 0 && (plan.RequeueAfter == 0 || d < plan.RequeueAfter) {
			plan.RequeueAfter = d
		}
	}

	for i, n := range nodes {
		if !n.InTransition() {
			continue
		}
		d := NextNodeStatus(n, st.LatestAvailableRevision, obs[n.NodeName], p, now)
		step := Step{Node: n.NodeName, Reason: d.Reason, From: *n.DeepCopy(), Delete: d.Delete, DeleteAfter: d.DeleteAfter,
			Create: d.Create, Events: d.Events}
		if !nodeStatusEqual(n, d.Status) {
			step.To = d.Status.DeepCopy()
			nodes[i] = d.Status
		}
		plan.Steps = append(plan.Steps, step)
		requeue(d.RequeueAfter)
	}

	if len(nodes) > 0 {
		blocked, wait, err := planStarts(&plan, nodes, obs, p, now)
		if err != nil {
			return Plan{}, err
		}
		plan.Blocked = blocked
		requeue(wait)
	}

	if _, err := ApplyConditions(&out, obs, p, now); err != nil {
		return Plan{}, err
	}
	plan.Status = out
	plan.Reason = summarize(plan)
	return plan, nil
}

// planStarts walks the nodes in ring order from the start node and starts
// what the budget allows. It returns why it stopped early and how long a soak
// or a backoff still holds it back.
func planStarts(plan *Plan, nodes []NodeStatus, obs Observation, p Policy, now time.Time) (string, time.Duration, error) {
	start, why, err := StartNode(nodes, obs)
	if err != nil {
		return "", 0, err
	}

	budget := p.Unavailable()
	inTransition, unavailable := 0, 0
	var soakUntil time.Time
	failingOn := map[int32]int{}
	for i, n := range nodes {
		o := obs[n.NodeName]
		if o.Unreachable {
			continue
		}
		if _, seen := failingOn[n.LastFailedRevision]; n.Failing() && !seen {
			failingOn[n.LastFailedRevision] = i
		}
		if n.InTransition() {
			inTransition++
		}
		if n.InTransition() || !o.operandReady() {
			unavailable++
		}
		if p.MinReadyDuration > 0 && o.operandReady() && !o.Operand.ReadySince.IsZero() {
			if until := o.Operand.ReadySince.Add(p.MinReadyDuration); until.After(soakUntil) {
				soakUntil = until
			}
		}
	}

	// Only the node that failed a revision retries it, and only as the start
	// of a pass. A start node held back by a revision another node failed
	// hands the start to that node, so the rollout never waits forever on a
	// retry nobody makes.
	if rev := RevisionToStart(nodes[start], nil, plan.Latest); rev != 0 && !obs[nodes[start].NodeName].Unreachable {
		if f, ok := failingOn[rev]; ok && f != start && !nodes[f].InTransition() {
			why = fmt.Sprintf("%s failed revision %d, which %s would start", nodes[f].NodeName, rev, nodes[start].NodeName)
			start = f
		}
	}
	plan.Start, plan.StartReason = nodes[start].NodeName, why

	var prev *NodeStatus
	for k := range nodes {
		i := (start + k) % len(nodes)
		n := nodes[i]
		o := obs[n.NodeName]
		if o.Unreachable {
			continue
		}
		leader := leaderView(prev)
		prev = &nodes[i]
		rev := RevisionToStart(n, leader, plan.Latest)
		if rev == 0 {
			continue
		}
		retry := n.LastFailedRevision == rev
		ready := o.operandReady()
		switch {
		case p.Paused:
			return fmt.Sprintf("paused: not starting revision %d on %s", rev, n.NodeName), 0, nil
		case !retry && hasKey(failingOn, rev):
			return fmt.Sprintf("revision %d is failing on %s; %s waits", rev, nodes[failingOn[rev]].NodeName, n.NodeName), 0, nil
		case retry && p.RetriesExhausted(n):
			return fmt.Sprintf("%s gave up on revision %d after %s", n.NodeName, rev, failures(n.LastFailedCount)), 0, nil
		case retry && now.Before(p.InstallerBackoff.RetryAt(n)):
			wait := p.InstallerBackoff.RetryAt(n).Sub(now)
			return fmt.Sprintf("%s failed revision %d %s, retrying in %v", n.NodeName, rev, times(n.LastFailedCount), wait), wait, nil
		case inTransition+1 > budget || (ready && unavailable+1 > budget):
			return fmt.Sprintf("maxUnavailable %d reached: %d in transition, %d unavailable; %s waits for revision %d",
				budget, inTransition, unavailable, n.NodeName, rev), 0, nil
		case soakUntil.After(now):
			wait := soakUntil.Sub(now)
			return fmt.Sprintf("operands soaking for another %v before %s starts revision %d", wait, n.NodeName, rev), wait, nil
		}
		to := n
		to.TargetRevision = rev
		nodes[i] = to
		create := installerFor(to)
		reason := fmt.Sprintf("starting revision %d", rev)
		if retry {
			reason = fmt.Sprintf("retrying revision %d after %s", rev, failures(n.LastFailedCount))
		}
		plan.Steps = append(plan.Steps, Step{
			Node: n.NodeName, Reason: reason, From: *n.DeepCopy(), To: to.DeepCopy(), Create: &create,
			Events: []Event{{Type: EventTypeNormal, Reason: EventNodeTargetRevisionChanged, Node: n.NodeName,
				Message: fmt.Sprintf("Updating node %q from revision %d to %d", n.NodeName, n.CurrentRevision, rev)}},
		})
		inTransition++
		if ready {
			unavailable++
		}
	}
	return "", 0, nil
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// failures renders a count of failures: "1 failure", "3 failures".
func failures(n int32) string {
	if n == 1 {
		return "1 failure"
	}
	return fmt.Sprintf("%d failures", n)
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

func summarize(p Plan) string {
	if p.Status.Converged() {
		return fmt.Sprintf("%s at revision %d", nodesAre(len(p.Status.NodeStatuses)), p.Latest)
	}
	for _, s := range p.Steps {
		if s.Acts() {
			return s.Node + ": " + s.Reason
		}
	}
	if len(p.Steps) > 0 {
		return p.Steps[0].Node + ": " + p.Steps[0].Reason
	}
	if p.Blocked != "" {
		return p.Blocked
	}
	if len(p.Status.NodeStatuses) == 0 {
		return "no nodes"
	}
	return "nothing to do"
}

// String renders the plan as a short human-readable text, one line per step.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %d: %s", p.Latest, p.Reason)
	if p.Start != "" {
		fmt.Fprintf(&b, "\nstart %s (%s)", p.Start, p.StartReason)
	}
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "\n  %s: %s", s.Node, s.Reason)
		if s.To != nil {
			if s.From.CurrentRevision != s.To.CurrentRevision {
				fmt.Fprintf(&b, "; current %d->%d", s.From.CurrentRevision, s.To.CurrentRevision)
			}
			if s.From.TargetRevision != s.To.TargetRevision {
				fmt.Fprintf(&b, "; target %d->%d", s.From.TargetRevision, s.To.TargetRevision)
			}
		}
		for _, d := range s.Delete {
			fmt.Fprintf(&b, "; delete %s", d.Name)
		}
		for _, d := range s.DeleteAfter {
			fmt.Fprintf(&b, "; then delete %s", d.Name)
		}
		if s.Create != nil {
			fmt.Fprintf(&b, "; create %s", s.Create.Name)
		}
	}
	if p.Blocked != "" {
		fmt.Fprintf(&b, "\nblocked: %s", p.Blocked)
	}
	if p.RequeueAfter > 0 {
		fmt.Fprintf(&b, "\nrequeue after %v", p.RequeueAfter)
	}
	return b.String()
}

func nodeStatusEqual(a, b NodeStatus) bool {
	if a.NodeName != b.NodeName || a.CurrentRevision != b.CurrentRevision || a.TargetRevision != b.TargetRevision ||
		a.LastFailedRevision != b.LastFailedRevision || a.LastFailedCount != b.LastFailedCount ||
		a.LastFailedReason != b.LastFailedReason || !slices.Equal(a.LastFailedErrors, b.LastFailedErrors) {
		return false
	}
	if (a.LastFailedTime == nil) != (b.LastFailedTime == nil) {
		return false
	}
	return a.LastFailedTime == nil || a.LastFailedTime.Equal(b.LastFailedTime)
}
