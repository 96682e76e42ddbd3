package graph

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

// TestCheckRejectsWhatNoRunCanFollow: a nil node, an edge to or from a missing node
// and a cycle are errors, a cycle a *CycleError naming its nodes.
func TestCheckRejectsWhatNoRunCanFollow(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*taskNode
	}{
		{name: "nil node", nodes: []*taskNode{nil}},
		{name: "edge to a missing node", nodes: []*taskNode{{out: []int{3}}}},
		{name: "edge from a missing node", nodes: []*taskNode{{in: []int{-1}}}},
		{name: "cycle", nodes: []*taskNode{{in: []int{1}, out: []int{1}}, {in: []int{0}, out: []int{0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, (&Graph{nodes: tt.nodes}).check(), converge.ErrInvalid)
		})
	}
	var cycle *CycleError
	require.ErrorAs(t, (&Graph{nodes: []*taskNode{{out: []int{1}}, {in: []int{0, 2}, out: []int{2}}, {in: []int{1}, out: []int{1}}}}).check(), &cycle)
	assert.Len(t, cycle.Tasks, 2, "the cycle names its two nodes")
	require.ErrorIs(t, (*Graph)(nil).check(), converge.ErrInvalid)
}

// matchEdges checks what Build keeps by construction and no run reads: the in of
// every node holds exactly the nodes whose out point at it, as many times as they do.
func matchEdges(g *Graph) error {
	want := make([][]int, len(g.nodes))
	for i, n := range g.nodes {
		for _, o := range n.out {
			want[o] = append(want[o], i)
		}
	}
	for i, n := range g.nodes {
		if !slices.Equal(sortedInts(n.in), want[i]) {
			return fmt.Errorf("node %d: in %v does not match the nodes whose out point at it %v", i, n.in, want[i])
		}
	}
	return nil
}

func TestMatchEdgesNamesTheRealPredecessors(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*taskNode
		want  string
	}{
		{name: "in without out", nodes: []*taskNode{{}, {in: []int{0}}},
			want: "node 1: in [0] does not match the nodes whose out point at it []"},
		{name: "in and out disagree", nodes: []*taskNode{{out: []int{2}}, {}, {in: []int{1}}},
			want: "node 2: in [1] does not match the nodes whose out point at it [0]"},
		{name: "in names other predecessors with the same count and index sum", nodes: []*taskNode{{out: []int{2}}, {}, {in: []int{1, 3}}, {}, {out: []int{2}}},
			want: "node 2: in [1 3] does not match the nodes whose out point at it [0 4]"},
		{name: "in repeats a predecessor another out edge stands for", nodes: []*taskNode{{out: []int{3, 3}}, {}, {out: []int{3}}, {in: []int{1, 1, 0}}},
			want: "node 3: in [1 1 0] does not match the nodes whose out point at it [0 0 2]"},
		{name: "in misses a repeated out edge", nodes: []*taskNode{{out: []int{1, 1}}, {in: []int{0}}},
			want: "node 1: in [0] does not match the nodes whose out point at it [0 0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.EqualError(t, matchEdges(&Graph{nodes: tt.nodes}), tt.want)
		})
	}
}

func TestMatchEdgesAcceptsMatchingEdges(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*taskNode
	}{
		{name: "empty", nodes: nil},
		{name: "in in another order than the out edges", nodes: []*taskNode{{out: []int{3}}, {out: []int{3}}, {out: []int{3}}, {in: []int{2, 0, 1}}}},
		{name: "a repeated edge on both sides", nodes: []*taskNode{{out: []int{2, 2}}, {out: []int{2}}, {in: []int{0, 1, 0}}}},
		{name: "diamond", nodes: []*taskNode{{out: []int{2, 1}}, {in: []int{0}, out: []int{3}}, {in: []int{0}, out: []int{3}}, {in: []int{2, 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, matchEdges(&Graph{nodes: tt.nodes}))
			require.NoError(t, (&Graph{nodes: tt.nodes}).check())
		})
	}
}
