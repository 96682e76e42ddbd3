package rollout

import (
	"fmt"
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
//   - installer missing: ordered and never seen (InstallerNotSeen: the
//     process died before creating it, or the pod cache lags), create it
//     again under the same name, no failed attempt; ordered, seen and not
//     finished, it disappeared: a failed attempt (InstallerPodDisappeared);
//     otherwise create it, unless the node waits for its backoff, has
//     exhausted its retries, is unreachable, an older installer of it is
//     still being deleted, or the policy is paused;
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
