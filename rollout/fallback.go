package rollout

import (
	"fmt"
	"math"
	"time"

	"github.com/converge-dev/converge"
)

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
	n.endAttempt()
}

// fallbackRecorded reports whether the status of a node not in transition
// already records the fallback the operand shows: each fallback from a
// revision is recorded once.
func fallbackRecorded(n NodeStatus, op OperandState) bool {
	return n.LastFailedReason == ReasonOperandFailedFallback && n.LastFailedRevision == op.fallbackFor()
}

// newFallback reports whether the operand of a node in transition is a
// fallback from its target that its status does not record yet. Once an
// installer of the target was seen succeeding, a fallback the status has
// no record of is new whatever its time: the installer superseded any
// older one, and a clock that stepped back may date the monitor's reaction
// before the order. Before that, one is new if it happened no earlier than
// the node's installer was ordered (an older one is what the installer is
// about to replace). A fallback the status records is not new while no
// installer of the target was seen succeeding since (the retries since, if
// any, failed before they installed it), whatever the times say.
func newFallback(n NodeStatus, op OperandState, inst InstallerState) bool {
	if !op.fallback() || op.fallbackFor() != n.TargetRevision {
		return false
	}
	installed := n.InstalledTime != nil || inst.Phase == InstallerSucceeded
	recorded := n.LastFallbackCount > 0 && n.LastFailedRevision == n.TargetRevision
	if recorded && !installed && (n.LastFailedReason == ReasonOperandFailedFallback || n.LastFailedReason == ReasonInstallerPodFailed ||
		n.LastFailedReason == ReasonInstallerPodDisappeared || n.LastFailedReason == ReasonInstallerCreateFailed) {
		// No installer put the revision on the node since the fallback
		// recorded (its retries since failed before they installed it):
		// the monitor had nothing to fall back from again.
		return false
	}
	if op.Fallback.Time.IsZero() || (installed && !recorded) {
		return installed
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

// fallbacks is what a decision knows of the nodes in fallback while it
// decides the nodes in transition.
type fallbacks struct {
	// fellBackFrom holds, by revision, the first two nodes in fallback from
	// it (-1: none), once a node in transition needs it (nil before).
	fellBackFrom map[int32][2]int
	// waitsForFallback names the nodes in transition whose next installer
	// waits while another node is in fallback from its revision.
	waitsForFallback map[string]bool
}

// fellBackOther returns a node other than i in fallback from rev, or -1
// when there is none or node i fell back from it itself: one whose status
// records the fallback, as the nodes are once decided (those after i as
// predict says), or whose operand runs a fallback for rev. It looks at the
// nodes once, when a node first needs it.
func (x *decider) fellBackOther(i int, rev int32) int {
	if x.fellBackFrom == nil {
		x.fellBackFrom = map[int32][2]int{}
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
	f, ok := x.fellBackFrom[rev]
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
	d := NextNodeStatus(n, NodeInput{Latest: x.d.Latest, Observation: o, Policy: x.in.Policy, Now: x.in.Now,
		Jitter: x.in.Jitter, Deleting: x.deleting[n.NodeName], Held: true})
	if d.To != nil {
		return *d.To
	}
	return n
}

func (x *decider) addFellBack(rev int32, j int) {
	f, ok := x.fellBackFrom[rev]
	switch {
	case !ok:
		x.fellBackFrom[rev] = [2]int{j, -1}
	case f[0] != j && f[1] < 0:
		x.fellBackFrom[rev] = [2]int{f[0], j}
	}
}
