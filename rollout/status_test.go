package rollout

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

func TestStatusDeepCopy(t *testing.T) {
	orig := &Status{
		LatestAvailableRevision: 3,
		NodeStatuses:            []NodeStatus{failed(node("a", 1, 3), 3, 1, ReasonInstallerPodFailed, t0, "e1")},
		Conditions:              []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "R"}},
	}
	cp := orig.DeepCopy()
	require.Equal(t, orig, cp)

	cp.NodeStatuses[0].LastFailedErrors[0] = "changed"
	cp.NodeStatuses[0].LastFailedTime.Time = t0.Add(1)
	cp.Conditions[0].Reason = "Changed"
	cp.NodeStatuses[0].CurrentRevision = 9

	assert.Equal(t, "e1", orig.NodeStatuses[0].LastFailedErrors[0])
	assert.Equal(t, t0, orig.NodeStatuses[0].LastFailedTime.Time)
	assert.Equal(t, "R", orig.Conditions[0].Reason)
	assert.Equal(t, int32(1), orig.NodeStatuses[0].CurrentRevision)

	assert.Nil(t, (*Status)(nil).DeepCopy())
	assert.Nil(t, (*NodeStatus)(nil).DeepCopy())
}

func TestStatusJSON(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0, "x")}}
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.JSONEq(t, `{"latestAvailableRevision":2,"nodeStatuses":[{"nodeName":"a","currentRevision":1,"targetRevision":2,
		"lastFailedRevision":2,"lastFailedTime":"2026-01-02T03:04:05Z","lastFailedCount":1,"lastFailedReason":"InstallerPodFailed",
		"lastFailedErrors":["x"]}]}`, string(b))
	var back Status
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, st.NodeStatuses[0].LastFailedTime.Unix(), back.NodeStatuses[0].LastFailedTime.Unix())
	assert.Equal(t, st.NodeStatuses[0].LastFailedErrors, back.NodeStatuses[0].LastFailedErrors)
}

func TestStatusValidate(t *testing.T) {
	tests := []struct {
		name    string
		st      Status
		wantErr string
	}{
		{name: "empty", st: Status{}},
		{name: "valid", st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2), node("b", 2, 0)}}},
		{name: "negative latest", st: Status{LatestAvailableRevision: -1}, wantErr: "latest available revision -1 is negative"},
		{name: "empty name", st: Status{NodeStatuses: []NodeStatus{{}}}, wantErr: "node status with an empty name"},
		{name: "duplicate", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 1, 0), node("a", 1, 0)}}, wantErr: `duplicate node "a"`},
		{name: "negative revision", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", -1, 0)}}, wantErr: `node "a" has a negative revision or failure count`},
		{name: "negative count", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{{NodeName: "a", LastFailedCount: -1}}}, wantErr: `node "a" has a negative revision or failure count`},
		{name: "target below current", st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 3, 2)}}, wantErr: `node "a" targets revision 2, below its current revision 3`},
		{name: "target equal to current: a reinstall is valid", st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 3, 3)}}},
		{name: "latest below what nodes run is a stated rule, not an error", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 1, 2), node("b", 3, 0)}}},
		{name: "nil", wantErr: "nil status"},
		{name: "bad installer to delete", st: Status{InstallersToDelete: []Installer{{Name: "x"}}}, wantErr: `installer to delete {Name:x Node: Revision:0} needs a name, a node and a revision that is not negative`},
		{name: "unknown failure reason", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{{NodeName: "a", LastFailedReason: "Oops"}}}, wantErr: `node "a" has unknown failure reason "Oops"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &tt.st
			if tt.name == "nil" {
				st = nil
			}
			err := st.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, "rollout: invalid status: "+tt.wantErr)
		})
	}
}

func TestNodeStatusFailing(t *testing.T) {
	tests := []struct {
		name string
		n    NodeStatus
		want bool
	}{
		{name: "never failed", n: node("a", 1, 2)},
		{name: "failing its target", n: failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0), want: true},
		{name: "target moved past the failure", n: failed(node("a", 1, 3), 2, 1, ReasonInstallerPodFailed, t0)},
		{name: "operand failed, not reached", n: failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, t0), want: true},
		{name: "reached the failed revision later", n: failed(node("a", 2, 0), 2, 1, ReasonInstallerPodFailed, t0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.n.Failing())
		})
	}
}

func TestStatusNodeAndConverged(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 2)}}
	b, ok := st.Node("b")
	require.True(t, ok)
	assert.Equal(t, int32(2), b.TargetRevision)
	_, ok = st.Node("c")
	assert.False(t, ok)
	assert.False(t, st.Converged())

	st.NodeStatuses[1] = node("b", 2, 0)
	assert.True(t, st.Converged())
	assert.False(t, Status{}.Converged())
}
