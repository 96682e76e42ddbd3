package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// going is what the installers recorded for deletion keep from their
// nodes, by node name.
type going struct {
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
}

// retired records installers that must go, once each; one that may still
// run (not seen finished) makes its node unavailable until it is gone.
func (x *decider) retired(del []Installer, phase InstallerPhase) {
	for _, inst := range del {
		if !slices.ContainsFunc(x.d.Status.InstallersToDelete, func(i Installer) bool { return i.Name == inst.Name }) {
			x.d.Status.InstallersToDelete = append(x.d.Status.InstallersToDelete, inst)
		}
		x.retiring = setAdd(x.retiring, inst.Node)
		if phase != InstallerSucceeded && phase != InstallerFailed {
			x.mayRun = setAdd(x.mayRun, inst.Node)
		}
	}
	if len(del) > 0 {
		slices.SortFunc(x.d.Status.InstallersToDelete, func(a, b Installer) int { return strings.Compare(a.Name, b.Name) })
	}
}

// node decides node i: its identity, then NextNodeStatus, held as a start
// is when its next installer would take it down.
func (x *decider) node(i int) {
	if !x.nodes[i].InTransition() && !idleNeedsWork(&x.nodes[i], &x.views[i], x.in.Policy, x.in.Now) {
		return // the common case, decided without copying the node
	}
	x.identity(i)
	n, o := x.nodes[i], x.views[i]
	// A node in transition between attempts, or whose ordered installer no
	// observation showed, that is up is taken down by its next installer:
	// only within MaxUnavailable.
	up := n.InTransition() && (!installing(&n, &o) || awaitsCreate(&n, &o)) && !o.Unreachable && !isDown(&n, &o) && !x.mayRun[n.NodeName]
	self := x.self(i)
	held := up && x.in.Policy.overBudget(x.downCount(), self)
	nin := NodeInput{Latest: x.d.Latest, Observation: o, Policy: x.in.Policy, Now: x.in.Now,
		Jitter: x.in.Jitter, Deleting: x.deleting[n.NodeName], Held: held}
	d := NextNodeStatus(n, nin)
	if up && d.Create != nil {
		d = x.waitForFallback(i, n, nin, d)
	}
	if up && d.Create != nil && x.in.Gated {
		d = x.askGate(i, n, nin, d)
	}
	if d.To != nil {
		x.set(i, *d.To)
	}
	if up && d.Create != nil && x.budget.down >= 0 && self == 0 {
		x.budget.down++
	}
	x.budget.heldRetry = x.budget.heldRetry || (held && d.held)
	x.retired(d.Delete, o.Installer.Phase)
	if n.InTransition() || d.Acts() {
		x.d.Steps = append(x.d.Steps, d)
	}
	if to := x.nodes[i]; to.InTransition() && x.deleting[n.NodeName] && d.Create == nil && o.Installer.Phase == InstallerNotFound && to.InstallerOrderedTime == nil {
		x.hold(oldInstallerHold(n.NodeName))
	}
	x.requeue(d.RequeueAfter)
	x.holdPending(n, x.nodes[i], o.Installer.Phase)
}

// holdPending holds a node whose installer, ordered before this decision
// (from) and still its attempt (to), has not started: it is pending, or
// never seen and missing. The decision looks again when the hold turns
// Degraded.
func (x *decider) holdPending(from, to NodeStatus, phase InstallerPhase) {
	if !to.InTransition() || from.InstallerOrderedTime == nil || to.InstallerOrderedTime == nil || InstallerName(from) != InstallerName(to) ||
		to.InstalledTime != nil || (phase != InstallerPending && !(to.InstallerNotSeen && phase == InstallerNotFound)) {
		return
	}
	ordered := to.InstallerOrderedTime.Time
	x.hold(pendingHold(to.NodeName, InstallerName(to), ordered))
	x.requeue(ordered.Add(x.in.Policy.holdDegradedAfter()).Sub(x.in.Now))
}

// waitForFallback holds the next installer d creates for node i, in
// transition and up, when it starts a revision another node fell back
// from: a node that is up waits, as a start does.
func (x *decider) waitForFallback(i int, n NodeStatus, nin NodeInput, d NodeDecision) NodeDecision {
	rev := d.Create.Revision
	f := x.fellBackOther(i, rev)
	if f < 0 {
		return d
	}
	nin.Held = true
	d = NextNodeStatus(n, nin)
	x.waitsForFallback = setAdd(x.waitsForFallback, n.NodeName)
	d.Reason = fmt.Sprintf("%s fell back from revision %d, not creating installer %s", x.nodes[f].NodeName, rev, InstallerName(n))
	x.hold(fallenBackHold(x.nodes[f].NodeName, rev, n.NodeName))
	return d
}

// askGate holds the next installer d creates for node i, in transition
// and up, until the gate admits it: it takes the node down.
func (x *decider) askGate(i int, n NodeStatus, nin NodeInput, d NodeDecision) NodeDecision {
	create := *d.Create
	answer, asked := x.in.Admissions[create.Name]
	if asked && answer == "" {
		return d
	}
	nin.Held = true
	d = NextNodeStatus(n, nin)
	if !asked {
		x.ask(i, create)
	} else {
		x.hold(gateHold(n.NodeName, answer))
	}
	return d
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
