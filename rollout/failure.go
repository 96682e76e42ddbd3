package rollout

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

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
	to.TargetRevision = 0
	to.endAttempt()
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
	n.endAttempt()
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

// refusal is an installer the host refused to create, and its error.
type refusal struct {
	inst Installer
	err  error
}

// refusedFinal returns final, the status a sync writes once it acted, with
// each installer the host refused to create recorded as a failed attempt of
// its node (ReasonInstallerCreateFailed, its backoff and retry count), and
// the conditions set again from the decision's holds; and the events of
// those failures. A refusal of an installer its node no longer targets is
// no attempt of it.
func refusedFinal(final Status, refusals []refusal, holds []converge.Hold, in Input) (Status, []converge.Event, error) {
	final.NodeStatuses = slices.Clone(final.NodeStatuses)
	final.Conditions = slices.Clone(final.Conditions)
	var events []converge.Event
	for _, r := range refusals {
		i := slices.IndexFunc(final.NodeStatuses, func(n NodeStatus) bool { return n.NodeName == r.inst.Node })
		if i < 0 || installerFor(final.NodeStatuses[i]) != r.inst {
			continue
		}
		n := final.NodeStatuses[i]
		x := nodeDecider{d: NodeDecision{Node: n.NodeName}, from: n, next: n,
			in: NodeInput{Latest: final.LatestAvailableRevision, Policy: in.Policy, Now: in.Now, Jitter: in.Jitter}}
		why := conditions.TruncateMessage(r.err.Error(), MaxErrorLength)
		x.fail(ReasonInstallerCreateFailed, []string{"creating installer " + r.inst.Name + ": " + why},
			fmt.Sprintf("Installer %s for revision %d on node %q could not be created: %s", r.inst.Name, r.inst.Revision, n.NodeName, why))
		final.NodeStatuses[i] = x.next
		events = append(events, x.d.Events...)
	}
	if _, err := applyConditions(&final, holds, in.Policy, in.Now); err != nil {
		return Status{}, nil, err
	}
	return final, events, nil
}
