package rollout

import (
	"fmt"
	"time"

	"github.com/converge-dev/converge"
)

// inTransition decides a node moving to its target revision, in the order
// NextNodeStatus documents: ready at its target, what its operand runs, a
// new fallback, a newer revision, and else what its installer shows.
func (x *nodeDecider) inTransition() {
	if x.readyAtTarget() {
		return
	}
	x.followOperand()
	if obs := x.in.Observation; newFallback(x.next, obs.Operand, obs.Installer) {
		x.observedFallback()
		return
	}
	if x.superseded() {
		return
	}
	x.installer()
}

// readyAtTarget: an operand ready at the target, or above it, means the
// node is done; it never installs a revision below one it runs.
func (x *nodeDecider) readyAtTarget() bool {
	n, op := x.next, x.in.Observation.Operand
	if op.Phase != OperandReady || op.fallback() || op.Revision < n.TargetRevision {
		return false
	}
	to := x.to()
	to.CurrentRevision, to.TargetRevision, to.RegressedRevision, to.OperandMissing = op.Revision, 0, 0, false
	to.endAttempt()
	x.d.Reason = "static pod is ready"
	if op.Revision != n.TargetRevision {
		x.d.Reason = fmt.Sprintf("its operand runs revision %d, above its target %d", op.Revision, n.TargetRevision)
	}
	if op.Revision != n.CurrentRevision {
		x.event(converge.EventTypeNormal, ReasonNodeCurrentRevisionChanged,
			"Updated node %q from revision %d to %d because %s", n.NodeName, n.CurrentRevision, op.Revision, x.d.Reason)
	}
	return true
}

// followOperand: what the operand runs is the truth, while the node moves
// on: an operand ready above the current revision (below the target) is
// the current one, and one at or above it is not missing or regressed,
// whatever the target.
func (x *nodeDecider) followOperand() {
	n, op := x.next, x.in.Observation.Operand
	if op.fallback() || op.Phase == OperandNotFound || op.Revision < n.CurrentRevision {
		return
	}
	switch {
	case op.Phase == OperandReady && op.Revision > n.CurrentRevision && op.Revision < n.TargetRevision:
		to := x.to()
		to.CurrentRevision, to.RegressedRevision, to.OperandMissing = op.Revision, 0, false
		x.event(converge.EventTypeNormal, ReasonNodeCurrentRevisionChanged,
			"Updated node %q from revision %d to %d because its operand runs revision %d", n.NodeName, n.CurrentRevision, op.Revision, op.Revision)
	case n.OperandMissing || (n.RegressedRevision != 0 && op.Phase == OperandReady):
		to := x.to()
		to.RegressedRevision, to.OperandMissing = 0, false
	}
}

// superseded: a newer revision supersedes the target at once, unless the
// policy is paused or it is one the node failed and has not reached: that
// is a retry, which waits for its backoff as the start of a later pass.
// The new installer waits for the old one to go.
func (x *nodeDecider) superseded() bool {
	n, latest := x.next, x.in.Latest
	if latest <= n.TargetRevision || x.in.Policy.Paused || (latest == n.LastFailedRevision && n.LastFailedRevision > n.CurrentRevision) {
		return false
	}
	to := x.to()
	to.TargetRevision = latest
	to.endAttempt()
	x.d.Reason = "new revision pending"
	x.event(converge.EventTypeNormal, ReasonNodeTargetRevisionChanged,
		"Updating node %q from revision %d to %d because revision %d superseded %d",
		n.NodeName, n.CurrentRevision, latest, latest, n.TargetRevision)
	if attempted(n, x.in.Observation.Installer) || x.in.Deleting {
		x.requeue(time.Second) // the new installer waits for the old one to go
	} else {
		x.order()
	}
	return true
}

// installer decides from what the installer of the target and attempt
// shows: missing (ordered and not seen yet, disappeared, installed, or to
// create), pending or running (until InstallerPendingTimeout), failed, or
// succeeded. An installer shown in any phase is seen.
func (x *nodeDecider) installer() {
	n, inst := x.next, x.in.Observation.Installer
	name := InstallerName(n)
	if n.InstallerNotSeen && inst.Phase != InstallerNotFound {
		x.to().InstallerNotSeen = false
	}
	switch inst.Phase {
	case InstallerNotFound:
		switch {
		case n.InstallerOrderedTime != nil && n.InstalledTime == nil && n.InstallerNotSeen:
			x.ensureOrdered(name)
		case n.InstallerOrderedTime != nil && n.InstalledTime == nil:
			x.fail(ReasonInstallerPodDisappeared, []string{fmt.Sprintf("installer %s disappeared before it finished", name)},
				fmt.Sprintf("Installer %s for revision %d on node %q disappeared before it finished", name, n.TargetRevision, n.NodeName))
		case n.InstalledTime != nil:
			x.waitForOperand()
		default:
			x.missingInstaller()
		}
	case InstallerPending, InstallerRunning:
		x.installerRunning(name)
	case InstallerFailed:
		x.fail(ReasonInstallerPodFailed, installerErrors(name, inst), "")
	case InstallerSucceeded:
		if n.InstalledTime == nil {
			x.to().InstalledTime = metaTime(x.in.Now)
		}
		x.waitForOperand()
	}
}

// installerRunning waits for the installer name, pending or running, and
// records an InstallerPodFailed failure InstallerPendingTimeout after the
// engine ordered it (its start time for a status without the order).
func (x *nodeDecider) installerRunning(name string) {
	n, inst, now := x.next, x.in.Observation.Installer, x.in.Now
	x.d.Reason = fmt.Sprintf("installer %s is %s", name, inst.Phase)
	if inst.Message != "" {
		x.d.Reason += ": " + inst.Message
	}
	timeout := x.in.Policy.InstallerPendingTimeout.Duration
	if timeout <= 0 {
		return
	}
	since := inst.StartTime
	if n.InstallerOrderedTime != nil {
		since = n.InstallerOrderedTime.Time
	}
	if since.IsZero() {
		since = now
		x.to().InstallerOrderedTime = metaTime(now)
	}
	if waited := min(max(now.Sub(since), 0), timeout); waited < timeout {
		x.requeue(timeout - waited)
		return
	}
	x.fail(ReasonInstallerPodFailed, []string{fmt.Sprintf("installer %s did not finish within %v (%s)", name, timeout, inst.Phase)}, "")
}

// missingInstaller creates the installer of a node in transition unless
// something holds it back.
func (x *nodeDecider) missingInstaller() {
	n, p, now := x.next, x.in.Policy, x.in.Now
	name := InstallerName(n)
	retry := (n.LastFailedRevision == n.TargetRevision && n.Failing()) || reinstallsInFallback(n, n.TargetRevision)
	switch {
	case retry && p.retriesExhausted(n):
		x.d.Reason = fmt.Sprintf("gave up on revision %d after %s", n.TargetRevision, failures(n.LastFailedCount))
	case retry && now.Before(p.retryAt(n)):
		x.requeue(p.retryAt(n).Sub(now))
		x.d.Reason = fmt.Sprintf("installer failed %s, retrying in %v", times(n.LastFailedCount), x.d.RequeueAfter)
	case !x.createBlocked(name):
		x.order()
	}
}

// ensureOrdered creates again the installer the engine ordered and no
// observation has shown yet: the process may have died before creating it,
// or the host's pod cache has not seen it. That is no failed attempt: the
// same installer, no event, no backoff, no retry spent; unless the node is
// unreachable, the policy is paused, or an older installer of it is still
// being deleted. A node that is up and held (MaxUnavailable is reached
// since the order) has its order withdrawn: it waits between attempts.
func (x *nodeDecider) ensureOrdered(name string) {
	if x.createBlocked(name) {
		return
	}
	if x.in.Held && !isDown(&x.next, &x.in.Observation) {
		x.to().endAttempt()
		x.d.held = true
		x.d.Reason = "maxUnavailable reached, withdrawing the order of installer " + name + ", which was never seen"
		return
	}
	create := installerFor(x.next)
	x.d.Create = &create
	x.d.Reason = "installer " + name + " ordered and not seen yet, ensuring it"
}

// createBlocked reports, with the decision's reason, whether the installer
// name of a node waits: the policy is paused, the node is unreachable, or an
// older installer of it is still being deleted.
func (x *nodeDecider) createBlocked(name string) bool {
	switch {
	case x.in.Policy.Paused:
		x.d.Reason = "paused before creating installer " + name
	case x.in.Observation.Unreachable:
		x.d.Reason = "node is unreachable, not creating installer " + name
	case x.in.Deleting:
		x.d.Reason = "waiting for an older installer to be deleted before creating " + name
	default:
		return false
	}
	return true
}

// order records that the installer of the new status's target and attempt
// is ordered and asks for its creation, unless the node is unreachable, the
// policy is paused, or the node is held and up.
func (x *nodeDecider) order() {
	if x.in.Observation.Unreachable || x.in.Policy.Paused {
		return
	}
	if x.in.Held && !isDown(&x.next, &x.in.Observation) {
		x.d.held = true
		x.d.Reason = "maxUnavailable reached, not creating installer " + InstallerName(x.next)
		return
	}
	to := x.to()
	to.order(x.in.Now)
	create := installerFor(*to)
	x.d.Create = &create
	if x.d.Reason == "" {
		x.d.Reason = "creating installer " + create.Name
	}
}

// waitForOperand decides a node whose installer succeeded: the operand
// failed at the target, did not become ready in time (a failure, or a
// fallback), or is awaited.
func (x *nodeDecider) waitForOperand() {
	n, p, now := x.next, x.in.Policy, x.in.Now
	op := x.in.Observation.Operand
	switch {
	case op.Phase == OperandFailed && op.Revision == n.TargetRevision && !op.fallback():
		msg := op.Message
		if msg == "" {
			msg = fmt.Sprintf("static pod of revision %d failed without a message", n.TargetRevision)
		}
		x.fail(ReasonOperandFailed, []string{msg}, "")
		x.to().TargetRevision = 0
		return
	case op.Phase == OperandNotFound || op.Revision == n.TargetRevision:
		x.d.Reason = "static pod is pending"
	default:
		x.d.Reason = fmt.Sprintf("waiting for static pod of revision %d, found %d", n.TargetRevision, op.Revision)
	}
	since := now
	if n.InstalledTime != nil {
		since = n.InstalledTime.Time
	}
	waited := max(now.Sub(since), 0)
	fallback, ready := p.FallbackTimeout.Duration, p.OperandReadyTimeout.Duration
	if n.CurrentRevision == 0 || n.TargetRevision <= n.CurrentRevision {
		fallback = 0 // nothing to fall back to, or already at the last good revision
	}
	switch {
	case fallback > 0 && waited >= fallback && (ready <= 0 || fallback <= ready || waited < ready):
		x.decidedFallback(fallback)
	case ready > 0 && waited >= ready:
		x.fail(ReasonOperandNotReady,
			[]string{fmt.Sprintf("static pod of revision %d was not ready within %v of its installer succeeding", n.TargetRevision, ready)}, "")
		x.to().TargetRevision = 0
	default:
		if fallback > 0 {
			x.requeue(fallback - waited)
		}
		if ready > 0 {
			x.requeue(ready - waited)
		}
	}
}

// reinstallsInFallback reports whether installing rev on a node in fallback
// is a retry, after an install below the revision it fell back from failed,
// of a revision below that one (its current revision, or one its leader
// runs): it waits for RetryTime, which spaces both backoffs.
func reinstallsInFallback(n NodeStatus, rev int32) bool {
	return rev < n.LastFailedRevision && n.LastFailedCount > 0 && n.fallenBack()
}

// attempted reports whether the node's current attempt has an installer
// that may exist: the engine ordered it, or the host reports it.
func attempted(n NodeStatus, inst InstallerState) bool {
	return n.InTransition() && (n.InstallerOrderedTime != nil || inst.Phase != InstallerNotFound)
}

// awaitsCreate reports whether the node's ordered installer was never seen
// and is missing: the next sync creates it, it may not run yet.
func awaitsCreate(n *NodeStatus, o *NodeObservation) bool {
	return n.InstallerNotSeen && n.InstallerOrderedTime != nil && n.InstalledTime == nil && o.Installer.Phase == InstallerNotFound
}

// installing reports whether a node in transition may have its operand
// taken down by its attempt: an installer ordered and not seen succeed
// (which may still run), or one seen succeed (the operand is being
// replaced). A node in transition between attempts (backing off, waiting to
// create its next installer) is not installing.
func installing(n *NodeStatus, o *NodeObservation) bool {
	return n.InTransition() && (n.InstallerOrderedTime != nil || n.InstalledTime != nil ||
		o.Installer.Phase == InstallerPending || o.Installer.Phase == InstallerRunning)
}
