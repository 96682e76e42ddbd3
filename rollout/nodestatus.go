package rollout

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeDecision is what NextNodeStatus decided for one node in transition.
type NodeDecision struct {
	// Status is the node's new status (equal to the old one when nothing changed).
	Status NodeStatus
	// Delete lists installers of a target the node leaves, to delete before
	// Status is written: a superseded revision must never install after the
	// new target is recorded.
	Delete []Installer
	// DeleteAfter lists installers of the node's own target to delete once
	// Status is written: a timed-out installer stays until its failure is
	// recorded, so a lost write leaves nothing for the next plan to miss.
	DeleteAfter []Installer
	// Create is the installer to ensure after Status is written, if any.
	Create *Installer
	// Events are emitted once Status is written.
	Events []Event
	// Reason says in a few words what the node is doing.
	Reason string
	// RequeueAfter is when to look again at the latest (0 = on the next change).
	RequeueAfter time.Duration
}

// Reasons NextNodeStatus gives.
const (
	reasonNewRevisionPending = "new revision pending"
	reasonStaticPodPending   = "static pod is pending"
)

// NextNodeStatus decides the next status of a node whose install is in
// progress (TargetRevision != 0), given the latest revision and what the host
// observed. The rules, first match wins:
//
//   - operand ready at the target: current = target, target cleared;
//   - a newer latest revision: jump the target to it at once, delete an
//     unfinished installer, keep the failure record ("new revision pending");
//   - installer missing: create it, unless the node waits for its backoff, has
//     exhausted its retries, is unreachable or the policy is paused;
//   - installer pending or running: wait, or, past InstallerPendingTimeout,
//     record an InstallerFailed failure and delete it once that is written;
//   - installer failed (OOM included): keep the target, record an
//     InstallerFailed failure with one "container: message" error per
//     container; the retry uses a new installer name after the backoff;
//   - installer succeeded, operand failed at the target: record OperandFailed,
//     clear the target; the node retries the revision after the backoff, as
//     the start of a later pass (see PlanRollout);
//   - installer succeeded, operand not yet at the target: wait.
//
// A node not in transition is returned unchanged.
func NextNodeStatus(n NodeStatus, latest int32, obs NodeObservation, p Policy, now time.Time) NodeDecision {
	d := NodeDecision{Status: *n.DeepCopy()}
	if !n.InTransition() {
		d.Reason = "not in transition"
		return d
	}
	op := obs.Operand
	if op.Phase.normal() == OperandReady && op.Revision == n.TargetRevision {
		d.Status.CurrentRevision, d.Status.TargetRevision = n.TargetRevision, 0
		d.Reason = fmt.Sprintf("static pod of revision %d is ready", n.TargetRevision)
		d.Events = []Event{{Type: EventTypeNormal, Reason: EventNodeCurrentRevisionChanged, Node: n.NodeName,
			Message: fmt.Sprintf("Updated node %q from revision %d to %d", n.NodeName, n.CurrentRevision, n.TargetRevision)}}
		return d
	}

	inst := obs.Installer
	phase := inst.Phase.normal()
	if latest > n.TargetRevision && !p.Paused {
		if phase == InstallerPending || phase == InstallerRunning {
			d.Delete = []Installer{installerFor(n)}
		}
		d.Status.TargetRevision = latest
		d.Reason = reasonNewRevisionPending
		d.Events = []Event{{Type: EventTypeNormal, Reason: EventNodeTargetRevisionChanged, Node: n.NodeName,
			Message: fmt.Sprintf("Updating node %q from revision %d to %d because revision %d superseded %d",
				n.NodeName, n.CurrentRevision, latest, latest, n.TargetRevision)}}
		if !obs.Unreachable {
			create := installerFor(d.Status)
			d.Create = &create
		}
		return d
	}

	name := InstallerName(n)
	switch phase {
	case InstallerNotFound:
		decideMissingInstaller(&d, n, obs, p, now)
	case InstallerPending, InstallerRunning:
		timeout := p.InstallerPendingTimeout
		if timeout > 0 && !inst.StartTime.IsZero() {
			waited := now.Sub(inst.StartTime)
			if waited >= timeout {
				d.DeleteAfter = []Installer{installerFor(n)}
				failInstaller(&d, n, p, now, []string{fmt.Sprintf("installer %s did not finish within %v (%s)", name, timeout, phase)})
				return d
			}
			d.RequeueAfter = timeout - waited
		}
		d.Reason = fmt.Sprintf("installer %s is %s", name, phase)
		if inst.Message != "" {
			d.Reason += ": " + inst.Message
		}
	case InstallerFailed:
		failInstaller(&d, n, p, now, installerErrors(name, inst))
	case InstallerSucceeded:
		switch {
		case op.Phase.normal() == OperandFailed && op.Revision == n.TargetRevision:
			msg := op.Message
			if msg == "" {
				msg = fmt.Sprintf("static pod of revision %d failed without a message", n.TargetRevision)
			}
			failOperand(&d, n, p, now, msg)
		case op.Phase.normal() == OperandNotFound || op.Revision == n.TargetRevision:
			d.Reason = reasonStaticPodPending
		default:
			d.Reason = fmt.Sprintf("waiting for static pod of revision %d, found %d", n.TargetRevision, op.Revision)
		}
	}
	return d
}

// decideMissingInstaller creates the installer of a node in transition unless
// something holds it back.
func decideMissingInstaller(d *NodeDecision, n NodeStatus, obs NodeObservation, p Policy, now time.Time) {
	name := InstallerName(n)
	retryAt := p.InstallerBackoff.RetryAt(n)
	switch {
	case p.RetriesExhausted(n):
		d.Reason = fmt.Sprintf("gave up on revision %d after %d failed installers", n.TargetRevision, n.LastFailedCount)
	case now.Before(retryAt):
		d.RequeueAfter = retryAt.Sub(now)
		d.Reason = fmt.Sprintf("installer failed %s, retrying in %v", times(n.LastFailedCount), d.RequeueAfter)
	case p.Paused:
		d.Reason = "paused before creating installer " + name
	case obs.Unreachable:
		d.Reason = "node is unreachable, not creating installer " + name
	default:
		create := installerFor(n)
		d.Create = &create
		d.Reason = "creating installer " + name
	}
}

// failInstaller records an installer failure on a node that keeps its target.
func failInstaller(d *NodeDecision, n NodeStatus, p Policy, now time.Time, errs []string) {
	recordFailure(&d.Status, FailureInstallerFailed, errs, now)
	d.Events = []Event{{Type: EventTypeWarning, Reason: EventInstallerPodFailed, Node: n.NodeName,
		Message: fmt.Sprintf("Installer %s for revision %d on node %q failed: %s",
			InstallerName(n), n.TargetRevision, n.NodeName, strings.Join(errs, "; "))}}
	if p.RetriesExhausted(d.Status) {
		d.Reason = fmt.Sprintf("installer failed %s, giving up on revision %d", times(d.Status.LastFailedCount), n.TargetRevision)
		d.Events = append(d.Events, Event{Type: EventTypeWarning, Reason: EventInstallerRetriesExhausted, Node: n.NodeName,
			Message: fmt.Sprintf("Node %q gave up on revision %d after %d failed installers", n.NodeName, n.TargetRevision, d.Status.LastFailedCount)})
		return
	}
	d.RequeueAfter = p.InstallerBackoff.Delay(d.Status.LastFailedCount)
	d.Reason = fmt.Sprintf("installer failed %s, retrying in %v", times(d.Status.LastFailedCount), d.RequeueAfter)
}

// failOperand records an operand failure and clears the target. The node
// retries the revision from the start of a later pass, once the backoff has
// passed and while MaxInstallerRetries allows it.
func failOperand(d *NodeDecision, n NodeStatus, p Policy, now time.Time, msg string) {
	recordFailure(&d.Status, FailureOperandFailed, []string{msg}, now)
	d.Status.TargetRevision = 0
	d.Events = []Event{{Type: EventTypeWarning, Reason: EventOperandFailed, Node: n.NodeName,
		Message: fmt.Sprintf("Static pod of revision %d on node %q failed: %s", n.TargetRevision, n.NodeName, msg)}}
	if p.RetriesExhausted(d.Status) {
		d.Reason = fmt.Sprintf("static pod failed %s, giving up on revision %d", times(d.Status.LastFailedCount), n.TargetRevision)
		d.Events = append(d.Events, Event{Type: EventTypeWarning, Reason: EventInstallerRetriesExhausted, Node: n.NodeName,
			Message: fmt.Sprintf("Node %q gave up on revision %d after %d failures", n.NodeName, n.TargetRevision, d.Status.LastFailedCount)})
		return
	}
	d.RequeueAfter = p.InstallerBackoff.Delay(d.Status.LastFailedCount)
	d.Reason = fmt.Sprintf("static pod of revision %d failed %s, retrying in %v", n.TargetRevision, times(d.Status.LastFailedCount), d.RequeueAfter)
}

// times renders a count of failures: "1 time", "3 times".
func times(n int32) string {
	if n == 1 {
		return "1 time"
	}
	return fmt.Sprintf("%d times", n)
}

// recordFailure records a failure of the node's target revision at now.
func recordFailure(n *NodeStatus, reason FailureReason, errs []string, now time.Time) {
	if n.LastFailedRevision == n.TargetRevision {
		n.LastFailedCount++
	} else {
		n.LastFailedRevision, n.LastFailedCount = n.TargetRevision, 1
	}
	t := metav1.NewTime(now.Truncate(time.Second))
	n.LastFailedTime = &t
	n.LastFailedReason = reason
	n.LastFailedErrors = errs
}

// installerErrors returns one "container: message" error per terminated
// container with a message or an OOM kill, or a fallback naming the pod.
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
		fallback := fmt.Sprintf("installer %s failed without a termination message", name)
		if inst.Message != "" {
			fallback += ": " + inst.Message
		}
		errs = []string{fallback}
	}
	return errs
}
