package rollout

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// DesiredConditions returns the Available, Progressing and Degraded
// conditions (without timestamps) that describe st, in library-go's words:
//
//   - Available is True (NodesActive) when any node has a current revision,
//     else False (ZeroNodesActive);
//   - Progressing is True while any node is below the latest revision, in
//     transition, or its operand regressed or went missing
//     (NodesProgressing, or RolloutHeld while holds, Decision.Holds, hold
//     the rollout), else False (AllNodesAtLatestRevision); a node above the
//     latest revision counts as at it (the engine never moves a node down);
//     its message says every hold, a pause's and a soak's included;
//   - Degraded is True when a node's last failure is still in its way (the
//     failure's reason, grouped by revision; InstallerRetriesExhausted once a
//     node gave up; OperandFailedFallback naming the node, the revision and
//     the one it fell back to), an operand regressed (NodeRevisionRegressed)
//     or went missing (NodeOperandMissing), an installer that has not
//     started (HoldInstallerPending) was ordered at least
//     Policy.HoldDegradedAfter before now, or Status.HeldSince, with holds
//     that hold the rollout (a pause, a soak or a pending installer alone
//     does not), is older than Policy.HoldDegradedAfter at now
//     (RolloutHeld).
//
// No message holds a duration that grows with the clock: a sync where only
// the clock moved changes no condition. Every message is bounded: it names
// at most a few nodes, or holds of one reason, per line ("… and N more")
// and never exceeds the API's 32768 bytes.
func DesiredConditions(st Status, holds []converge.Hold, p Policy, now time.Time) []metav1.Condition {
	if !slices.IsSortedFunc(holds, converge.CompareHolds) {
		holds = slices.SortedFunc(slices.Values(holds), converge.CompareHolds)
	}
	// Revisions are few: a short sorted slice beats a map and a sort.
	type revCount struct {
		rev   int32
		count int
	}
	var counts []revCount
	active, atLatest := 0, 0
	for k := range st.NodeStatuses {
		n := &st.NodeStatuses[k]
		i, found := slices.BinarySearchFunc(counts, n.CurrentRevision, func(c revCount, r int32) int { return cmp.Compare(c.rev, r) })
		if found {
			counts[i].count++
		} else {
			counts = slices.Insert(counts, i, revCount{n.CurrentRevision, 1})
		}
		if n.CurrentRevision != 0 {
			active++
		}
		if n.CurrentRevision >= st.LatestAvailableRevision && !n.InTransition() && !n.reinstall() {
			atLatest++
		}
	}
	var b strings.Builder
	latestSeen := false
	for i, c := range counts {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(nodesAre(c.count))
		b.WriteString(" at revision ")
		b.WriteString(strconv.FormatInt(int64(c.rev), 10))
		latestSeen = latestSeen || c.rev == st.LatestAvailableRevision
	}
	byRevision := b.String()

	available := metav1.Condition{Type: conditions.TypeAvailable, Status: metav1.ConditionTrue, Reason: ReasonNodesActive,
		Message: fmt.Sprintf("%s active; %s", nodesAre(active), byRevision)}
	if active == 0 {
		available.Status, available.Reason = metav1.ConditionFalse, ReasonZeroNodesActive
	}
	if len(st.NodeStatuses) == 0 {
		available.Message = "0 nodes are active"
	}

	progressing := metav1.Condition{Type: conditions.TypeProgressing, Status: metav1.ConditionFalse,
		Reason: ReasonAllNodesAtLatestRevision, Message: byRevision}
	if atLatest < len(st.NodeStatuses) {
		progressing.Status, progressing.Reason = metav1.ConditionTrue, ReasonNodesProgressing
		if !latestSeen {
			progressing.Message += fmt.Sprintf("; 0 nodes have achieved new revision %d", st.LatestAvailableRevision)
		}
		heldSince := st.HeldSince != nil
		if waits := holdsText(holds, func(h converge.Hold) bool { return !holding(h, holds, heldSince) }); waits != "" {
			progressing.Message += "; " + waits
		}
		if held := holdsText(holds, func(h converge.Hold) bool { return holding(h, holds, heldSince) }); held != "" {
			progressing.Reason = ReasonRolloutHeld
			progressing.Message += "; starting nodes is held: " + held
		}
	}
	if len(st.NodeStatuses) == 0 {
		progressing.Message = "no nodes"
	}
	available.Message = conditions.TruncateMessage(available.Message, conditions.MaxMessageLength)
	progressing.Message = conditions.TruncateMessage(progressing.Message, conditions.MaxMessageLength)
	return []metav1.Condition{available, progressing, degraded(st, holds, p, now)}
}

// failureRank orders failure reasons for Degraded: the first present names it.
var failureRank = []string{ReasonOperandFailedFallback, ReasonInstallerPodFailed, ReasonInstallerPodDisappeared, ReasonInstallerCreateFailed, ReasonOperandFailed, ReasonOperandNotReady}

// degraded groups the nodes whose failure is still in their way by revision,
// then adds regressed and missing operands and a hold past its limit.
func degraded(st Status, holds []converge.Hold, p Policy, now time.Time) metav1.Condition {
	failing := map[int32][]NodeStatus{}
	reasons := map[string]bool{}
	exhausted := false
	var regressed, missing []string
	for k := range st.NodeStatuses {
		n := &st.NodeStatuses[k]
		switch {
		case n.RegressedRevision != 0:
			regressed = append(regressed, fmt.Sprintf("%s runs revision %d below its current revision %d", n.NodeName, n.RegressedRevision, n.CurrentRevision))
		case n.OperandMissing:
			missing = append(missing, fmt.Sprintf("%s runs no operand at its current revision %d", n.NodeName, n.CurrentRevision))
		}
		if !n.Failing() {
			continue
		}
		failing[n.LastFailedRevision] = append(failing[n.LastFailedRevision], *n)
		exhausted = exhausted || p.retriesExhausted(*n)
		reasons[n.LastFailedReason] = true
	}
	reason := ""
	if exhausted {
		reason = ReasonInstallerRetriesExhausted
	}
	for _, r := range failureRank {
		if reason == "" && reasons[r] {
			reason = r
		}
	}
	if reason == "" && len(failing) > 0 {
		reason = ReasonInstallerPodFailed
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(failing)) {
		nodes := failing[r]
		lines := []string{fmt.Sprintf("%s failing on revision %d:", nodesAre(len(nodes)), r)}
		for i, n := range nodes {
			if i == maxListedNodes {
				lines = append(lines, fmt.Sprintf("… and %d more nodes", len(nodes)-i))
				break
			}
			for _, e := range n.LastFailedErrors {
				lines = append(lines, n.NodeName+": "+e)
			}
			if p.retriesExhausted(n) {
				lines = append(lines, fmt.Sprintf("%s: gave up after %s (maxInstallerRetries %d)", n.NodeName, failures(n.LastFailedCount), p.MaxInstallerRetries))
			}
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	if len(regressed) > 0 {
		parts = append(parts, listNames(regressed)+"; installing again")
		if reason == "" {
			reason = ReasonNodeRevisionRegressed
		}
	}
	if len(missing) > 0 {
		parts = append(parts, listNames(missing)+"; installing again")
		if reason == "" {
			reason = ReasonNodeOperandMissing
		}
	}
	if held := heldTooLong(st, holds, p, now); len(held) > 0 {
		parts = append(parts, held...)
		if reason == "" {
			reason = ReasonRolloutHeld
		}
	}
	if len(parts) == 0 {
		return metav1.Condition{Type: conditions.TypeDegraded, Status: metav1.ConditionFalse, Reason: conditions.ReasonAsExpected}
	}
	return metav1.Condition{Type: conditions.TypeDegraded, Status: metav1.ConditionTrue, Reason: reason,
		Message: conditions.JoinBounded(parts, "; ", conditions.MaxMessageLength)}
}

// heldTooLong renders, for Degraded, the installers that have not started
// since they were ordered Policy.HoldDegradedAfter ago, and the holds that
// hold the rollout once Status.HeldSince is that old.
func heldTooLong(st Status, holds []converge.Hold, p Policy, now time.Time) []string {
	var parts []string
	if pending := pendingDegraded(st, holds, p, now); pending != "" {
		parts = append(parts, "installers have not started: "+pending)
	}
	if st.HeldSince != nil && now.Sub(st.HeldSince.Time) >= p.holdDegradedAfter() {
		if held := holdsText(holds, func(h converge.Hold) bool { return holding(h, holds, true) }); held != "" {
			parts = append(parts, "starting nodes is held: "+held)
		}
	}
	return parts
}

// pendingDegraded renders the InstallerPending holds whose installer was
// ordered at least Policy.HoldDegradedAfter before now.
func pendingDegraded(st Status, holds []converge.Hold, p Policy, now time.Time) string {
	return holdsText(holds, func(h converge.Hold) bool {
		if h.Reason != HoldInstallerPending {
			return false
		}
		n, ok := st.Node(h.Object)
		return ok && n.InstallerOrderedTime != nil && now.Sub(n.InstallerOrderedTime.Time) >= p.holdDegradedAfter()
	})
}

// applyConditions sets DesiredConditions on st.Conditions through the
// conditions package (transition times move only when a status changes) and
// reports whether anything changed.
func applyConditions(st *Status, holds []converge.Hold, p Policy, now time.Time) (bool, error) {
	changed := false
	for _, c := range DesiredConditions(*st, holds, p, now) {
		ch, err := conditions.Set(&st.Conditions, c, now)
		if err != nil {
			return changed, fmt.Errorf("rollout: setting condition %s: %w", c.Type, err)
		}
		changed = changed || ch
	}
	return changed, nil
}

// nodesAre renders a count with the right verb: "1 node is", "2 nodes are".
func nodesAre(n int) string {
	if n == 1 {
		return "1 node is"
	}
	return strconv.Itoa(n) + " nodes are"
}
