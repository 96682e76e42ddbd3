package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Input is everything Decide decides from.
type Input struct {
	// Status is the persisted status.
	Status Status
	// Observation is what the host reported for this pass about every node
	// the rollout covers.
	Observation Observation
	// Policy tunes the rollout.
	Policy Policy
	// Now is the current time.
	Now time.Time
	// Jitter, in [0,1), spreads the retry time of a failure recorded by
	// this decision (Backoff.JitterPercent); the retry time is persisted, so
	// a restart never draws it again.
	Jitter float64
}

// Decision is the whole decision of one sync, the rollout plan, made by
// Decide. It is plain data: it prints (String), compares and can be tested
// without a cluster.
//
// A host acts on it as Controller.Sync does: write Status (when
// StatusChanged) with optimistic concurrency, emit Events, create the
// installers of the steps (each on its own: one that fails is that node's
// failed attempt on a later sync), delete every installer of
// Status.InstallersToDelete, and write Final, keeping in its
// InstallersToDelete those whose delete failed, when any delete succeeded.
type Decision struct {
	// Latest is the latest available revision the decision rolls out.
	Latest int32
	// Start is the node the pass for new installs started with (worst first), and StartReason why.
	Start, StartReason string
	// Steps are the node decisions in the order they must be applied: the
	// nodes that left, the nodes in transition and the nodes whose status
	// changes (by name), then the nodes started, in ring order from Start.
	Steps []NodeDecision
	// Blocked says why no further node was started ("" when nothing held it back).
	Blocked string
	// HeldBy names the unavailable nodes, "name (why)", that hold back the
	// start of a node (nil when none does).
	HeldBy []string
	// Status is the status to write before acting: every step applied,
	// the installers that must go recorded in InstallersToDelete, the
	// conditions set. It shares the memory of the input status where
	// nothing changed: DeepCopy it before changing it.
	Status Status
	// StatusChanged reports whether Status differs from the input status:
	// only then is it written.
	StatusChanged bool
	// Final is the status once every action succeeded: Status without
	// the installers it deletes.
	Final Status
	// Reason is a one-line summary.
	Reason string
	// RequeueAfter is when to look again at the latest (0 = on the next change).
	RequeueAfter time.Duration
}

// Events returns the events of all steps, in step order: the host emits
// them once Status is written.
func (p Decision) Events() []converge.Event {
	var out []converge.Event
	for _, s := range p.Steps {
		out = append(out, s.Events...)
	}
	return out
}

// Decide decides one sync of a rollout from the persisted status, what
// the host observed, the policy and the current time. It is pure and
// deterministic: node statuses come back sorted by name whatever the input
// order. It is linear in the number of nodes (a status the engine wrote is
// already sorted) and its allocations do not grow with the node count.
//
// Nodes that left the observation are dropped (their unfinished installers
// must go); new ones join with no revision. Every node in transition goes
// through NextNodeStatus; a node that is not records an operand that runs
// below its current revision (NodeRevisionRegressed: an event, Degraded, and
// the node is installed again; its current revision never goes down).
// Then, unless the policy is paused or an operand is still soaking
// (MinReadyDuration), the pass walks the reachable nodes in ring order from
// StartNode and starts the revision RevisionToStart gives each one (a node
// already down, the latest revision), within
// MaxUnavailable (see Policy.MaxUnavailable: unreachable nodes, nodes in
// transition, not-ready and regressed operands all count). A node in
// transition whose last failure is not its target counts, for the node
// after it, as already at its target, so that with a budget above 1 healthy
// nodes move together; no healthy node starts a revision another reachable
// node is failing, so a failure does not spread (a node already down may:
// it has nothing to lose, and waiting for it could hold the rollout forever). When unavailable nodes hold a
// start back, Progressing says so at once and Degraded once the hold is
// older than Policy.HoldDegradedAfter, both naming the nodes.
//
// A node that failed the latest revision (its operand failed or was not
// ready in time, which clears the target) retries it as the start of a pass:
// after its RetryTime and while MaxInstallerRetries allows; once they are
// exhausted the rollout stops there and Degraded says so. The retry uses a
// new installer name (InstallerName).
func Decide(in Input) (Decision, error) { return decide(in, nil) }

// decide is Decide; a non-nil aligned holds the observations of exactly the
// status's nodes, in the status's order (sorted by name), and replaces
// in.Observation, so that the shell builds no map.
func decide(in Input, aligned []NodeObservation) (Decision, error) {
	p, now := in.Policy, in.Now
	if err := p.Validate(); err != nil {
		return Decision{}, err
	}
	if err := in.Status.Validate(); err != nil {
		return Decision{}, err
	}
	st := in.Status
	if aligned == nil && len(in.Observation) == 0 && len(st.NodeStatuses) > 0 {
		return Decision{}, input.Invalidf("rollout", "observation", "an empty observation would drop all %d nodes", len(st.NodeStatuses))
	}
	plan := Decision{Latest: st.LatestAvailableRevision}
	requeue := func(d time.Duration) {
		if d > 0 && (plan.RequeueAfter == 0 || d < plan.RequeueAfter) {
			plan.RequeueAfter = d
		}
	}

	out := Status{LatestAvailableRevision: st.LatestAvailableRevision, HeldSince: st.HeldSince,
		InstallersToDelete: slices.Clone(st.InstallersToDelete), Conditions: slices.Clone(st.Conditions)}
	var (
		nodes  []NodeStatus
		views  []NodeObservation
		shared bool
		err    error
	)
	if aligned != nil {
		nodes, views, shared, err = st.NodeStatuses, aligned, true, validateAligned(st.NodeStatuses, aligned)
	} else {
		nodes, views, shared, err = members(&plan, &out, st.NodeStatuses, in.Observation)
	}
	if err != nil {
		return Decision{}, err
	}
	deleting := map[string]bool{}
	for _, inst := range out.InstallersToDelete {
		deleting[inst.Node] = true
	}

	for i := range nodes {
		n := &nodes[i]
		if !n.InTransition() && !idleNeedsWork(n, &views[i], p, now) {
			continue // the common case, decided without copying the node
		}
		nin := NodeInput{Latest: st.LatestAvailableRevision, Observation: views[i], Policy: p, Now: now,
			Jitter: in.Jitter, Deleting: deleting[n.NodeName]}
		var d NodeDecision
		if n.InTransition() {
			d = NextNodeStatus(*n, nin)
		} else {
			d = idleNode(*n, nin)
		}
		if d.To != nil {
			if shared {
				nodes, shared = slices.Clone(nodes), false
			}
			nodes[i] = *d.To
		}
		addDeletes(&out, d.Delete)
		if n.InTransition() || d.Acts() {
			plan.Steps = append(plan.Steps, d)
		}
		requeue(d.RequeueAfter)
	}

	if len(nodes) > 0 {
		var wait time.Duration
		nodes, wait = planStarts(&plan, nodes, shared, views, deleting, p, now)
		requeue(wait)
	}
	out.NodeStatuses = nodes
	requeue(updateHold(&plan, &out, p, now))

	conditionsChanged, err := applyConditions(&out, plan.HeldBy, p, now)
	if err != nil {
		return Decision{}, err
	}
	plan.Status = out
	plan.StatusChanged = conditionsChanged || !sameNodeSlice(nodes, st.NodeStatuses) ||
		len(out.InstallersToDelete) != len(st.InstallersToDelete) || !timeEqual(out.HeldSince, st.HeldSince)
	plan.Final = out
	plan.Final.InstallersToDelete = nil
	plan.Reason = summarize(plan)
	return plan, nil
}

// written names what writing Status changes, for an error: the nodes of
// the steps that change status, each once (a node that joins and starts
// has two steps), or the rollout's own status.
func (p Decision) written() string {
	var names []string
	seen := map[string]bool{}
	for _, s := range p.Steps {
		if (s.To != nil || s.Remove || len(s.Delete) > 0) && !seen[s.Node] {
			seen[s.Node] = true
			names = append(names, s.Node)
		}
	}
	switch len(names) {
	case 0:
		return "the rollout status"
	case 1:
		return "status of node " + names[0]
	}
	return fmt.Sprintf("status of node %s and %d more", names[0], len(names)-1)
}

// sameNodeSlice reports whether a and b are the same memory: a decision
// copies the status's nodes before it changes any of them.
func sameNodeSlice(a, b []NodeStatus) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// timeEqual compares two optional times.
func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// members returns the status nodes that are still observed, sorted by
// name, with the observations aligned to them, plus new observed nodes. A
// node that left gets a Remove step and its unfinished installer must go.
// When nothing joined or left and the status is sorted, the nodes returned
// are the status's own (shared reports it): the caller copies them before
// changing one.
func members(plan *Decision, out *Status, status []NodeStatus, obs Observation) ([]NodeStatus, []NodeObservation, bool, error) {
	if !sortedByName(status) {
		status = sortNodes(status)
	}
	views := make([]NodeObservation, len(status))
	left := false
	for i, n := range status {
		o, ok := obs[n.NodeName]
		if !ok {
			left = true
			break
		}
		if err := o.validate(n.NodeName); err != nil {
			return nil, nil, false, err
		}
		views[i] = o
	}
	if !left && len(status) == len(obs) {
		return status, views, true, nil
	}
	nodes := make([]NodeStatus, 0, len(status))
	views = views[:0]
	for _, n := range status {
		o, ok := obs[n.NodeName]
		if !ok {
			d := NodeDecision{Node: n.NodeName, Remove: true, Reason: "left the cluster"}
			if n.InTransition() && n.InstallerOrderedTime != nil {
				d.Delete = []Installer{installerFor(n)}
			}
			addDeletes(out, d.Delete)
			plan.Steps = append(plan.Steps, d)
			continue
		}
		if err := o.validate(n.NodeName); err != nil {
			return nil, nil, false, err
		}
		nodes = append(nodes, n)
		views = append(views, o)
	}
	if len(nodes) == len(obs) {
		return nodes, views, false, nil
	}
	var joined []string
	for name := range obs {
		if _, found := slices.BinarySearchFunc(nodes, name, func(n NodeStatus, name string) int { return strings.Compare(n.NodeName, name) }); !found {
			joined = append(joined, name)
		}
	}
	slices.Sort(joined)
	for _, name := range joined {
		if name == "" {
			return nil, nil, false, input.Invalidf("rollout", "observation", "a node with an empty name")
		}
		if err := obs[name].validate(name); err != nil {
			return nil, nil, false, err
		}
		n := NodeStatus{NodeName: name}
		plan.Steps = append(plan.Steps, NodeDecision{Node: name, To: &n, Reason: "joined the cluster"})
		nodes = append(nodes, n)
		views = append(views, obs[name])
	}
	idx := make([]int, len(nodes))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(nodes[a].NodeName, nodes[b].NodeName) })
	sortedNodes, sortedViews := make([]NodeStatus, len(nodes)), make([]NodeObservation, len(nodes))
	for i, j := range idx {
		sortedNodes[i], sortedViews[i] = nodes[j], views[j]
	}
	return sortedNodes, sortedViews, false, nil
}

// validateAligned checks observations aligned with sorted nodes.
func validateAligned(nodes []NodeStatus, views []NodeObservation) error {
	if len(nodes) != len(views) || !sortedByName(nodes) {
		return input.Invalidf("rollout", "observation", "aligned observations of %d nodes for %d nodes", len(views), len(nodes))
	}
	for i, o := range views {
		if err := o.validate(nodes[i].NodeName); err != nil {
			return err
		}
	}
	return nil
}

// addDeletes records installers that must go, once each.
func addDeletes(st *Status, del []Installer) {
	for _, inst := range del {
		if !slices.ContainsFunc(st.InstallersToDelete, func(i Installer) bool { return i.Name == inst.Name }) {
			st.InstallersToDelete = append(st.InstallersToDelete, inst)
		}
	}
	if len(del) > 0 {
		slices.SortFunc(st.InstallersToDelete, func(a, b Installer) int { return strings.Compare(a.Name, b.Name) })
	}
}

// idleNeedsWork reports whether idleNode would change a node not in
// transition: a time in the future, errors to trim, an operand below the
// node's current revision or back from there.
func idleNeedsWork(n *NodeStatus, o *NodeObservation, p Policy, now time.Time) bool {
	if future(n.InstallerOrderedTime, now) || future(n.InstalledTime, now) || future(n.LastFailedTime, now) ||
		(n.RetryTime != nil && n.RetryTime.Sub(now) > p.longestBackoff(n.LastFailedCount)) ||
		needsTrim(n.LastFailedErrors) {
		return true
	}
	if o.Operand.Phase == OperandNotFound {
		return false
	}
	rev := o.Operand.Revision
	return (rev > 0 && rev < n.CurrentRevision && n.RegressedRevision != rev) ||
		(o.Operand.Phase == OperandReady && rev >= n.CurrentRevision && n.RegressedRevision != 0)
}

// idleNode decides a node not in transition: it records an operand that
// runs below the node's current revision (and clears that record once the
// operand is ready at it again), moves times a stepped-back clock left in the future, and
// trims failure errors persisted longer than the bounds.
func idleNode(n NodeStatus, in NodeInput) NodeDecision {
	d := NodeDecision{Node: n.NodeName}
	next, changed := reanchored(n, in)
	if needsTrim(next.LastFailedErrors) {
		next.LastFailedErrors = trimErrors(next.LastFailedErrors)
		changed = true
	}
	op := in.Observation.Operand
	seen := op.Phase != OperandNotFound
	switch {
	case seen && op.Revision > 0 && op.Revision < n.CurrentRevision && n.RegressedRevision != op.Revision:
		next.RegressedRevision = op.Revision
		changed = true
		d.Reason = fmt.Sprintf("operand runs revision %d below its current revision %d", op.Revision, n.CurrentRevision)
		d.Events = []converge.Event{{Type: converge.EventTypeWarning, Reason: ReasonNodeRevisionRegressed,
			Message: fmt.Sprintf("Node %q runs revision %d below its current revision %d; installing revision %d again",
				n.NodeName, op.Revision, n.CurrentRevision, max(n.CurrentRevision, in.Latest))}}
	case op.Phase == OperandReady && op.Revision >= n.CurrentRevision && n.RegressedRevision != 0:
		next.RegressedRevision = 0
		changed = true
		d.Reason = fmt.Sprintf("operand is back at revision %d", op.Revision)
	}
	if changed {
		to := next
		d.To = &to
		if d.Reason == "" {
			d.Reason = "status normalised"
		}
	}
	return d
}

// planStarts walks the nodes in ring order from the start node and starts
// what the budget allows. It returns the nodes (copied before the first
// start when shared) and how long a soak or a backoff still holds it back.
func planStarts(plan *Decision, nodes []NodeStatus, shared bool, views []NodeObservation, deleting map[string]bool, p Policy, now time.Time) ([]NodeStatus, time.Duration) {
	start, why := startNode(nodes, views)

	budget := p.maxUnavailable()
	inTransition, unavailable := 0, 0
	var soakUntil time.Time
	failingOn := map[int32]int{}
	for i := range nodes {
		n, o := &nodes[i], &views[i]
		if n.InTransition() {
			inTransition++
		}
		if o.Unreachable || n.InTransition() || !o.operandReady() || n.RegressedRevision != 0 {
			unavailable++
		}
		if o.Unreachable {
			continue
		}
		if _, seen := failingOn[n.LastFailedRevision]; n.Failing() && !seen {
			failingOn[n.LastFailedRevision] = i
		}
		if p.MinReadyDuration.Duration > 0 && o.operandReady() && !o.Operand.ReadySince.IsZero() && !o.Operand.ReadySince.After(now) {
			if until := o.Operand.ReadySince.Add(p.MinReadyDuration.Duration); until.After(soakUntil) {
				soakUntil = until
			}
		}
	}

	// Only the node that failed a revision retries it, and only as the start
	// of a pass. A start node held back by a revision another node failed
	// hands the start to that node, so the rollout never waits forever on a
	// retry nobody makes.
	if rev := RevisionToStart(nodes[start], nil, plan.Latest); rev != 0 && !views[start].Unreachable {
		if f, ok := failingOn[rev]; ok && f != start && !nodes[f].InTransition() {
			why = fmt.Sprintf("%s failed revision %d, which %s would start", nodes[f].NodeName, rev, nodes[start].NodeName)
			start = f
		}
	}
	plan.Start, plan.StartReason = nodes[start].NodeName, why

	var prev *NodeStatus
	var backoff time.Duration // the start node's retry waits this long
	for k := range nodes {
		i := (start + k) % len(nodes)
		o := &views[i]
		if o.Unreachable {
			continue
		}
		leader := leaderView(prev)
		prev = &nodes[i]
		if nodes[i].InTransition() {
			continue
		}
		n := nodes[i]
		rev := RevisionToStart(n, leader, plan.Latest)
		down := isDown(&n, o)
		if !n.InTransition() && down && n.CurrentRevision < plan.Latest && !(n.Failing() && n.LastFailedRevision == plan.Latest) {
			// A node already down goes straight to the latest revision,
			// whatever its leader runs: it has nothing to lose.
			rev = plan.Latest
		}
		if rev == 0 || deleting[n.NodeName] {
			continue
		}
		retry := n.LastFailedRevision == rev && n.Failing()
		if retry && i != start {
			continue // only the start of a pass retries a revision it failed
		}
		// A node held back is skipped, not the end of the walk: a node
		// further on that is already down may still start (it takes
		// nothing more down, and waiting for it could hold the rollout
		// forever); a healthy one meets the same checks.
		switch {
		case p.Paused:
			block(plan, nil, "paused: not starting revision %d on %s", rev, n.NodeName)
			return nodes, 0
		case !retry && !down && hasKey(failingOn, rev) && failingOn[rev] != i:
			block(plan, nil, "revision %d is failing on %s; %s waits", rev, nodes[failingOn[rev]].NodeName, n.NodeName)
			continue
		case retry && p.retriesExhausted(n):
			block(plan, nil, "%s gave up on revision %d after %s", n.NodeName, rev, failures(n.LastFailedCount))
			continue
		case retry && now.Before(p.retryAt(n)):
			wait := p.retryAt(n).Sub(now)
			block(plan, nil, "%s failed revision %d %s, retrying in %v", n.NodeName, rev, times(n.LastFailedCount), wait)
			backoff = wait
			continue
		case inTransition+1 > budget:
			// Nodes installing hold the rest back; one that is
			// unreachable may do so for good: report it.
			block(plan, heldBy(nodes, views, true), "maxUnavailable %d reached: %d in transition, %d unavailable; %s waits for revision %d",
				budget, inTransition, unavailable, n.NodeName, rev)
			return nodes, backoff
		case !down && unavailable+1 > budget:
			block(plan, heldBy(nodes, views, false), "maxUnavailable %d reached: %d in transition, %d unavailable; %s waits for revision %d",
				budget, inTransition, unavailable, n.NodeName, rev)
			continue
		case soakUntil.After(now):
			wait := min(soakUntil.Sub(now), p.MinReadyDuration.Duration)
			block(plan, nil, "operands soaking for another %v before %s starts revision %d", wait, n.NodeName, rev)
			return nodes, wait
		}
		to := n
		to.TargetRevision = rev
		to.InstallerOrderedTime, to.InstalledTime = metaTime(now), nil
		if shared {
			nodes, shared = slices.Clone(nodes), false
		}
		nodes[i] = to
		prev = &nodes[i]
		create := installerFor(to)
		reason := fmt.Sprintf("starting revision %d", rev)
		if retry {
			reason = fmt.Sprintf("retrying revision %d after %s", rev, failures(n.LastFailedCount))
		}
		plan.Steps = append(plan.Steps, NodeDecision{
			Node: n.NodeName, Reason: reason, To: &to, Create: &create,
			Events: []converge.Event{{Type: converge.EventTypeNormal, Reason: ReasonNodeTargetRevisionChanged,
				Message: fmt.Sprintf("Updating node %q from revision %d to %d because %s", n.NodeName, n.CurrentRevision, rev, reason)}},
		})
		inTransition++
		if !down {
			unavailable++
		}
	}
	return nodes, backoff
}

// block records why the walk held a node back, unless an earlier node
// already explains it.
func block(plan *Decision, heldBy []string, format string, args ...any) {
	if plan.Blocked != "" {
		return
	}
	plan.Blocked, plan.HeldBy = fmt.Sprintf(format, args...), heldBy
}

// isDown reports whether a reachable node is already unavailable: its
// operand is not ready or runs below its current revision. Starting it takes
// nothing more down.
func isDown(n *NodeStatus, o *NodeObservation) bool {
	return !o.operandReady() || n.RegressedRevision != 0
}

// heldBy names the unavailable nodes that are not simply installing (only
// the unreachable ones with onlyUnreachable): they hold a start back. It is
// nil when every unavailable node is in transition and reachable (the
// rollout is moving, not held).
func heldBy(nodes []NodeStatus, views []NodeObservation, onlyUnreachable bool) []string {
	var out []string
	for i, n := range nodes {
		o := views[i]
		why := ""
		switch {
		case o.Unreachable:
			why = "unreachable"
		case onlyUnreachable:
			continue
		case n.InTransition():
			continue
		case n.RegressedRevision != 0:
			why = fmt.Sprintf("runs revision %d below %d", n.RegressedRevision, n.CurrentRevision)
		case !o.operandReady():
			why = "operand not ready"
		default:
			continue
		}
		out = append(out, n.NodeName+" ("+why+")")
	}
	return out
}

// updateHold keeps Status.HeldSince: set when a hold starts, cleared when it
// ends, moved to now if it lies in the future. It returns how long until
// the hold turns Degraded.
func updateHold(plan *Decision, st *Status, p Policy, now time.Time) time.Duration {
	if len(plan.HeldBy) == 0 {
		st.HeldSince = nil
		return 0
	}
	if st.HeldSince == nil || st.HeldSince.After(now) {
		st.HeldSince = metaTime(now)
	}
	if left := st.HeldSince.Add(p.holdDegradedAfter()).Sub(now); left > 0 {
		return left
	}
	return 0
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
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

func summarize(p Decision) string {
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

// String renders the decision as a short human-readable text, one line per step.
func (p Decision) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %d: %s", p.Latest, p.Reason)
	if p.Start != "" {
		fmt.Fprintf(&b, "\nstart %s (%s)", p.Start, p.StartReason)
	}
	for _, s := range p.Steps {
		fmt.Fprintf(&b, "\n  %s: %s", s.Node, s.Reason)
		if s.Remove {
			b.WriteString("; remove")
		}
		if s.To != nil {
			fmt.Fprintf(&b, "; current %d, target %d", s.To.CurrentRevision, s.To.TargetRevision)
		}
		for _, d := range s.Delete {
			fmt.Fprintf(&b, "; delete %s", d.Name)
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
