package rollout

import (
	"fmt"
	"math"
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
	// Delete lists installers that must go. They are recorded in
	// Status.InstallersToDelete in the same write as To and deleted after
	// it, and stay recorded until the host confirms each is gone.
	Delete []Installer
	// Create is the installer to ensure once To is written.
	Create *Installer
	// Events are emitted once To is written.
	Events []converge.Event
	// RequeueAfter is when to look at the node again at the latest (0 = on the next change).
	RequeueAfter time.Duration
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
}

// NextNodeStatus decides the next status of a node whose install is in
// progress (TargetRevision != 0). The rules, first match wins:
//
//   - operand ready at the target: current = target, target cleared;
//   - a newer latest revision: jump the target to it at once; an unfinished
//     installer must go (it is recorded for deletion, and the new installer
//     waits until it is gone);
//   - installer missing: if the engine ordered it before it finished, it
//     disappeared: a failed attempt (InstallerPodDisappeared); otherwise
//     create it, unless the node waits for its backoff, has exhausted its
//     retries, is unreachable, an older installer of it is still being
//     deleted, or the policy is paused;
//   - installer pending or running: wait, or, InstallerPendingTimeout after
//     the engine ordered it (its start time for a status without the
//     order), record an InstallerPodFailed failure and delete it;
//   - installer failed (OOM included): keep the target, record an
//     InstallerPodFailed failure with one "container: message" error per
//     container; the retry uses a new installer name after the backoff;
//   - installer succeeded, operand failed at the target, or not ready
//     OperandReadyTimeout after the installer succeeded: record
//     OperandFailed or OperandNotReady and clear the target; the node
//     retries the revision after the backoff, as the start of a later pass
//     (see Decide);
//   - installer succeeded, operand not yet at the target: wait.
//
// Times in the future (a clock that stepped back) are moved to now, so no
// wait is ever longer than the timeout or backoff it comes from. A node not
// in transition is returned unchanged.
func NextNodeStatus(n NodeStatus, in NodeInput) NodeDecision {
	d := NodeDecision{Node: n.NodeName}
	if !n.InTransition() {
		d.Reason = "not in transition"
		return d
	}
	next := n
	change := func() *NodeStatus {
		if d.To == nil {
			d.To = &next
		}
		return d.To
	}
	p, now, obs := in.Policy, in.Now, in.Observation
	op := obs.Operand
	if op.Phase == OperandReady && op.Revision == n.TargetRevision {
		to := change()
		to.CurrentRevision, to.TargetRevision, to.RegressedRevision = n.TargetRevision, 0, 0
		to.InstallerOrderedTime, to.InstalledTime = nil, nil
		d.Reason = "static pod is ready"
		d.Events = []converge.Event{{Type: converge.EventTypeNormal, Reason: ReasonNodeCurrentRevisionChanged,
			Message: fmt.Sprintf("Updated node %q from revision %d to %d because %s", n.NodeName, n.CurrentRevision, n.TargetRevision, d.Reason)}}
		return d
	}

	inst := obs.Installer
	phase := inst.Phase
	name := InstallerName(n)
	if in.Latest > n.TargetRevision && !p.Paused {
		if phase == InstallerPending || phase == InstallerRunning {
			d.Delete = []Installer{installerFor(n)}
		}
		to := change()
		to.TargetRevision = in.Latest
		to.InstallerOrderedTime, to.InstalledTime = nil, nil
		d.Reason = "new revision pending"
		d.Events = []converge.Event{{Type: converge.EventTypeNormal, Reason: ReasonNodeTargetRevisionChanged,
			Message: fmt.Sprintf("Updating node %q from revision %d to %d because revision %d superseded %d",
				n.NodeName, n.CurrentRevision, in.Latest, in.Latest, n.TargetRevision)}}
		if len(d.Delete) == 0 && !in.Deleting {
			orderInstaller(&d, to, obs, p, now)
		}
		return d
	}

	if r, changed := reanchored(n, in); changed {
		next = r
		change()
		n = r
	}
	if needsTrim(n.LastFailedErrors) {
		n.LastFailedErrors = trimErrors(n.LastFailedErrors)
		next.LastFailedErrors = n.LastFailedErrors
		change()
	}
	switch phase {
	case InstallerNotFound:
		if n.InstallerOrderedTime != nil && n.InstalledTime == nil {
			fail(&d, change(), in, ReasonInstallerPodDisappeared,
				[]string{fmt.Sprintf("installer %s disappeared before it finished", name)},
				fmt.Sprintf("Installer %s for revision %d on node %q disappeared before it finished", name, n.TargetRevision, n.NodeName))
			return d
		}
		if n.InstalledTime != nil {
			waitForOperand(&d, n, in, change)
			return d
		}
		decideMissingInstaller(&d, n, in, change)
	case InstallerPending, InstallerRunning:
		d.Reason = fmt.Sprintf("installer %s is %s", name, phase)
		if inst.Message != "" {
			d.Reason += ": " + inst.Message
		}
		if timeout := p.InstallerPendingTimeout.Duration; timeout > 0 {
			since := inst.StartTime
			if n.InstallerOrderedTime != nil {
				since = n.InstallerOrderedTime.Time
			}
			if since.IsZero() {
				since = now
				change().InstallerOrderedTime = metaTime(now)
			}
			waited := min(max(now.Sub(since), 0), timeout)
			if waited >= timeout {
				d.Delete = []Installer{installerFor(n)}
				fail(&d, change(), in, ReasonInstallerPodFailed,
					[]string{fmt.Sprintf("installer %s did not finish within %v (%s)", name, timeout, phase)}, "")
				return d
			}
			d.RequeueAfter = timeout - waited
		}
	case InstallerFailed:
		errs := installerErrors(name, inst)
		fail(&d, change(), in, ReasonInstallerPodFailed, errs, "")
	case InstallerSucceeded:
		if n.InstalledTime == nil {
			change().InstalledTime = metaTime(now)
		}
		waitForOperand(&d, n, in, change)
	}
	return d
}

// waitForOperand decides a node whose installer succeeded: the operand
// failed at the target, did not become ready in time, or is awaited.
func waitForOperand(d *NodeDecision, n NodeStatus, in NodeInput, change func() *NodeStatus) {
	op := in.Observation.Operand
	switch {
	case op.Phase == OperandFailed && op.Revision == n.TargetRevision:
		msg := op.Message
		if msg == "" {
			msg = fmt.Sprintf("static pod of revision %d failed without a message", n.TargetRevision)
		}
		to := change()
		fail(d, to, in, ReasonOperandFailed, []string{msg}, "")
		to.TargetRevision = 0
		return
	case op.Phase == OperandNotFound || op.Revision == n.TargetRevision:
		d.Reason = "static pod is pending"
	default:
		d.Reason = fmt.Sprintf("waiting for static pod of revision %d, found %d", n.TargetRevision, op.Revision)
	}
	timeout := in.Policy.OperandReadyTimeout.Duration
	if timeout <= 0 {
		return
	}
	since := in.Now
	if to := d.To; to != nil && to.InstalledTime != nil {
		since = to.InstalledTime.Time
	} else if n.InstalledTime != nil {
		since = n.InstalledTime.Time
	}
	waited := max(in.Now.Sub(since), 0)
	if waited < timeout {
		d.RequeueAfter = timeout - waited
		return
	}
	to := change()
	fail(d, to, in, ReasonOperandNotReady,
		[]string{fmt.Sprintf("static pod of revision %d was not ready within %v of its installer succeeding", n.TargetRevision, timeout)}, "")
	to.TargetRevision = 0
}

// reanchored returns n with its times that lie in the future (a clock
// that stepped back) moved to now, so that no wait counted from them is ever
// longer than its timeout, and with a retry time further away than the
// longest backoff moved to now plus the backoff. It reports whether it
// changed anything.
func reanchored(n NodeStatus, in NodeInput) (NodeStatus, bool) {
	changed := false
	if future(n.InstallerOrderedTime, in.Now) {
		n.InstallerOrderedTime, changed = metaTime(in.Now), true
	}
	if future(n.InstalledTime, in.Now) {
		n.InstalledTime, changed = metaTime(in.Now), true
	}
	if future(n.LastFailedTime, in.Now) {
		n.LastFailedTime, changed = metaTime(in.Now), true
	}
	if n.RetryTime != nil && n.RetryTime.Sub(in.Now) > in.Policy.longestBackoff(n.LastFailedCount) {
		n.RetryTime = metaTimeCeil(in.Now.Add(in.Policy.backoff().Delay(n.LastFailedCount, in.Jitter)))
		changed = true
	}
	return n, changed
}

// future reports whether t is set and after now.
func future(t *metav1.Time, now time.Time) bool { return t != nil && t.After(now) }

// decideMissingInstaller creates the installer of a node in transition unless
// something holds it back.
func decideMissingInstaller(d *NodeDecision, n NodeStatus, in NodeInput, change func() *NodeStatus) {
	p, now := in.Policy, in.Now
	name := InstallerName(n)
	retryAt := p.retryAt(n)
	switch {
	case p.retriesExhausted(n):
		d.Reason = fmt.Sprintf("gave up on revision %d after %s", n.TargetRevision, failures(n.LastFailedCount))
	case now.Before(retryAt):
		d.RequeueAfter = retryAt.Sub(now)
		d.Reason = fmt.Sprintf("installer failed %s, retrying in %v", times(n.LastFailedCount), d.RequeueAfter)
	case p.Paused:
		d.Reason = "paused before creating installer " + name
	case in.Observation.Unreachable:
		d.Reason = "node is unreachable, not creating installer " + name
	case in.Deleting:
		d.Reason = "waiting for an older installer to be deleted before creating " + name
	default:
		orderInstaller(d, change(), in.Observation, p, now)
	}
}

// orderInstaller records that the installer of to's target and attempt is
// ordered and asks for its creation, unless the node is unreachable or
// the policy is paused.
func orderInstaller(d *NodeDecision, to *NodeStatus, obs NodeObservation, p Policy, now time.Time) {
	if obs.Unreachable || p.Paused {
		return
	}
	to.InstallerOrderedTime = metaTime(now)
	create := installerFor(*to)
	d.Create = &create
	if d.Reason == "" {
		d.Reason = "creating installer " + create.Name
	}
}

// fail records a failure of the node's target revision in to: the attempt
// ends, the count goes up (saturating), the retry time is set from the
// backoff, and the event says what happened (message, or one built from
// the errors). A node out of retries gets a second event.
func fail(d *NodeDecision, to *NodeStatus, in NodeInput, reason string, errs []string, message string) {
	n := *to
	recordFailure(to, reason, errs, in)
	if message == "" {
		what := map[string]string{
			ReasonInstallerPodFailed: fmt.Sprintf("Installer %s for revision %d on node %q failed", InstallerName(n), n.TargetRevision, n.NodeName),
			ReasonOperandFailed:      fmt.Sprintf("Static pod of revision %d on node %q failed", n.TargetRevision, n.NodeName),
			ReasonOperandNotReady:    fmt.Sprintf("Static pod of revision %d on node %q is not ready", n.TargetRevision, n.NodeName),
		}[reason]
		message = what + ": " + strings.Join(to.LastFailedErrors, "; ")
	}
	d.Events = append(d.Events, converge.Event{Type: converge.EventTypeWarning, Reason: reason, Message: conditions.TruncateMessage(message, MaxEventMessageLength)})
	if in.Policy.retriesExhausted(*to) {
		d.Reason = fmt.Sprintf("%s %s, giving up on revision %d", reason, times(to.LastFailedCount), n.TargetRevision)
		d.Events = append(d.Events, converge.Event{Type: converge.EventTypeWarning, Reason: ReasonInstallerRetriesExhausted,
			Message: fmt.Sprintf("Node %q gave up on revision %d after %s", n.NodeName, n.TargetRevision, failures(to.LastFailedCount))})
		return
	}
	d.RequeueAfter = max(to.RetryTime.Sub(in.Now), 0)
	d.Reason = fmt.Sprintf("%s %s, retrying in %v", reason, times(to.LastFailedCount), d.RequeueAfter)
}

// recordFailure records a failure of the node's target revision at now.
func recordFailure(n *NodeStatus, reason string, errs []string, in NodeInput) {
	if n.LastFailedRevision == n.TargetRevision {
		if n.LastFailedCount < math.MaxInt32 {
			n.LastFailedCount++
		}
	} else {
		n.LastFailedRevision, n.LastFailedCount = n.TargetRevision, 1
	}
	n.LastFailedTime = metaTime(in.Now)
	n.RetryTime = metaTimeCeil(n.LastFailedTime.Add(in.Policy.backoff().Delay(n.LastFailedCount, in.Jitter)))
	n.LastFailedReason = reason
	n.LastFailedErrors = trimErrors(errs)
	n.InstallerOrderedTime, n.InstalledTime = nil, nil
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
