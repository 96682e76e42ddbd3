package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// heldByC is the message of the hold of c, unreachable, with MaxUnavailable 1.
const heldByC = "c is unavailable (unreachable) and maxUnavailable 1 is reached: raise maxUnavailable, or drop a node that is gone for good from the node list"

func TestDesiredConditions(t *testing.T) {
	type cond struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}
	tests := []struct {
		name        string
		st          Status
		held        []converge.Hold
		policy      Policy
		available   cond
		progressing cond
		degraded    cond
	}{
		{
			name:        "no nodes",
			st:          Status{LatestAvailableRevision: 1},
			available:   cond{metav1.ConditionFalse, ReasonZeroNodesActive, "0 nodes are active"},
			progressing: cond{metav1.ConditionFalse, ReasonAllNodesAtLatestRevision, "no nodes"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "three fresh nodes",
			st:          Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 0, 1), node("b", 0, 0), node("c", 0, 0)}},
			available:   cond{metav1.ConditionFalse, ReasonZeroNodesActive, "0 nodes are active; 3 nodes are at revision 0"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "3 nodes are at revision 0; 0 nodes have achieved new revision 1"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "mid rollout, singular and plural, sorted by revision",
			st:          Status{LatestAvailableRevision: 4, NodeStatuses: []NodeStatus{node("a", 4, 0), node("b", 3, 4), node("c", 4, 0)}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "3 nodes are active; 1 node is at revision 3; 2 nodes are at revision 4"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 3; 2 nodes are at revision 4"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "none at the latest yet",
			st:          Status{LatestAvailableRevision: 5, NodeStatuses: []NodeStatus{node("a", 4, 5), node("b", 4, 0)}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "2 nodes are active; 2 nodes are at revision 4"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "2 nodes are at revision 4; 0 nodes have achieved new revision 5"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "converged",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0)}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionFalse, ReasonAllNodesAtLatestRevision, "1 node is at revision 2"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name: "installer failures grouped by revision",
			st: Status{LatestAvailableRevision: 5, NodeStatuses: []NodeStatus{
				failed(node("a", 4, 5), 5, 1, ReasonInstallerPodFailed, t0, "installer: boom"),
				failed(node("b", 4, 5), 5, 2, ReasonInstallerPodFailed, t0, "installer: OOMKilled"),
				failed(node("c", 3, 4), 4, 1, ReasonInstallerPodFailed, t0, "installer: old"),
				failed(node("d", 5, 0), 5, 1, ReasonInstallerPodFailed, t0, "recovered"),
			}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "4 nodes are active; 1 node is at revision 3; 2 nodes are at revision 4; 1 node is at revision 5"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 3; 2 nodes are at revision 4; 1 node is at revision 5"},
			degraded: cond{metav1.ConditionTrue, ReasonInstallerPodFailed,
				"1 node is failing on revision 4:\nc: installer: old; 2 nodes are failing on revision 5:\na: installer: boom\nb: installer: OOMKilled"},
		},
		{
			name:        "operand failure",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, t0, "CrashLoopBackOff")}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded:    cond{metav1.ConditionTrue, ReasonOperandFailed, "1 node is failing on revision 2:\na: CrashLoopBackOff"},
		},
		{
			name:        "retries exhausted",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 2), 2, 3, ReasonInstallerPodFailed, t0, "x")}},
			policy:      Policy{MaxInstallerRetries: 2},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded: cond{metav1.ConditionTrue, ReasonInstallerRetriesExhausted,
				"1 node is failing on revision 2:\na: x\na: gave up after 3 failures (maxInstallerRetries 2)"},
		},
		{
			name:        "retries exhausted by operand failures",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 0), 2, 2, ReasonOperandFailed, t0, "CrashLoopBackOff")}},
			policy:      Policy{MaxInstallerRetries: 1},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded: cond{metav1.ConditionTrue, ReasonInstallerRetriesExhausted,
				"1 node is failing on revision 2:\na: CrashLoopBackOff\na: gave up after 2 failures (maxInstallerRetries 1)"},
		},
		{
			name:        "a hold is explained in Progressing at once, naming the nodes",
			st:          Status{LatestAvailableRevision: 2, HeldSince: &metav1.Time{Time: t0}, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0), node("c", 1, 0)}},
			held:        []converge.Hold{unavailableHold("c", "unreachable", 1)},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "3 nodes are active; 2 nodes are at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonRolloutHeld, "2 nodes are at revision 1; 1 node is at revision 2; starting nodes is held: " + heldByC},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "a hold older than HoldDegradedAfter is Degraded and names the way out",
			st:          Status{LatestAvailableRevision: 2, HeldSince: &metav1.Time{Time: t0.Add(-11 * time.Minute)}, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0), node("c", 1, 0)}},
			held:        []converge.Hold{gateHold("b", "quorum"), unavailableHold("c", "unreachable", 1)},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "3 nodes are active; 2 nodes are at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonRolloutHeld, "2 nodes are at revision 1; 1 node is at revision 2; starting nodes is held: the gate holds b: quorum; " + heldByC},
			degraded:    cond{metav1.ConditionTrue, ReasonRolloutHeld, "starting nodes is held: the gate holds b: quorum; " + heldByC},
		},
		{
			name:        "a pause alone is a wait: Progressing says so, nothing is Degraded",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
			held:        []converge.Hold{pausedHold()},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "2 nodes are active; 1 node is at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 1 node is at revision 2; paused: no node is started"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "a soak alone is a wait: Progressing says so, nothing is Degraded",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
			held:        []converge.Hold{soakingHold("b", 2)},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "2 nodes are active; 1 node is at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 1 node is at revision 2; operands soaking before b starts revision 2"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "a soak after a hold holds: Progressing and Degraded say so",
			st:          Status{LatestAvailableRevision: 2, HeldSince: &metav1.Time{Time: t0.Add(-11 * time.Minute)}, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
			held:        []converge.Hold{soakingHold("b", 2)},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "2 nodes are active; 1 node is at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonRolloutHeld, "1 node is at revision 1; 1 node is at revision 2; starting nodes is held: operands soaking before b starts revision 2"},
			degraded:    cond{metav1.ConditionTrue, ReasonRolloutHeld, "starting nodes is held: operands soaking before b starts revision 2"},
		},
		{
			name:      "a pause beside a hold: the pause is a wait, the hold turns Degraded",
			st:        Status{LatestAvailableRevision: 2, HeldSince: &metav1.Time{Time: t0.Add(-11 * time.Minute)}, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
			held:      []converge.Hold{oldInstallerHold("b"), pausedHold()},
			available: cond{metav1.ConditionTrue, ReasonNodesActive, "2 nodes are active; 1 node is at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonRolloutHeld,
				"1 node is at revision 1; 1 node is at revision 2; paused: no node is started; starting nodes is held: b waits for its old installer to be deleted"},
			degraded: cond{metav1.ConditionTrue, ReasonRolloutHeld, "starting nodes is held: b waits for its old installer to be deleted"},
		},
		{
			name:        "a regressed operand is Degraded and the node is not at the latest revision",
			st:          Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{{NodeName: "a", CurrentRevision: 3, RegressedRevision: 2}}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 3"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 3"},
			degraded:    cond{metav1.ConditionTrue, ReasonNodeRevisionRegressed, "a runs revision 2 below its current revision 3; installing again"},
		},
		{
			name:        "a node above the latest revision counts as at it (never downgraded)",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 3, 0), node("b", 2, 0)}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "2 nodes are active; 1 node is at revision 2; 1 node is at revision 3"},
			progressing: cond{metav1.ConditionFalse, ReasonAllNodesAtLatestRevision, "1 node is at revision 2; 1 node is at revision 3"},
			degraded:    cond{metav1.ConditionFalse, conditions.ReasonAsExpected, ""},
		},
		{
			name:        "a vanished installer is Degraded with library-go's reason",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 2), 2, 1, ReasonInstallerPodDisappeared, t0, "installer installer-2-a disappeared before it finished")}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded:    cond{metav1.ConditionTrue, ReasonInstallerPodDisappeared, "1 node is failing on revision 2:\na: installer installer-2-a disappeared before it finished"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DesiredConditions(tt.st, tt.held, tt.policy, t0)
			require.Len(t, got, 3)
			check := func(c metav1.Condition, typ string, want cond) {
				assert.Equal(t, typ, c.Type)
				assert.Equal(t, want, cond{c.Status, c.Reason, c.Message}, typ)
				assert.NoError(t, conditions.Validate(c))
			}
			check(got[0], conditions.TypeAvailable, tt.available)
			check(got[1], conditions.TypeProgressing, tt.progressing)
			check(got[2], conditions.TypeDegraded, tt.degraded)
		})
	}
}

func TestApplyConditions(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2)}}
	changed, err := applyConditions(&st, nil, Policy{}, t0.Add(300*time.Millisecond))
	require.NoError(t, err)
	assert.True(t, changed)
	require.Len(t, st.Conditions, 3)
	assert.Equal(t, t0, st.Conditions[1].LastTransitionTime.Time, "truncated to seconds")

	changed, err = applyConditions(&st, nil, Policy{}, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.False(t, changed, "same conditions again")

	st.NodeStatuses[0] = node("a", 2, 0)
	changed, err = applyConditions(&st, nil, Policy{}, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, changed)
	p, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
	assert.Equal(t, metav1.ConditionFalse, p.Status)
	assert.Equal(t, t0.Add(time.Minute), p.LastTransitionTime.Time)
	a, _ := conditions.Get(st.Conditions, conditions.TypeAvailable)
	assert.Equal(t, t0, a.LastTransitionTime.Time, "Available stayed True")
}

// TestStatusCanAlwaysBeWritten: no observation, however many nodes or
// however long their errors, yields conditions the API refuses: 1,500
// unreachable nodes holding the rollout, 50 nodes with long installer
// errors, and long errors already persisted.
func TestStatusCanAlwaysBeWritten(t *testing.T) {
	long := strings.Repeat("x", 5000)
	st := Status{LatestAvailableRevision: 2, HeldSince: &metav1.Time{Time: t0.Add(-time.Hour)}}
	var held []converge.Hold
	for i := range 1500 {
		name := fmt.Sprintf("unreachable-node-with-a-long-name-%05d", i)
		st.NodeStatuses = append(st.NodeStatuses, node(name, 1, 0))
		held = append(held, unavailableHold(name, "unreachable", 1), unreachableHold(name))
	}
	for i := range 50 {
		st.NodeStatuses = append(st.NodeStatuses, failed(node(fmt.Sprintf("failing-%02d", i), 1, 2), 2, 1, ReasonInstallerPodFailed, t0, long, long, long))
	}
	for _, c := range DesiredConditions(st, held, Policy{}, t0) {
		assert.NoError(t, conditions.Validate(c), c.Type)
		assert.LessOrEqual(t, len(c.Message), 32768, c.Type)
	}
	changed, err := applyConditions(&st, held, Policy{}, t0)
	require.NoError(t, err)
	assert.True(t, changed)
}
