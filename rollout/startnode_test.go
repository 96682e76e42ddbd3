package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

func TestStartNode(t *testing.T) {
	tests := []struct {
		name       string
		nodes      []NodeStatus
		obs        Observation
		want       int
		wantReason string
	}{
		{
			name:       "three fresh nodes: the first missing operand",
			nodes:      []NodeStatus{node("a", 0, 0), node("b", 0, 0), node("c", 0, 0)},
			want:       0,
			wantReason: "a has the oldest operand that is not ready",
		},
		{
			name:       "one node already transitioning goes first",
			nodes:      []NodeStatus{node("a", 1, 0), node("b", 1, 2), node("c", 1, 0)},
			obs:        Observation{"a": pending(0), "b": ready(1), "c": ready(1)},
			want:       1,
			wantReason: "b is moving to revision 2",
		},
		{
			name: "a node that failed a revision newer than every current one",
			nodes: []NodeStatus{node("a", 1, 0), node("b", 1, 0),
				failed(node("c", 1, 0), 2, 1, ReasonOperandFailed, t0, "boom")},
			obs:        Observation{"a": pending(1), "b": ready(1), "c": ready(1)},
			want:       2,
			wantReason: "c failed revision 2, newer than every current revision",
		},
		{
			name: "an old failure does not count once a node is past it",
			nodes: []NodeStatus{node("a", 3, 0), node("b", 2, 0),
				failed(node("c", 2, 0), 3, 1, ReasonOperandFailed, t0)},
			obs:        Observation{"a": ready(3), "b": ready(2), "c": ready(2)},
			want:       1,
			wantReason: "b has the oldest current revision",
		},
		{
			name:       "unready operands chosen first, oldest revision wins",
			nodes:      []NodeStatus{node("a", 3, 0), node("b", 3, 0), node("c", 3, 0)},
			obs:        Observation{"a": ready(3), "b": pending(3), "c": pending(2)},
			want:       2,
			wantReason: "c has the oldest operand that is not ready",
		},
		{
			name:       "a missing operand counts as the oldest",
			nodes:      []NodeStatus{node("a", 3, 0), node("b", 3, 0), node("c", 3, 0)},
			obs:        Observation{"a": pending(1), "b": {}, "c": ready(3)},
			want:       1,
			wantReason: "b has the oldest operand that is not ready",
		},
		{
			name:       "operand at another revision than the node's current",
			nodes:      []NodeStatus{node("a", 3, 0), node("b", 3, 0), node("c", 3, 0)},
			obs:        Observation{"a": ready(3), "b": ready(2), "c": ready(3)},
			want:       1,
			wantReason: "b has the oldest operand not at its current revision",
		},
		{
			name:       "nodes at different old revisions: oldest current",
			nodes:      []NodeStatus{node("a", 4, 0), node("b", 2, 0), node("c", 3, 0)},
			obs:        Observation{"a": ready(4), "b": ready(2), "c": ready(3)},
			want:       1,
			wantReason: "b has the oldest current revision",
		},
		{
			name:       "unreachable nodes are never the start",
			nodes:      []NodeStatus{node("a", 1, 2), node("b", 1, 0), node("c", 1, 0)},
			obs:        Observation{"a": {Unreachable: true}, "b": ready(1), "c": pending(1)},
			want:       2,
			wantReason: "c has the oldest operand that is not ready",
		},
		{
			name:       "every node unreachable",
			nodes:      []NodeStatus{node("a", 1, 0), node("b", 1, 0)},
			obs:        Observation{"a": {Unreachable: true}, "b": {Unreachable: true}},
			want:       0,
			wantReason: "every node is unreachable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason, err := StartNode(tt.nodes, tt.obs)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantReason, reason)
		})
	}
}

func TestStartNodeEmpty(t *testing.T) {
	_, _, err := StartNode(nil, nil)
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.Contains(t, err.Error(), "rollout: ")
}
