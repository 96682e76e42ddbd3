package rollout

import (
	"fmt"
	"slices"
	"strings"
	"sync"
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
	// this decision (the backoffs' JitterPercent); the retry time is
	// persisted, so a restart never draws it again.
	Jitter float64
	// Gated says a gate (Config.Gate) must admit every node the decision
	// starts: the first start the gate has not answered for is not made
	// but asked about in Decision.Unadmitted, and no later one is made.
	Gated bool
	// Admissions holds the gate's answers, by the name of the installer a
	// start would create: "" admits the node, any other text holds it and
	// says why.
	Admissions map[string]string
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
// A decision with an Unadmitted start is not acted on: the host asks its
// gate about it and decides again with the answer.
type Decision struct {
	// Latest is the latest available revision the decision rolls out.
	Latest int32
	// Start is the node the pass for new installs started with (worst first), and StartReason why.
	Start, StartReason string
	// Steps are the node decisions in the order they must be applied: the
	// nodes that left, the nodes in transition and the nodes whose status
	// changes (by name), then the nodes started, in ring order from Start.
	Steps []NodeDecision
	// Blocked says why the walk stopped or skipped a node first ("" when
	// nothing held it back).
	Blocked string
	// Holds explain, sorted, everything that holds back the start of a
	// node (nil when nothing does): nodes unavailable past MaxUnavailable,
	// unreachable nodes, the gate, failures, installers not yet deleted.
	// Progressing reports them at once, Degraded once Status.HeldSince is
	// older than Policy.HoldDegradedAfter.
	Holds []string
	// Unadmitted is the first start the gate (Input.Gated) has not answered
	// for, to ask it about (nil when there is none).
	Unadmitted *Disruption
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
// must go); new ones join at the revision their operand runs. A node
// observed with another UID than its status records is a new machine
// under the same name: it starts afresh, and its predecessor's installer
// is deleted. Every node goes through NextNodeStatus, which records what its
// operand shows (a fallback, a regression, a missing operand) and moves a
// node in transition on; an installer no decision wants any more is
// deleted, and until the host confirms it gone its node gets no new
// installer and counts as unavailable.
//
// Then, unless the policy is paused or an operand is still soaking
// (MinReadyDuration), the pass walks the reachable nodes in ring order from
// StartNode and starts the revision RevisionToStart gives each one (a node
// already down, the latest revision), within MaxUnavailable (see
// Policy.MaxUnavailable: unreachable nodes, nodes in transition, not-ready,
// regressed and missing operands, and installers that may still run all
// count). A node in transition whose last failure is not its target
// counts, for the node after it, as already at its target, so that with a
// budget above 1 healthy nodes move together; no healthy node starts a
// revision another reachable node is failing, so a failure does not spread
// (a node already down may: it has nothing to lose, and waiting for it
// could hold the rollout forever), and no healthy node starts a revision
// another node fell back from, until a newer revision supersedes it. With
// Input.Gated, a start the gate has not admitted is not made. Whatever
// holds a start back is explained in Holds: Progressing says so at once and
// Degraded once the hold is older than Policy.HoldDegradedAfter.
//
// A node that failed the latest revision (its operand failed or was not
// ready in time, or it fell back, which clears the target) retries it as the
// start of a pass: after its RetryTime and while MaxInstallerRetries allows;
// once they are exhausted the rollout stops there and Degraded says so. The
// retry uses a new installer name (InstallerName).
func Decide(in Input) (Decision, error) { return decide(in, nil) }

// decider holds one decision in the making.
type decider struct {
	in     Input
	p      Policy
	now    time.Time
	d      Decision
	out    Status
	nodes  []NodeStatus
	views  []NodeObservation
	shared bool // nodes is still the input status's memory
	// deleting names the nodes with an installer the input status already
	// records for deletion: they get no new installer until it is gone.
	deleting map[string]bool
	// retiring names the nodes with an installer this decision records
	// for deletion: they get no new installer in this decision either.
	retiring map[string]bool
	// mayRun names the nodes with an installer recorded for deletion that
	// may still run: those of deleting, and those this decision retires
	// unless they were seen finished. They count as unavailable.
	mayRun map[string]bool
	holds  []string
	// down counts the unavailable nodes while the nodes are decided, once a
	// node in transition needs it (-1 before).
	down   int
	pooled *[]NodeObservation // the aligning buffer, given back once decided
	asked  int                // the node Decision.Unadmitted is about
	// heldRetry is true once MaxUnavailable held a node in transition from
	// its next installer.
	heldRetry bool
	// heldByUnavailable is true once a hold names the unavailable nodes.
	heldByUnavailable bool
	// soaking names the start that waits for operands to soak, if one does.
	soaking string
	// fellBack holds, by revision, the first two nodes in fallback from
	// it (-1: none), once a node in transition needs it (nil before).
	fellBack map[int32][2]int
	// waitsForFallback names the nodes in transition whose next installer
	// waits while another node is in fallback from its revision.
	waitsForFallback map[string]bool
}

// decide is Decide; a non-nil aligned holds the observations of exactly the
// status's nodes, in the status's order (sorted by name), and replaces
// in.Observation, so that the shell builds no map.
func decide(in Input, aligned []NodeObservation) (Decision, error) {
	if err := in.Policy.Validate(); err != nil {
		return Decision{}, err
	}
	if err := in.Status.Validate(); err != nil {
		return Decision{}, err
	}
	st := in.Status
	if aligned == nil && len(in.Observation) == 0 && len(st.NodeStatuses) > 0 {
		return Decision{}, input.Invalidf("rollout", "observation", "an empty observation would drop all %d nodes", len(st.NodeStatuses))
	}
	x := &decider{in: in, p: in.Policy, now: in.Now, d: Decision{Latest: st.LatestAvailableRevision}}
	x.out = Status{LatestAvailableRevision: st.LatestAvailableRevision, HeldSince: st.HeldSince,
		InstallersToDelete: slices.Clone(st.InstallersToDelete), Conditions: slices.Clone(st.Conditions)}
	for _, inst := range x.out.InstallersToDelete {
		x.deleting = setAdd(x.deleting, inst.Node)
		x.mayRun = setAdd(x.mayRun, inst.Node)
	}
	var err error
	if aligned != nil {
		x.nodes, x.views, x.shared, err = st.NodeStatuses, aligned, true, validateAligned(st.NodeStatuses, aligned)
	} else {
		err = x.members(st.NodeStatuses, in.Observation)
		defer x.release()
	}
	if err != nil {
		return Decision{}, err
	}
	x.down = -1
	for i := range x.nodes {
		x.node(i)
	}
	if len(x.nodes) > 0 {
		x.starts()
	}
	x.out.NodeStatuses = x.nodes
	if x.soaking != "" && (len(x.holds) > 0 || x.out.HeldSince != nil) {
		x.hold("%s", x.soaking) // a soak beside or after a hold holds too, until a node moves
	}
	slices.Sort(x.holds)
	x.d.Holds = slices.Compact(x.holds)
	x.requeue(updateHold(x.d.Holds, &x.out, x.p, x.now))

	conditionsChanged, err := applyConditions(&x.out, x.d.Holds, x.p, x.now)
	if err != nil {
		return Decision{}, err
	}
	x.d.Status = x.out
	x.d.StatusChanged = conditionsChanged || !sameNodeSlice(x.nodes, st.NodeStatuses) ||
		len(x.out.InstallersToDelete) != len(st.InstallersToDelete) || !timeEqual(x.out.HeldSince, st.HeldSince)
	x.d.Final = x.out
	x.d.Final.InstallersToDelete = nil
	x.d.Reason = summarize(x.d)
	return x.d, nil
}

func (x *decider) requeue(d time.Duration) {
	if d > 0 && (x.d.RequeueAfter == 0 || d < x.d.RequeueAfter) {
		x.d.RequeueAfter = d
	}
}

// set replaces the status of node i, copying the input's nodes first.
func (x *decider) set(i int, n NodeStatus) {
	if x.shared {
		x.nodes, x.shared = slices.Clone(x.nodes), false
	}
	x.nodes[i] = n
}

// ask makes inst, the installer that takes node i down, the start the gate
// is asked about, unless another is already: the gate is asked about one
// start at a time, so that it learns what the rollout took down before.
func (x *decider) ask(i int, inst Installer) {
	if x.d.Unadmitted == nil {
		x.d.Unadmitted, x.asked = &Disruption{Installer: inst}, i
	}
}

// hold records what holds back a start.
func (x *decider) hold(format string, args ...any) {
	x.holds = append(x.holds, fmt.Sprintf(format, args...))
}

// block records why the walk first stopped or skipped a node.
func (x *decider) block(format string, args ...any) {
	if x.d.Blocked == "" {
		x.d.Blocked = fmt.Sprintf(format, args...)
	}
}

func setAdd(m map[string]bool, k string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[k] = true
	return m
}

// retired records installers that must go, once each; one that may still
// run (not seen finished) makes its node unavailable until it is gone.
func (x *decider) retired(del []Installer, phase InstallerPhase) {
	for _, inst := range del {
		if !slices.ContainsFunc(x.out.InstallersToDelete, func(i Installer) bool { return i.Name == inst.Name }) {
			x.out.InstallersToDelete = append(x.out.InstallersToDelete, inst)
		}
		x.retiring = setAdd(x.retiring, inst.Node)
		if phase != InstallerSucceeded && phase != InstallerFailed {
			x.mayRun = setAdd(x.mayRun, inst.Node)
		}
	}
	if len(del) > 0 {
		slices.SortFunc(x.out.InstallersToDelete, func(a, b Installer) int { return strings.Compare(a.Name, b.Name) })
	}
}

// node decides node i: its identity, then NextNodeStatus.
func (x *decider) node(i int) {
	if !x.nodes[i].InTransition() && !idleNeedsWork(&x.nodes[i], &x.views[i], x.p, x.now) {
		return // the common case, decided without copying the node
	}
	x.identity(i)
	n, o := x.nodes[i], x.views[i]
	// A node in transition between attempts that is up is taken down by its
	// next installer: only within MaxUnavailable.
	up := n.InTransition() && !installing(&n, &o) && !o.Unreachable && !isDown(&n, &o) && !x.mayRun[n.NodeName]
	self := x.self(i)
	held := up && x.downCount()+1-self > x.p.maxUnavailable()
	nin := NodeInput{Latest: x.d.Latest, Observation: o, Policy: x.p, Now: x.now,
		Jitter: x.in.Jitter, Deleting: x.deleting[n.NodeName], Held: held}
	d := NextNodeStatus(n, nin)
	if up && d.Create != nil {
		// Its next installer starts a revision another node fell back
		// from: a node that is up waits, as a start does.
		if rev := d.Create.Revision; x.fellBackOther(i, rev) >= 0 {
			nin.Held = true
			d = NextNodeStatus(n, nin)
			x.waitsForFallback = setAdd(x.waitsForFallback, n.NodeName)
			f := x.nodes[x.fellBackOther(i, rev)].NodeName
			d.Reason = fmt.Sprintf("%s fell back from revision %d, not creating installer %s", f, rev, InstallerName(n))
			x.hold("%s fell back from revision %d: %s waits", f, rev, n.NodeName)
		}
	}
	if up && d.Create != nil && x.in.Gated {
		// Its next installer takes it down: the gate is asked first.
		create := *d.Create
		if answer, asked := x.in.Admissions[create.Name]; !asked || answer != "" {
			nin.Held = true
			d = NextNodeStatus(n, nin)
			if !asked {
				x.ask(i, create)
			} else {
				x.hold("the gate holds %s: %s", n.NodeName, answer)
			}
		}
	}
	if d.To != nil {
		x.set(i, *d.To)
	}
	if up && d.Create != nil && x.down >= 0 && self == 0 {
		x.down++
	}
	x.heldRetry = x.heldRetry || (held && d.held)
	x.retired(d.Delete, o.Installer.Phase)
	if n.InTransition() || d.Acts() {
		x.d.Steps = append(x.d.Steps, d)
	}
	if to := x.nodes[i]; to.InTransition() && x.deleting[n.NodeName] && d.Create == nil && o.Installer.Phase == InstallerNotFound && to.InstallerOrderedTime == nil {
		x.hold("%s waits for its old installer to be deleted", n.NodeName)
	}
	x.requeue(d.RequeueAfter)
}

// identity reconciles node i's status with the UID observed: a status
// without one takes it; a status of another UID is the predecessor's of a
// machine replaced under the same name, and starts afresh at the revision
// the new machine's operand runs, its predecessor's installer deleted.
func (x *decider) identity(i int) {
	n, o := x.nodes[i], x.views[i]
	if o.UID == "" || n.NodeUID == o.UID {
		return
	}
	if n.NodeUID == "" {
		n.NodeUID = o.UID
		x.set(i, n)
		x.d.Steps = append(x.d.Steps, NodeDecision{Node: n.NodeName, Reason: "node UID recorded", To: &n})
		return
	}
	fresh := joining(n.NodeName, o)
	step := NodeDecision{Node: n.NodeName, To: &fresh,
		Reason: fmt.Sprintf("replaced by a new machine (UID %s, was %s)", o.UID, n.NodeUID)}
	if attempted(n, o.Installer) {
		step.Delete = []Installer{installerFor(n)}
		x.retired(step.Delete, o.Installer.Phase)
	}
	x.set(i, fresh)
	x.d.Steps = append(x.d.Steps, step)
}

// fellBackOther returns a node other than i in fallback from rev, or -1
// when there is none or node i fell back from it itself: one whose status
// records the fallback, as the nodes are once decided (those after i as
// predict says), or whose operand runs a fallback for rev. It looks at the
// nodes once, when a node first needs it.
func (x *decider) fellBackOther(i int, rev int32) int {
	if x.fellBack == nil {
		x.fellBack = map[int32][2]int{}
		for j := range x.nodes {
			n := x.nodes[j]
			if j > i {
				n = x.predict(j)
			}
			if n.fallenBack() {
				x.addFellBack(n.LastFailedRevision, j)
			}
			if r := x.views[j].Operand.fallbackFor(); r != 0 {
				x.addFellBack(r, j)
			}
		}
	}
	if n := &x.nodes[i]; (n.fallenBack() && n.LastFailedRevision == rev) || x.views[i].Operand.fallbackFor() == rev {
		return -1 // it fell back from rev itself: it retries it on its own
	}
	f, ok := x.fellBack[rev]
	switch {
	case !ok:
		return -1
	case f[0] != i:
		return f[0]
	}
	return f[1]
}

// predict returns the status node j, not decided yet, will have once
// decided: what its identity and its observation make of it (whether it
// is taken down does not matter).
func (x *decider) predict(j int) NodeStatus {
	n, o := x.nodes[j], x.views[j]
	if o.UID != "" && n.NodeUID != "" && n.NodeUID != o.UID {
		n = joining(n.NodeName, o)
	}
	d := NextNodeStatus(n, NodeInput{Latest: x.d.Latest, Observation: o, Policy: x.p, Now: x.now,
		Jitter: x.in.Jitter, Deleting: x.deleting[n.NodeName], Held: true})
	if d.To != nil {
		return *d.To
	}
	return n
}

func (x *decider) addFellBack(rev int32, j int) {
	f, ok := x.fellBack[rev]
	switch {
	case !ok:
		x.fellBack[rev] = [2]int{j, -1}
	case f[0] != j && f[1] < 0:
		x.fellBack[rev] = [2]int{f[0], j}
	}
}

// joining is the status of a node that joins the rollout: it starts at the
// revision its operand runs.
func joining(name string, o NodeObservation) NodeStatus {
	n := NodeStatus{NodeName: name, NodeUID: o.UID}
	if o.Operand.Phase != OperandNotFound {
		n.CurrentRevision = o.Operand.Revision
	}
	return n
}

// members aligns the observations with the status's nodes that are still
// observed, sorted by name, and adds new observed nodes. A node that left
// gets a Remove step and its unfinished installer must go. When nothing
// joined or left and the status is sorted, the nodes are the status's own
// (x.shared): they are copied before one changes.
func (x *decider) members(status []NodeStatus, obs Observation) error {
	if !sortedByName(status) {
		status = sortNodes(status)
	}
	views := x.scratch(len(status))
	left := false
	for i, n := range status {
		o, ok := obs[n.NodeName]
		if !ok {
			left = true
			break
		}
		if err := o.validate(n.NodeName); err != nil {
			return err
		}
		views[i] = o
	}
	if !left && len(status) == len(obs) {
		x.nodes, x.views, x.shared = status, views, true
		return nil
	}
	nodes := make([]NodeStatus, 0, len(status))
	views = views[:0]
	for _, n := range status {
		o, ok := obs[n.NodeName]
		if !ok {
			d := NodeDecision{Node: n.NodeName, Remove: true, Reason: "left the cluster"}
			if n.InTransition() && n.InstallerOrderedTime != nil {
				d.Delete = []Installer{installerFor(n)}
				x.retired(d.Delete, InstallerNotFound)
			}
			x.d.Steps = append(x.d.Steps, d)
			continue
		}
		if err := o.validate(n.NodeName); err != nil {
			return err
		}
		nodes = append(nodes, n)
		views = append(views, o)
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
			return input.Invalidf("rollout", "observation", "a node with an empty name")
		}
		o := obs[name]
		if err := o.validate(name); err != nil {
			return err
		}
		n := joining(name, o)
		x.d.Steps = append(x.d.Steps, NodeDecision{Node: name, To: &n, Reason: fmt.Sprintf("joined the cluster at revision %d", n.CurrentRevision)})
		nodes = append(nodes, n)
		views = append(views, o)
	}
	if len(joined) > 0 {
		idx := make([]int, len(nodes))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(nodes[a].NodeName, nodes[b].NodeName) })
		sortedNodes, sortedViews := make([]NodeStatus, len(nodes)), make([]NodeObservation, len(nodes)) // rare: nodes joined
		for i, j := range idx {
			sortedNodes[i], sortedViews[i] = nodes[j], views[j]
		}
		nodes, views = sortedNodes, sortedViews
	}
	x.nodes, x.views = nodes, views
	return nil
}

// viewPool holds the buffers that align an Observation with the status's
// nodes: a decision of thousands of nodes needs one the size of all their
// observations, and gives it back once made.
var viewPool sync.Pool

// scratch returns a buffer of n observations from the pool, given back by
// release.
func (x *decider) scratch(n int) []NodeObservation {
	if b, ok := viewPool.Get().(*[]NodeObservation); ok && cap(*b) >= n {
		x.pooled = b
		return (*b)[:n]
	}
	b := make([]NodeObservation, n)
	x.pooled = &b
	return b
}

// release gives the aligning buffer back to the pool, cleared so that it
// holds no observation's memory.
func (x *decider) release() {
	if x.pooled == nil {
		return
	}
	clear((*x.pooled)[:cap(*x.pooled)])
	viewPool.Put(x.pooled)
	x.pooled = nil
}

// validateAligned checks observations aligned with sorted nodes.
func validateAligned(nodes []NodeStatus, views []NodeObservation) error {
	if len(nodes) != len(views) {
		return input.Invalidf("rollout", "observation", "aligned observations of %d nodes for %d nodes", len(views), len(nodes))
	}
	for i, o := range views {
		if err := o.validate(nodes[i].NodeName); err != nil {
			return err
		}
	}
	return nil
}

// idleNeedsWork reports whether NextNodeStatus would change a node not in
// transition: another UID, a time in the future, errors to trim, or an
// operand that is not what the status records.
func idleNeedsWork(n *NodeStatus, o *NodeObservation, p Policy, now time.Time) bool {
	if (o.UID != "" && o.UID != n.NodeUID) ||
		future(n.InstallerOrderedTime, now) || future(n.InstalledTime, now) || future(n.LastFailedTime, now) ||
		retryTooFar(*n, p, now) || needsTrim(n.LastFailedErrors) {
		return true
	}
	op := &o.Operand
	switch {
	case op.fallback():
		return !fallbackRecorded(*n, *op)
	case op.Phase == OperandNotFound:
		return n.CurrentRevision > 0 && !n.OperandMissing
	case n.OperandMissing:
		return true
	}
	rev := op.Revision
	return (op.Phase == OperandReady && rev > n.CurrentRevision) ||
		(rev > 0 && rev < n.CurrentRevision && n.RegressedRevision != rev) ||
		(op.Phase == OperandReady && rev >= n.CurrentRevision && n.RegressedRevision != 0)
}

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
	if x.down < 0 {
		x.down = 0
		for i := range x.nodes {
			if x.unavailable(i) {
				x.down++
			}
		}
	}
	return x.down
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
		return "installing revision " + fmt.Sprint(n.TargetRevision)
	case n.RegressedRevision != 0:
		return fmt.Sprintf("runs revision %d below %d", n.RegressedRevision, n.CurrentRevision)
	case n.OperandMissing:
		return "operand missing"
	case !o.operandReady():
		return "operand not ready"
	}
	return "an old installer may still run"
}

// starts walks the nodes in ring order from the start node and starts what
// the budget, the failures, the gate and the policy allow.
func (x *decider) starts() {
	nodes, views, p, now, latest := x.nodes, x.views, x.p, x.now, x.d.Latest
	start, why := startNode(nodes, views)

	budget := p.maxUnavailable()
	inTransition, unavailable := 0, 0
	var soakUntil time.Time
	failingOn := map[int32]int{}              // the first reachable node failing each revision
	fellBack := map[int32]int{}               // the first node in fallback from each revision
	var unreachable, unreachableIdle []string // unreachable nodes in transition, and waiting for a revision
	for i := range nodes {
		n, o := &nodes[i], &views[i]
		if installing(n, o) {
			inTransition++
		}
		if x.unavailable(i) {
			unavailable++
		}
		if _, seen := fellBack[n.LastFailedRevision]; n.fallenBack() && !seen {
			fellBack[n.LastFailedRevision] = i
		}
		if r := o.Operand.fallbackFor(); r != 0 && !hasKey(fellBack, r) {
			fellBack[r] = i // it runs a fallback for r, whatever its status records since
		}
		if o.Unreachable {
			switch {
			case n.InTransition():
				unreachable = append(unreachable, n.NodeName)
			case n.CurrentRevision < latest || n.reinstall():
				unreachableIdle = append(unreachableIdle, n.NodeName)
			}
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
	if x.heldRetry {
		x.holdByUnavailable(budget)
	}
	x.walk(start, why, budget, inTransition, unavailable, soakUntil, failingOn, fellBack)
	if q := x.d.Unadmitted; q != nil {
		for i := range x.nodes {
			if i != x.asked && x.unavailable(i) {
				q.Down = append(q.Down, x.nodes[i].NodeName)
			}
		}
	}
	if !x.heldByUnavailable { // which names the unreachable nodes not in transition
		unreachable = append(unreachable, unreachableIdle...)
		slices.Sort(unreachable)
	}
	if len(unreachable) > 0 {
		x.hold("unreachable nodes %s cannot move: drop a node that is gone for good from the node list", listNames(unreachable))
	}
}

// walk walks the nodes in ring order from start and starts what the
// budget, the failures, the gate and the policy allow.
func (x *decider) walk(start int, why string, budget, inTransition, unavailable int, soakUntil time.Time, failingOn, fellBack map[int32]int) {
	nodes, views, p, now, latest := x.nodes, x.views, x.p, x.now, x.d.Latest
	// Only the node that failed a revision retries it, and only as the start
	// of a pass. A start node held back by a revision another node failed
	// hands the start to that node, so the rollout never waits forever on a
	// retry nobody makes.
	// A node that is up waits while another node is in fallback from the
	// revision it would start (or retry, in transition): it hands the start
	// to the node in fallback, which alone retries that revision first.
	rev := RevisionToStart(nodes[start], nil, latest)
	if x.waitsForFallback[nodes[start].NodeName] {
		rev = nodes[start].TargetRevision
	}
	if rev != 0 && !views[start].Unreachable {
		if f, ok := fellBack[rev]; ok && f != start && !nodes[f].InTransition() && !views[f].Unreachable && !isDown(&nodes[start], &views[start]) {
			why = fmt.Sprintf("%s fell back from revision %d, which %s would start", nodes[f].NodeName, rev, nodes[start].NodeName)
			start = f
		} else if f, ok := failingOn[rev]; ok && f != start && !nodes[f].InTransition() {
			why = fmt.Sprintf("%s failed revision %d, which %s would start", nodes[f].NodeName, rev, nodes[start].NodeName)
			start = f
		}
	}
	x.d.Start, x.d.StartReason = nodes[start].NodeName, why

	var prev *NodeStatus
	var backoff time.Duration // the start node's retry waits this long
	// Once stop is set no node starts, but every node is still walked, so
	// that every hold is explained whatever stopped the starts.
	stop := false
	for k := range nodes {
		i := (start + k) % len(nodes)
		o := &views[i]
		if o.Unreachable {
			continue
		}
		leader := leaderView(prev)
		prev = &x.nodes[i]
		n := x.nodes[i]
		if n.InTransition() {
			continue
		}
		rev := RevisionToStart(n, leader, latest)
		down := isDown(&n, o)
		if down && n.CurrentRevision < latest && !(n.Failing() && n.LastFailedRevision == latest) {
			// A node already down goes straight to the latest revision,
			// whatever its leader runs: it has nothing to lose.
			rev = latest
		}
		if op := o.Operand; rev != 0 && op.Phase != OperandNotFound && !op.fallback() && op.Revision > rev && op.Revision <= latest {
			// Never below what the operand runs, even failing: that would
			// be a fallback the engine did not decide.
			rev = op.Revision
		}
		if rev == 0 {
			continue
		}
		if x.deleting[n.NodeName] || x.retiring[n.NodeName] {
			// Its next installer may have the name of the one going.
			if x.deleting[n.NodeName] {
				x.hold("%s waits for its old installer to be deleted", n.NodeName)
			}
			x.block("%s waits for its old installer to be deleted", n.NodeName)
			continue
		}
		retry := (n.LastFailedRevision == rev && n.Failing()) || reinstallsInFallback(n, rev)
		if retry && i != start && !down {
			continue // only the start of a pass, or a node already down, retries a revision it failed
		}
		// A node held back is skipped, not the end of the walk: a node
		// further on that is already down may still start (it takes
		// nothing more down, and waiting for it could hold the rollout
		// forever); a healthy one meets the same checks.
		f, fallen := fellBack[rev]
		self := x.self(i)
		switch {
		case p.Paused:
			x.block("paused: not starting revision %d on %s", rev, n.NodeName)
			stop = true
			continue
		case fallen && f != i && !down:
			x.hold("%s fell back from revision %d: %s waits", nodes[f].NodeName, rev, n.NodeName)
			x.block("%s fell back from revision %d; %s waits", nodes[f].NodeName, rev, n.NodeName)
			continue
		case !retry && !down && hasKey(failingOn, rev) && failingOn[rev] != i:
			x.hold("revision %d is failing on %s: %s waits", rev, nodes[failingOn[rev]].NodeName, n.NodeName)
			x.block("revision %d is failing on %s; %s waits", rev, nodes[failingOn[rev]].NodeName, n.NodeName)
			continue
		case retry && p.retriesExhausted(n):
			x.hold("%s gave up on revision %d after %s", n.NodeName, rev, failures(n.LastFailedCount))
			x.block("%s gave up on revision %d after %s", n.NodeName, rev, failures(n.LastFailedCount))
			continue
		case retry && now.Before(p.retryAt(n)):
			backoff = p.retryAt(n).Sub(now)
			x.hold("%s retries revision %d after its backoff", n.NodeName, rev)
			x.block("%s failed revision %d %s, retrying in %v", n.NodeName, rev, times(max(n.LastFailedCount, n.LastFallbackCount)), backoff)
			continue
		case inTransition+1 > budget:
			x.block("maxUnavailable %d reached: %d in transition, %d unavailable; %s waits for revision %d",
				budget, inTransition, unavailable, n.NodeName, rev)
			stop = true
			continue
		case !down && unavailable+1-self > budget:
			x.holdByUnavailable(budget)
			x.block("maxUnavailable %d reached: %d in transition, %d unavailable; %s waits for revision %d",
				budget, inTransition, unavailable, n.NodeName, rev)
			continue
		case stop:
			continue
		}
		to := n
		to.TargetRevision = rev
		to.InstallerOrderedTime, to.InstalledTime = metaTime(now), nil
		create := installerFor(to)
		if x.in.Gated {
			answer, asked := x.in.Admissions[create.Name]
			if !asked {
				x.ask(i, create)
				stop = true
				continue
			}
			if answer != "" {
				x.hold("the gate holds %s: %s", n.NodeName, answer)
				x.block("the gate holds %s: %s", n.NodeName, answer)
				continue
			}
		}
		if soakUntil.After(now) {
			wait := min(soakUntil.Sub(now), p.MinReadyDuration.Duration)
			x.soaking = fmt.Sprintf("operands soaking before %s starts revision %d", n.NodeName, rev)
			x.block("operands soaking for another %v before %s starts revision %d", wait, n.NodeName, rev)
			x.requeue(wait)
			stop = true
			continue
		}
		x.set(i, to)
		prev = &x.nodes[i]
		reason := fmt.Sprintf("starting revision %d", rev)
		if retry {
			reason = fmt.Sprintf("retrying revision %d after %s", rev, failures(max(n.LastFailedCount, n.LastFallbackCount)))
		}
		from := n.CurrentRevision
		if n.RegressedRevision != 0 {
			from = n.RegressedRevision
		}
		x.d.Steps = append(x.d.Steps, NodeDecision{
			Node: n.NodeName, Reason: reason, To: &to, Create: &create,
			Events: []converge.Event{{Type: converge.EventTypeNormal, Reason: ReasonNodeTargetRevisionChanged,
				Message: fmt.Sprintf("Updating node %q from revision %d to %d because %s", n.NodeName, from, rev, reason)}},
		})
		inTransition++
		if !down && self == 0 {
			unavailable++
		}
	}
	x.requeue(backoff)
}

// holdByUnavailable explains a healthy start held back by the unavailable
// nodes that are not simply installing.
func (x *decider) holdByUnavailable(budget int) {
	var names []string
	for i := range x.nodes {
		if x.unavailable(i) && !installing(&x.nodes[i], &x.views[i]) {
			names = append(names, x.nodes[i].NodeName+" ("+x.whyDown(i)+")")
		}
	}
	if len(names) > 0 {
		x.heldByUnavailable = true
		x.hold("maxUnavailable %d reached by unavailable nodes %s: raise maxUnavailable, or drop a node that is gone for good from the node list",
			budget, listNames(names))
	}
}

// updateHold keeps Status.HeldSince: set when a hold starts, cleared when it
// ends, moved to now if it lies in the future. It returns how long until
// the hold turns Degraded.
func updateHold(holds []string, st *Status, p Policy, now time.Time) time.Duration {
	if len(holds) == 0 {
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
	if q := p.Unadmitted; q != nil {
		fmt.Fprintf(&b, "\n  %s: ask the gate about %s, with %s down", q.Installer.Node, q.Installer.Name, listNames(q.Down))
	}
	if p.Blocked != "" {
		fmt.Fprintf(&b, "\nblocked: %s", p.Blocked)
	}
	for _, h := range p.Holds {
		fmt.Fprintf(&b, "\nheld: %s", h)
	}
	if p.RequeueAfter > 0 {
		fmt.Fprintf(&b, "\nrequeue after %v", p.RequeueAfter)
	}
	return b.String()
}
