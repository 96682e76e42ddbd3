package rollout

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
)

// Condition reasons the rollout reports.
const (
	ReasonZeroNodesActive           = "ZeroNodesActive"
	ReasonNodesActive               = "NodesActive"
	ReasonNodesProgressing          = "NodesProgressing"
	ReasonAllNodesAtLatestRevision  = "AllNodesAtLatestRevision"
	ReasonInstallerPodFailed        = "InstallerPodFailed"
	ReasonOperandFailed             = "OperandFailed"
	ReasonInstallerRetriesExhausted = "InstallerRetriesExhausted"
	ReasonNodesUnreachable          = "NodesUnreachable"
)

// DesiredConditions returns the Available, Progressing and Degraded
// conditions (without timestamps) that describe st:
//
//   - Available is True when any node has a current revision, else False ZeroNodesActive;
//   - Progressing is True while any node is not at the latest revision, else
//     False AllNodesAtLatestRevision;
//   - Degraded is True when a node's last failure is still in its way
//     (InstallerRetriesExhausted, InstallerPodFailed or OperandFailed, grouped
//     by revision; a node that gave up says so) or a node is unreachable
//     (NodesUnreachable).
func DesiredConditions(st Status, obs Observation, p Policy) []metav1.Condition {
	counts := map[int32]int{}
	active, atLatest := 0, 0
	for _, n := range st.NodeStatuses {
		counts[n.CurrentRevision]++
		if n.CurrentRevision != 0 {
			active++
		}
		if n.CurrentRevision == st.LatestAvailableRevision {
			atLatest++
		}
	}
	revs := slices.Sorted(maps.Keys(counts))
	parts := make([]string, 0, len(revs))
	for _, r := range revs {
		parts = append(parts, fmt.Sprintf("%s at revision %d", nodesAre(counts[r]), r))
	}
	byRevision := strings.Join(parts, "; ")

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
		if atLatest == 0 {
			progressing.Message += fmt.Sprintf("; 0 nodes have achieved new revision %d", st.LatestAvailableRevision)
		}
	}
	if len(st.NodeStatuses) == 0 {
		progressing.Message = "no nodes"
	}

	return []metav1.Condition{available, progressing, degraded(st, obs, p)}
}

// degraded groups the nodes whose failure is still in their way by revision.
func degraded(st Status, obs Observation, p Policy) metav1.Condition {
	failing := map[int32][]NodeStatus{}
	exhausted, installer, operand := false, false, false
	for _, n := range st.NodeStatuses {
		if !n.Failing() {
			continue
		}
		failing[n.LastFailedRevision] = append(failing[n.LastFailedRevision], n)
		exhausted = exhausted || p.RetriesExhausted(n)
		installer = installer || n.LastFailedReason != FailureOperandFailed
		operand = operand || n.LastFailedReason == FailureOperandFailed
	}
	reason := ""
	switch {
	case exhausted:
		reason = ReasonInstallerRetriesExhausted
	case installer:
		reason = ReasonInstallerPodFailed
	case operand:
		reason = ReasonOperandFailed
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(failing)) {
		nodes := failing[r]
		lines := []string{fmt.Sprintf("%s failing on revision %d:", nodesAre(len(nodes)), r)}
		for _, n := range nodes {
			for _, e := range n.LastFailedErrors {
				lines = append(lines, n.NodeName+": "+e)
			}
			if p.RetriesExhausted(n) {
				lines = append(lines, fmt.Sprintf("%s: gave up after %s (maxInstallerRetries %d)", n.NodeName, failures(n.LastFailedCount), p.MaxInstallerRetries))
			}
		}
		parts = append(parts, strings.Join(lines, "\n"))
	}
	var unreachable []string
	for _, n := range st.NodeStatuses {
		if obs[n.NodeName].Unreachable {
			unreachable = append(unreachable, n.NodeName)
		}
	}
	if len(unreachable) > 0 {
		slices.Sort(unreachable)
		parts = append(parts, fmt.Sprintf("%s unreachable: %s", nodesAre(len(unreachable)), strings.Join(unreachable, ", ")))
		if reason == "" {
			reason = ReasonNodesUnreachable
		}
	}
	if len(parts) == 0 {
		return metav1.Condition{Type: conditions.TypeDegraded, Status: metav1.ConditionFalse, Reason: conditions.ReasonAsExpected}
	}
	return metav1.Condition{Type: conditions.TypeDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: strings.Join(parts, "; ")}
}

// ApplyConditions sets DesiredConditions on st.Conditions through the
// conditions package (transition times move only when a status changes) and
// reports whether anything changed.
func ApplyConditions(st *Status, obs Observation, p Policy, now time.Time) (bool, error) {
	changed := false
	for _, c := range DesiredConditions(*st, obs, p) {
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
	return fmt.Sprintf("%d nodes are", n)
}
