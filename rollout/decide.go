package rollout

import (
	"slices"
	"time"

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
	// Now is the current time; the zero time is refused.
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
	// Generation is the generation of the resource the policy and the
	// latest revision come from (its metadata.generation; 0 when the host
	// has none): the decided status' ObservedGeneration, which never goes
	// down. A negative generation is refused.
	Generation int64
}

// Decision is the whole decision of one sync, the rollout plan, made by
// Decide. It is plain data: it prints (String), compares and can be tested
// without a cluster.
//
// A host acts on it as Controller.Sync does: write Status (when
// StatusChanged) with optimistic concurrency, emit Events, create the
// installers of the steps (each on its own), delete every installer of
// Status.InstallersToDelete, and write Final, keeping in its
// InstallersToDelete those whose delete failed, when any delete succeeded
// or a create was refused; Controller.Sync records each refused create in
// that write as its node's failed attempt (ReasonInstallerCreateFailed).
// A decision with an Unadmitted start is not acted on: the host asks its
// gate about it and decides again with the answer.
type Decision struct {
	// Result holds the events of all steps, in step order, which the host
	// emits once Status is written, and when to look again at the latest
	// (RequeueAfter 0: on the next change).
	converge.Result
	// Latest is the latest available revision the decision rolls out.
	Latest int32
	// Start is the node the pass for new installs started with (worst first), and StartReason why.
	Start, StartReason string
	// Steps are the node decisions in the order they must be applied: the
	// nodes that left, the nodes in transition and the nodes whose status
	// changes (by name), then the nodes started, in ring order from Start.
	Steps []NodeDecision
	// Holds are everything that keeps a node from starting, sorted and
	// each once (nil when nothing does); Status.Holds persists the first
	// converge.MaxHolds. Progressing renders them at once, and Degraded
	// those that hold the rollout (not a pause or a soak alone) once
	// Status.HeldSince is older than Policy.HoldDegradedAfter.
	Holds []converge.Hold
	// Unadmitted is the first start the gate (Input.Gated) has not answered
	// for, to ask it about (nil when there is none).
	Unadmitted *Disruption
	// Status is the status to write before acting: every step applied,
	// the installers that must go recorded in InstallersToDelete, the
	// holds and conditions set. It shares the memory of the input status
	// and of Holds where nothing changed: DeepCopy it before changing it.
	Status Status
	// StatusChanged reports whether Status differs from the input status:
	// only then is it written.
	StatusChanged bool
	// Final is the status once every action succeeded: Status without
	// the installers it deletes.
	Final Status
	// Reason is a one-line summary.
	Reason string
}

// Decide decides one sync of a rollout from the persisted status, what
// the host observed, the policy and the current time: which nodes leave,
// join or were replaced (see Observation and NodeObservation.UID), what
// each node's observation means (NextNodeStatus), which installers go, and
// which nodes start, in ring order from StartNode, within the rules of the
// package documentation (what counts as unavailable, failures, fallbacks,
// the gate, the pause, the soak). Whatever keeps a node from starting is a
// hold in Holds.
//
// It is pure and deterministic: node statuses come back sorted by name
// whatever the input order. It is linear in the number of nodes (a status
// the engine wrote is already sorted) and its allocations do not grow with
// the node count. Bad input (see Status.Validate, Policy.Validate, an
// empty observation of a status with nodes, a zero Now) is an error
// matching converge.ErrInvalid.
func Decide(in Input) (Decision, error) { return decide(in, nil) }

// decider holds one decision in the making.
type decider struct {
	in Input
	// d is the decision so far; d.Status the status being decided.
	d Decision
	members
	going
	holds  []converge.Hold
	budget budget
	fallbacks
	// asked is the node Decision.Unadmitted is about.
	asked int
}

// decide is Decide; a non-nil aligned holds the observations of exactly the
// status's nodes, in the status's order (sorted by name), and replaces
// in.Observation, so that the shell builds no map.
func decide(in Input, aligned []NodeObservation) (Decision, error) {
	if err := validateInput(&in, aligned); err != nil {
		return Decision{}, err
	}
	if aligned != nil {
		x := newDecider(in)
		x.nodes, x.views, x.shared = in.Status.NodeStatuses, aligned, true
		return x.decide()
	}
	return withViews(len(in.Status.NodeStatuses), func(buf []NodeObservation) (Decision, error) {
		x := newDecider(in)
		if err := x.align(in.Status.NodeStatuses, in.Observation, buf); err != nil {
			return Decision{}, err
		}
		return x.decide()
	})
}

// validateInput refuses a bad policy, status or observation, and a zero
// Now.
func validateInput(in *Input, aligned []NodeObservation) error {
	if err := in.Policy.Validate(); err != nil {
		return err
	}
	if err := in.Status.Validate(); err != nil {
		return err
	}
	if in.Now.IsZero() {
		return input.Invalidf("rollout", "input", input.ZeroNow)
	}
	if in.Generation < 0 {
		return input.Invalidf("rollout", "input", "negative Generation %d", in.Generation)
	}
	if aligned != nil {
		return validateAligned(in.Status.NodeStatuses, aligned)
	}
	if len(in.Observation) == 0 && len(in.Status.NodeStatuses) > 0 {
		return input.Invalidf("rollout", "observation", "an empty observation would drop all %d nodes", len(in.Status.NodeStatuses))
	}
	return nil
}

// newDecider starts the decision of in: the status keeps what no step
// changes, and the installers it records for deletion hold their nodes.
func newDecider(in Input) decider {
	st := in.Status
	x := decider{in: in, d: Decision{Latest: st.LatestAvailableRevision}, budget: budget{down: -1}}
	x.d.Status = Status{LatestAvailableRevision: st.LatestAvailableRevision, HeldSince: st.HeldSince,
		InstallersToDelete: slices.Clone(st.InstallersToDelete), Conditions: slices.Clone(st.Conditions),
		ObservedGeneration: max(st.ObservedGeneration, in.Generation)}
	for _, inst := range x.d.Status.InstallersToDelete {
		x.deleting = setAdd(x.deleting, inst.Node)
		x.mayRun = setAdd(x.mayRun, inst.Node)
	}
	return x
}

// decide decides every node, then the starts, then concludes.
func (x *decider) decide() (Decision, error) {
	for i := range x.nodes {
		x.node(i)
	}
	if len(x.nodes) > 0 {
		x.starts()
	}
	x.d.Status.NodeStatuses = x.nodes
	if err := x.conclude(); err != nil {
		return Decision{}, err
	}
	return x.d, nil
}

// conclude renders the holds into the status (Holds, HeldSince, the
// conditions) and sums the decision up: whether the status changed, the
// final status, the events and the summary.
func (x *decider) conclude() error {
	st, out, p, now := &x.in.Status, &x.d.Status, x.in.Policy, x.in.Now
	if p.Paused && !allAtLatest(out) {
		x.hold(pausedHold())
	}
	slices.SortFunc(x.holds, converge.CompareHolds)
	x.d.Holds = slices.Compact(x.holds)
	out.Holds = converge.SortHolds(x.d.Holds)
	x.requeue(updateHeldSince(x.d.Holds, out, p, now))
	conditionsChanged, err := applyConditions(out, x.d.Holds, p, now)
	if err != nil {
		return err
	}
	x.d.StatusChanged = conditionsChanged || !sameNodeSlice(x.nodes, st.NodeStatuses) ||
		len(out.InstallersToDelete) != len(st.InstallersToDelete) || !timeEqual(out.HeldSince, st.HeldSince) ||
		!slices.Equal(out.Holds, st.Holds) || out.ObservedGeneration != st.ObservedGeneration
	x.d.Final = *out
	x.d.Final.InstallersToDelete = nil
	for _, s := range x.d.Steps {
		x.d.Events = append(x.d.Events, s.Events...)
	}
	x.d.Reason = summarize(x.d)
	return nil
}

// allAtLatest reports whether every node of st runs the latest revision
// (or a newer one) and none is in transition or runs below its current one.
func allAtLatest(st *Status) bool {
	for i := range st.NodeStatuses {
		if n := &st.NodeStatuses[i]; n.InTransition() || n.reinstall() || n.CurrentRevision < st.LatestAvailableRevision {
			return false
		}
	}
	return true
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

// hold records what keeps a node from starting.
func (x *decider) hold(h converge.Hold) { x.holds = append(x.holds, h) }

// ask makes inst, the installer that takes node i down, the start the gate
// is asked about, unless another is already: the gate is asked about one
// start at a time, so that it learns what the rollout took down before.
func (x *decider) ask(i int, inst Installer) {
	if x.d.Unadmitted == nil {
		x.d.Unadmitted, x.asked = &Disruption{Installer: inst}, i
	}
}

func setAdd(m map[string]bool, k string) map[string]bool {
	if m == nil {
		m = map[string]bool{}
	}
	m[k] = true
	return m
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// sameNodeSlice reports whether a and b are the same memory: a decision
// copies the status's nodes before it changes any of them.
func sameNodeSlice(a, b []NodeStatus) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
