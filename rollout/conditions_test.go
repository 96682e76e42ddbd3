package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/conditions"
)

func TestDesiredConditions(t *testing.T) {
	type cond struct {
		status  metav1.ConditionStatus
		reason  string
		message string
	}
	tests := []struct {
		name        string
		st          Status
		obs         Observation
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
				failed(node("a", 4, 5), 5, 1, FailureInstallerFailed, t0, "installer: boom"),
				failed(node("b", 4, 5), 5, 2, FailureInstallerFailed, t0, "installer: OOMKilled"),
				failed(node("c", 3, 4), 4, 1, FailureInstallerFailed, t0, "installer: old"),
				failed(node("d", 5, 0), 5, 1, FailureInstallerFailed, t0, "recovered"),
			}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "4 nodes are active; 1 node is at revision 3; 2 nodes are at revision 4; 1 node is at revision 5"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 3; 2 nodes are at revision 4; 1 node is at revision 5"},
			degraded: cond{metav1.ConditionTrue, ReasonInstallerPodFailed,
				"1 node is failing on revision 4:\nc: installer: old; 2 nodes are failing on revision 5:\na: installer: boom\nb: installer: OOMKilled"},
		},
		{
			name:        "operand failure",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 0), 2, 1, FailureOperandFailed, t0, "CrashLoopBackOff")}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded:    cond{metav1.ConditionTrue, ReasonOperandFailed, "1 node is failing on revision 2:\na: CrashLoopBackOff"},
		},
		{
			name:        "retries exhausted",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 2), 2, 3, FailureInstallerFailed, t0, "x")}},
			policy:      Policy{MaxInstallerRetries: 2},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded: cond{metav1.ConditionTrue, ReasonInstallerRetriesExhausted,
				"1 node is failing on revision 2:\na: x\na: gave up after 3 failures (maxInstallerRetries 2)"},
		},
		{
			name:        "retries exhausted by operand failures",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 0), 2, 2, FailureOperandFailed, t0, "CrashLoopBackOff")}},
			policy:      Policy{MaxInstallerRetries: 1},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "1 node is active; 1 node is at revision 1"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "1 node is at revision 1; 0 nodes have achieved new revision 2"},
			degraded: cond{metav1.ConditionTrue, ReasonInstallerRetriesExhausted,
				"1 node is failing on revision 2:\na: CrashLoopBackOff\na: gave up after 2 failures (maxInstallerRetries 1)"},
		},
		{
			name:        "unreachable nodes are reported",
			st:          Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0), node("c", 1, 0)}},
			obs:         Observation{"c": {Unreachable: true}, "b": {Unreachable: true}},
			available:   cond{metav1.ConditionTrue, ReasonNodesActive, "3 nodes are active; 2 nodes are at revision 1; 1 node is at revision 2"},
			progressing: cond{metav1.ConditionTrue, ReasonNodesProgressing, "2 nodes are at revision 1; 1 node is at revision 2"},
			degraded:    cond{metav1.ConditionTrue, ReasonNodesUnreachable, "2 nodes are unreachable: b, c"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DesiredConditions(tt.st, tt.obs, tt.policy)
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
	changed, err := ApplyConditions(&st, nil, Policy{}, t0.Add(300*time.Millisecond))
	require.NoError(t, err)
	assert.True(t, changed)
	require.Len(t, st.Conditions, 3)
	assert.Equal(t, t0, st.Conditions[1].LastTransitionTime.Time, "truncated to seconds")

	changed, err = ApplyConditions(&st, nil, Policy{}, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.False(t, changed, "same conditions again")

	st.NodeStatuses[0] = node("a", 2, 0)
	changed, err = ApplyConditions(&st, nil, Policy{}, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, changed)
	p, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
	assert.Equal(t, metav1.ConditionFalse, p.Status)
	assert.Equal(t, t0.Add(time.Minute), p.LastTransitionTime.Time)
	a, _ := conditions.Get(st.Conditions, conditions.TypeAvailable)
	assert.Equal(t, t0, a.LastTransitionTime.Time, "Available stayed True")
}
