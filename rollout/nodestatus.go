package rollout

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// NodeDecision is what the engine decided for one node: the status to
// write, the installers that must go, the installer to create and the events
// to emit once the status is written, and why. A decision without a status
// change or an action only explains why the node waits.
type NodeDecision struct {
	// Node is the node's name.
	Node string
	// Reason says in a few words what happens to the node.
	Reason string
	// To is the node's new status, nil when it does not change.
	To *NodeStatus
	// Remove is true when the node left the cluster: its status is dropped.
	Remove bool
	// Delete lists installers that must go: every installer of the node
	// that its new status no longer wants, in whatever phase. They are
	// recorded in Status.InstallersToDelete in the same write as To and
	// deleted after it, and stay recorded until the host confirms each is
	// gone.
	Delete []Installer
	// Create is the installer to ensure once To is written.
	Create *Installer
	// Events are emitted once To is written.
	Events []converge.Event
	// RequeueAfter is when to look at the node again at the latest (0 = on the next change).
	RequeueAfter time.Duration

	held bool // NodeInput.Held kept the node from being taken down
}

// Acts reports whether the decision changes status or calls the host.
func (d NodeDecision) Acts() bool {
	return d.To != nil || d.Remove || len(d.Delete) > 0 || d.Create != nil
}

// NodeInput is what NextNodeStatus decides one node from.
type NodeInput struct {
	// Latest is the latest available revision.
	Latest int32
	// Observation is what the host observed about the node.
	Observation NodeObservation
	// Policy tunes the rollout.
	Policy Policy
	// Now is the current time.
	Now time.Time
	// Jitter, in [0,1), spreads the retry time of a failure recorded now
	// (Policy.InstallerBackoff.JitterPercent).
	Jitter float64
	// Deleting is true while an installer of the node waits in
	// Status.InstallersToDelete: no installer is created on the node until
	// the host confirmed it gone.
	Deleting bool
	// Held is true when the node may not be taken down now (the rollout's
	// MaxUnavailable is reached): a node in transition whose operand is
	// ready gets no new installer meanwhile.
	Held bool
}

// NextNodeStatus decides the next status of one node from what the host
// observed about it; whether a node not in transition starts a revision is
// the rollout's decision (Decide), not the node's.
//
// A node in transition (TargetRevision != 0), first match wins:
//
//   - operand ready at the target or above it: current = that revision,
//     target cleared;
//   - operand a startup monitor's fallback for the target, seen since the
//     installer succeeded: the fallback is recorded
//     (OperandFailedFallback), the target cleared and the node runs its
//     last good revision; it retries after Policy.FallbackBackoff;
//   - a newer latest revision: jump the target to it at once (unless the
//     node failed that revision: a retry waits for its backoff);
//   - installer missing: if the engine ordered it before it finished, it
//     disappeared: a failed attempt (InstallerPodDisappeared); otherwise
//     create it, unless the node waits for its backoff, has exhausted its
//     retries, is unreachable, an older installer of it is still being
//     deleted, or the policy is paused;
//   - installer pending or running: wait, or, InstallerPendingTimeout after
//     the engine ordered it (its start time for a status without the
//     order), record an InstallerPodFailed failure;
//   - installer failed (OOM included): keep the target, record an
//     InstallerPodFailed failure with one "container: message" error per
//     container; the retry uses a new installer name after the backoff;
//   - installer succeeded, operand failed at the target, or not ready
//     OperandReadyTimeout after the installer succeeded: record
//     OperandFailed or OperandNotReady and clear the target; the node
//     retries the revision after the backoff, as the start of a later pass
//     (see Decide);
//   - installer succeeded, operand not ready FallbackTimeout after it: fall
//     back (see Policy.FallbackTimeout): target the current revision again;
//   - installer succeeded, operand not yet at the target: wait.
//
// A failure of a node in fallback whose target is below the revision it fell
// back from (its last good revision, or a revision its leader runs) keeps
// the fallback's record, counts in LastFailedCount and clears the target:
// the node installs again no sooner than the installer backoff, and retries
// the revision it fell back from no sooner than the fallback backoff.
//
// A node not in transition records what its operand shows: a startup
// monitor's fallback (recorded once; the current revision follows the
// operand down), an operand ready above the current revision (adopted as
// current), one below it (RegressedRevision, NodeRevisionRegressed) or none
// at all (OperandMissing, NodeOperandMissing): both are installed again.
//
// Whatever the rule, an installer of the node that its new status no longer
// wants (the attempt ended, the target moved, the node is done) is deleted,
// in whatever phase: no installer outlives its decision. Times in the future
// (a clock that stepped back) are moved to now, so no wait is ever longer
// than the timeout or backoff it comes from.
func NextNodeStatus(n NodeStatus, in NodeInput) NodeDecision {
	x := nodeDecider{d: NodeDecision{Node: n.NodeName}, from: n, next: n, in: in}
	x.normalise()
	if n.InTransition() {
		x.inTransition()
	} else {
		x.idle()
	}
	x.retire()
	if x.d.Reason == "" {
		x.d.Reason = "nothing to do"
		if x.changed {
			x.d.Reason = "status normalised"
		}
	}
	if x.changed {
		to := x.next
		x.d.To = &to
	}
	return x.d
}

// nodeDecider decides one node: from is the status as given, next the status
// as decided so far, which becomes the decision's To if it changed.
type nodeDecider struct {
	d       NodeDecision
	from    NodeStatus
	next    NodeStatus
	changed bool
	in      NodeInput
}

// to returns the new status, recording that it changes.
func (x *nodeDecider) to() *NodeStatus {
	x.changed = true
	return &x.next
}

func (x *nodeDecider) requeue(d time.Duration) {
	if d > 0 && (x.d.RequeueAfter == 0 || d < x.d.RequeueAfter) {
		x.d.RequeueAfter = d
	}
}

func (x *nodeDecider) event(typ, reason, format string, args ...any) {
	x.d.Events = append(x.d.Events, converge.Event{Type: typ, Reason: reason,
		Message: conditions.TruncateMessage(fmt.Sprintf(format, args...), MaxEventMessageLength)})
}

// normalise moves times a stepped-back clock left in the future to now,
// moves a retry time further away than the longest backoff to now plus the
// backoff, and trims failure errors persisted longer than the bounds.
func (x *nodeDecider) normalise() {
	n, now := &x.next, x.in.Now
	if future(n.InstallerOrderedTime, now) || future(n.InstalledTime, now) || future(n.LastFailedTime, now) {
		to := x.to()
		for _, t := range []**metav1.Time{&to.InstallerOrderedTime, &to.InstalledTime, &to.LastFailedTime} {
			if future(*t, now) {
				*t = metaTime(now)
			}
		}
	}
	if retryTooFar(*n, x.in.Policy, now) {
		x.to().RetryTime = metaTimeCeil(now.Add(x.in.Policy.retryDelay(*n, x.in.Jitter)))
	}
	if needsTrim(n.LastFailedErrors) {
		x.to().LastFailedErrors = trimErrors(n.LastFailedErrors)
	}
}

// retryTooFar reports whether a retry time lies further away than the
// longest backoff can give (a clock that stepped back).
func retryTooFar(n NodeStatus, p Policy, now time.Time) bool {
	return n.RetryTime != nil && n.RetryTime.Sub(now) > p.retryDelay(n, 1)
}

// future reports whether t is set and after now.
func future(t *metav1.Time, now time.Time) bool { return t != nil && t.After(now) }

// idle records what the operand of a node not in transition shows.
func (x *nodeDecider) idle() {
	n, op := x.next, x.in.Observation.Operand
	switch {
	case op.fallback():
		if !fallbackRecorded(n, op) {
			x.observedFallback()
		}
	case op.Phase == OperandNotFound:
		if n.CurrentRevision > 0 && !n.OperandMissing {
			to := x.to()
			to.OperandMissing, to.RegressedRevision = true, 0
			x.d.Reason = fmt.Sprintf("operand of revision %d is missing", n.CurrentRevision)
			x.event(converge.EventTypeWarning, ReasonNodeOperandMissing,
				"Node %q runs no operand at its current revision %d; installing revision %d again",
				n.NodeName, n.CurrentRevision, max(n.CurrentRevision, x.in.Latest))
		}
	case op.Phase == OperandReady && op.Revision > n.CurrentRevision:
		to := x.to()
		to.CurrentRevision, to.RegressedRevision, to.OperandMissing = op.Revision, 0, false
		x.d.Reason = fmt.Sprintf("operand runs revision %d, above its current revision %d", op.Revision, n.CurrentRevision)
		x.event(converge.EventTypeNormal, ReasonNodeCurrentRevisionChanged,
			"Updated node %q from revision %d to %d because its operand runs revision %d", n.NodeName, n.CurrentRevision, op.Revision, op.Revision)
	case op.Revision > 0 && op.Revision < n.CurrentRevision:
		if n.RegressedRevision != op.Revision || n.OperandMissing {
			to := x.to()
			to.RegressedRevision, to.OperandMissing = op.Revision, false
			x.d.Reason = fmt.Sprintf("operand runs revision %d below its current revision %d", op.Revision, n.CurrentRevision)
			x.event(converge.EventTypeWarning, ReasonNodeRevisionRegressed,
				"Node %q runs revision %d below its current revision %d; installing revision %d again",
				n.NodeName, op.Revision, n.CurrentRevision, max(n.CurrentRevision, x.in.Latest))
		}
	case n.OperandMissing || (n.RegressedRevision != 0 && op.Phase == OperandReady):
		to := x.to()
		to.OperandMissing, to.RegressedRevision = false, 0
		x.d.Reason = fmt.Sprintf("operand is back at revision %d", op.Revision)
	}
}

// inTransition decides a node moving to its target revision.
func (x *nodeDecider) inTransition() {
	n, p, obs := x.next, x.in.Policy, x.in.Observation
	op, inst := obs.Operand, obs.Installer
	if op.Phase == OperandReady && !op.fallback() && op.Revision >= n.TargetRevision {
		// Ready at the target, or above it: the node is done, and never
		// installs a revision below one it runs.
		to := x.to()
		to.CurrentRevision, to.TargetRevision, to.RegressedRevision, to.OperandMissing = op.Revision, 0, 0, false
		to.InstallerOrderedTime, to.InstalledTime = nil, nil
		x.d.Reason = "static pod is ready"
		if op.Revision != n.TargetRevision {
			x.d.Reason = fmt.Sprintf("its operand runs revision %d, above its target %d", op.Revision, n.TargetRevision)
		}
		if op.Revision != n.CurrentRevision {
			x.event(converge.EventTypeNormal, ReasonNodeCurrentRevisionChanged,
				"Updated node %q from revision %d to %d because %s", n.NodeName, n.CurrentRevision, op.Revision, x.d.Reason)
		}
		return
	}
	if !op.fallback() && op.Phase != OperandNotFound && op.Revision >= n.CurrentRevision {
		// What the operand runs is the truth, while it moves on: an operand
		// at or above the current revision is not missing, whatever the
		// target.
		if op.Phase == OperandReady && op.Revision > n.CurrentRevision && op.Revision < n.TargetRevision {
			to := x.to()
			to.CurrentRevision, to.RegressedRevision, to.OperandMissing = op.Revision, 0, false
			x.event(converge.EventTypeNormal, ReasonNodeCurrentRevisionChanged,
				"Updated node %q from revision %d to %d because its operand runs revision %d", n.NodeName, n.CurrentRevision, op.Revision, op.Revision)
			n = x.next
		} else if n.OperandMissing || (n.RegressedRevision != 0 && op.Phase == OperandReady) {
			to := x.to()
			to.RegressedRevision, to.OperandMissing = 0, false
			n = x.next
		}
	}
	if newFallback(n, op, inst) {
		x.observedFallback()
		return
	}
	// A newer revision supersedes the target at once, unless it is one the
	// node failed and has not reached: that is a retry, which waits for its
	// backoff as the start of a later pass.
	if x.in.Latest > n.TargetRevision && !p.Paused && !(x.in.Latest == n.LastFailedRevision && n.LastFailedRevision > n.CurrentRevision) {
		to := x.to()
		to.TargetRevision = x.in.Latest
		to.InstallerOrderedTime, to.InstalledTime = nil, nil
		x.d.Reason = "new revision pending"
		x.event(converge.EventTypeNormal, ReasonNodeTargetRevisionChanged,
			"Updating node %q from revision %d to %d because revision %d superseded %d",
			n.NodeName, n.CurrentRevision, x.in.Latest, x.in.Latest, n.TargetRevision)
		if attempted(n, inst) || x.in.Deleting {
			x.requeue(time.Second) // the new installer waits for the old one to go
		} else {
			x.order()
		}
		return
	}
	name := InstallerName(n)
	switch inst.Phase {
	case InstallerNotFound:
		switch {
		case n.InstallerOrderedTime != nil && n.InstalledTime == nil:
			x.fail(ReasonInstallerPodDisappeared, []string{fmt.Sprintf("installer %s disappeared before it finished", name)},
				fmt.Sprintf("Installer %s for revision %d on node %q disappeared before it finished", name, n.TargetRevision, n.NodeName))
		case n.InstalledTime != nil:
			x.waitForOperand()
		default:
			x.missingInstaller()
		}
	case InstallerPending, InstallerRunning:
		x.d.Reason = fmt.Sprintf("installer %s is %s", name, inst.Phase)
		if inst.Message != "" {
			x.d.Reason += ": " + inst.Message
		}
		timeout := p.InstallerPendingTimeout.Duration
		if timeout <= 0 {
			return
		}
		since := inst.StartTime
		if n.InstallerOrderedTime != nil {
			since = n.InstallerOrderedTime.Time
		}
		if since.IsZero() {
			since = x.in.Now
			x.to().InstallerOrderedTime = metaTime(x.in.Now)
		}
		if waited := min(max(x.in.Now.Sub(since), 0), timeout); waited < timeout {
			x.requeue(timeout - waited)
			return
		}
		x.fail(ReasonInstallerPodFailed, []string{fmt.Sprintf("installer %s did not finish within %v (%s)", name, timeout, inst.Phase)}, "")
	case InstallerFailed:
		x.fail(ReasonInstallerPodFailed, installerErrors(name, inst), "")
	case InstallerSucceeded:
		if n.InstalledTime == nil {
			x.to().InstalledTime = metaTime(x.in.Now)
		}
		x.waitForOperand()
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

// installing reports whether a node in transition may have its operand
// taken down by its attempt: an installer ordered and not seen succeed
// (which may still run), or one seen succeed (the operand is being
// replaced). A node in transition between attempts (backing off, waiting to
// create its next installer) is not installing.
func installing(n *NodeStatus, o *NodeObservation) bool {
	return n.InTransition() && (n.InstallerOrderedTime != nil || n.InstalledTime != nil ||
		o.Installer.Phase == InstallerPending || o.Installer.Phase == InstallerRunning)
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
	case p.Paused:
		x.d.Reason = "paused before creating installer " + name
	case x.in.Observation.Unreachable:
		x.d.Reason = "node is unreachable, not creating installer " + name
	case x.in.Deleting:
		x.d.Reason = "waiting for an older installer to be deleted before creating " + name
	default:
		x.order()
	}
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
	to.InstallerOrderedTime = metaTime(x.in.Now)
	create := installerFor(*to)
	x.d.Create = &create
	if x.d.Reason == "" {
		x.d.Reason = "creating installer " + create.Name
	}
}

// fail records a failure of the node's target revision: the attempt ends,
// the count goes up (saturating), the retry time is set from the backoff,
// and the event says what happened (message, or one built from the errors).
// A node out of retries gets a second event.
func (x *nodeDecider) fail(reason string, errs []string, message string) {
	n := x.next
	to := x.to()
	if n.TargetRevision < n.LastFailedRevision && n.fallenBack() {
		x.failInFallback(reason, errs, message)
		return
	}
	recordFailure(to, reason, errs, x.in)
	if message == "" {
		what := map[string]string{
			ReasonInstallerPodFailed: fmt.Sprintf("Installer %s for revision %d on node %q failed", InstallerName(n), n.TargetRevision, n.NodeName),
			ReasonOperandFailed:      fmt.Sprintf("Static pod of revision %d on node %q failed", n.TargetRevision, n.NodeName),
			ReasonOperandNotReady:    fmt.Sprintf("Static pod of revision %d on node %q is not ready", n.TargetRevision, n.NodeName),
		}[reason]
		message = what + ": " + strings.Join(to.LastFailedErrors, "; ")
	}
	x.event(converge.EventTypeWarning, reason, "%s", message)
	if x.in.Policy.retriesExhausted(*to) {
		x.d.Reason = fmt.Sprintf("%s %s, giving up on revision %d", reason, times(to.LastFailedCount), n.TargetRevision)
		x.event(converge.EventTypeWarning, ReasonInstallerRetriesExhausted,
			"Node %q gave up on revision %d after %s", n.NodeName, n.TargetRevision, failures(to.LastFailedCount))
		return
	}
	x.requeue(max(to.RetryTime.Sub(x.in.Now), time.Second))
	x.d.Reason = fmt.Sprintf("%s %s, retrying in %v", reason, times(to.LastFailedCount), x.d.RequeueAfter)
}

// failInFallback records that an install below the revision a node in
// fallback fell back from failed (the fallback's own install of the last
// good revision, the reinstall of a missing or regressed operand, or a
// revision its leader runs): the fallback's record stays, since it spaces
// the retry of the revision the node fell back from, and counts the failure
// in LastFailedCount; the node installs nothing before the installer backoff
// for that count has passed, and retries the revision it fell back from no
// sooner than either backoff allows.
func (x *nodeDecider) failInFallback(reason string, errs []string, message string) {
	n := x.next
	to := x.to()
	if to.LastFailedCount < math.MaxInt32 {
		to.LastFailedCount++
	}
	retry := metaTimeCeil(x.in.Now.Add(x.in.Policy.backoff().Delay(to.LastFailedCount, x.in.Jitter)))
	if to.RetryTime == nil || retry.After(to.RetryTime.Time) {
		to.RetryTime = retry
	}
	kept := to.LastFailedErrors
	if len(kept) > 1 {
		kept = kept[:1] // the fallback's
	}
	to.LastFailedErrors = trimErrors(append(slices.Clone(kept), errs...))
	to.TargetRevision, to.InstallerOrderedTime, to.InstalledTime = 0, nil, nil
	what := fmt.Sprintf("the last good revision %d", n.CurrentRevision)
	if n.TargetRevision != n.CurrentRevision {
		what = fmt.Sprintf("revision %d in fallback from revision %d", n.TargetRevision, n.LastFailedRevision)
	}
	if message == "" {
		message = fmt.Sprintf("Installing %s on node %q failed: %s", what, n.NodeName, strings.Join(errs, "; "))
	}
	x.event(converge.EventTypeWarning, reason, "%s", message)
	x.requeue(max(to.RetryTime.Sub(x.in.Now), time.Second))
	x.d.Reason = fmt.Sprintf("%s while installing %s, retrying in %v", reason, what, x.d.RequeueAfter)
}

// recordFailure records a failure of the node's target revision at now.
func recordFailure(n *NodeStatus, reason string, errs []string, in NodeInput) {
	if n.LastFailedRevision == n.TargetRevision {
		if n.LastFailedCount < math.MaxInt32 {
			n.LastFailedCount++
		}
	} else {
		n.LastFailedRevision, n.LastFailedCount, n.LastFallbackCount = n.TargetRevision, 1, 0
	}
	n.LastFailedReason = reason
	n.LastFailedTime = metaTime(in.Now)
	n.RetryTime = metaTimeCeil(n.LastFailedTime.Add(in.Policy.retryDelay(*n, in.Jitter)))
	n.LastFailedErrors = trimErrors(errs)
	n.InstallerOrderedTime, n.InstalledTime = nil, nil
}

// recordFallback records a fallback from rev at now: the fallback count goes
// up (saturating; it starts over for a new revision), the failure count
// starts over (it now counts the failures of installing the revision fallen
// back to), and the retry time is set from the fallback backoff.
func recordFallback(n *NodeStatus, rev int32, errs []string, in NodeInput) {
	if n.LastFailedRevision == rev {
		if n.LastFallbackCount < math.MaxInt32 {
			n.LastFallbackCount++
		}
	} else {
		n.LastFailedRevision, n.LastFallbackCount = rev, 1
	}
	n.LastFailedCount = 0
	n.LastFailedReason = ReasonOperandFailedFallback
	n.LastFailedTime = metaTime(in.Now)
	n.RetryTime = metaTimeCeil(n.LastFailedTime.Add(in.Policy.retryDelay(*n, in.Jitter)))
	n.LastFailedErrors = trimErrors(errs)
	n.InstallerOrderedTime, n.InstalledTime = nil, nil
}

// fallbackRecorded reports whether the status of a node not in transition
// already records the fallback the operand shows: each fallback from a
// revision is recorded once.
func fallbackRecorded(n NodeStatus, op OperandState) bool {
	return n.LastFailedReason == ReasonOperandFailedFallback && n.LastFailedRevision == op.fallbackFor()
}

// newFallback reports whether the operand of a node in transition is a
// fallback from its target that its status does not record yet: one that
// happened no earlier than the node's installer was ordered (an older one
// is what the installer is about to replace), or, without a fallback time,
// one seen once the installer succeeded. A fallback the status records is
// not new while no installer of the target was seen succeeding since (the
// retries since, if any, failed before they installed it), whatever the
// times say (the clock may have stepped back).
func newFallback(n NodeStatus, op OperandState, inst InstallerState) bool {
	if !op.fallback() || op.fallbackFor() != n.TargetRevision {
		return false
	}
	if n.LastFallbackCount > 0 && n.LastFailedRevision == n.TargetRevision && n.InstalledTime == nil && inst.Phase != InstallerSucceeded &&
		(n.LastFailedReason == ReasonOperandFailedFallback || n.LastFailedReason == ReasonInstallerPodFailed || n.LastFailedReason == ReasonInstallerPodDisappeared) {
		// No installer put the revision on the node since the fallback
		// recorded (its retries since failed before they installed it):
		// the monitor had nothing to fall back from again.
		return false
	}
	if op.Fallback.Time.IsZero() {
		return n.InstalledTime != nil || inst.Phase == InstallerSucceeded
	}
	return n.InstallerOrderedTime == nil || !op.Fallback.Time.Truncate(time.Second).Before(n.InstallerOrderedTime.Time)
}

// observedFallback records the fallback the node's startup monitor made:
// the node runs its last good revision, which becomes its current one if it
// is lower, and retries the revision after the fallback backoff.
func (x *nodeDecider) observedFallback() {
	n, op := x.next, x.in.Observation.Operand
	reason, msg := op.Fallback.Reason, op.Fallback.Message
	if reason == "" {
		reason = "Unknown"
	}
	if msg == "" {
		msg = "no message"
	}
	to := x.to()
	recordFallback(to, op.fallbackFor(), []string{fmt.Sprintf("fell back to revision %d: %s: %s", op.Revision, reason, msg)}, x.in)
	to.TargetRevision, to.RegressedRevision, to.OperandMissing = 0, 0, false
	if op.Revision < n.CurrentRevision || op.Phase == OperandReady {
		to.CurrentRevision = op.Revision
	}
	x.d.Reason = fmt.Sprintf("fell back from revision %d to %d", op.fallbackFor(), op.Revision)
	x.event(converge.EventTypeWarning, ReasonOperandFailedFallback,
		"Node %q fell back from revision %d to revision %d (%s): %s", n.NodeName, op.fallbackFor(), op.Revision, reason, msg)
	x.requeue(max(to.RetryTime.Sub(x.in.Now), time.Second))
}

// decidedFallback falls back from a target that did not become ready within
// the fallback timeout: the node installs its current revision, its last
// good one, again and retries the target after the fallback backoff.
func (x *nodeDecider) decidedFallback(timeout time.Duration) {
	n := x.next
	to := x.to()
	recordFallback(to, n.TargetRevision, []string{fmt.Sprintf("revision %d was not ready within %v of its installer succeeding; falling back to revision %d",
		n.TargetRevision, timeout, n.CurrentRevision)}, x.in)
	to.TargetRevision = n.CurrentRevision
	x.requeue(time.Second) // its installer waits for the target's to go
	x.d.Reason = fmt.Sprintf("falling back from revision %d to %d", n.TargetRevision, n.CurrentRevision)
	x.event(converge.EventTypeWarning, ReasonOperandFailedFallback,
		"Node %q: revision %d was not ready within %v of its installer succeeding; installing its last good revision %d",
		n.NodeName, n.TargetRevision, timeout, n.CurrentRevision)
}

// retire deletes the installer of the node's attempt when the new status no
// longer wants it: the attempt ended (succeeded, failed, timed out,
// disappeared), the target moved, or the node fell back.
func (x *nodeDecider) retire() {
	if !attempted(x.from, x.in.Observation.Installer) {
		return
	}
	old := installerFor(x.from)
	if !x.changed || (x.next.InTransition() && installerFor(x.next) == old) {
		return
	}
	x.d.Delete = append(x.d.Delete, old)
}

// times renders a count of failures: "1 time", "3 times".
func times(n int32) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// failures renders a count of failures: "1 failure", "3 failures".
func failures(n int32) string {
	if n == 1 {
		return "1 failure"
	}
	return fmt.Sprintf("%d failures", n)
}

// installerErrors returns one "container: message" error per terminated
// container with a message or an OOM kill, or library-go's fallback naming
// the pod.
func installerErrors(name string, inst InstallerState) []string {
	var errs []string
	for _, c := range inst.Containers {
		msg := c.Message
		if c.OOMKilled {
			msg = strings.TrimSpace("OOMKilled " + msg)
		}
		if msg != "" {
			errs = append(errs, c.Name+": "+msg)
		}
	}
	if len(errs) == 0 {
		fallback := fmt.Sprintf("no detailed termination message, see the installer pod %s", name)
		if inst.Message != "" {
			fallback += ": " + inst.Message
		}
		errs = []string{fallback}
	}
	return errs
}
