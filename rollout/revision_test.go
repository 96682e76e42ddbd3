package rollout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRevisionToStart(t *testing.T) {
	prev := func(n NodeStatus) *NodeStatus { return &n }
	tests := []struct {
		name   string
		curr   NodeStatus
		prev   *NodeStatus
		latest int32
		want   int32
	}{
		{name: "first node gets the latest", curr: node("a", 1, 0), latest: 3, want: 3},
		{name: "first fresh node gets the latest", curr: node("a", 0, 0), latest: 1, want: 1},
		{name: "first node already current", curr: node("a", 3, 0), latest: 3, want: 0},
		{name: "first node ahead of latest is never downgraded", curr: node("a", 4, 0), latest: 3, want: 0},
		{name: "first node retries the latest it failed", curr: failed(node("a", 2, 0), 3, 1, ReasonOperandFailed, t0), latest: 3, want: 3},
		{name: "first node failed an older revision", curr: failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, t0), latest: 3, want: 3},
		{name: "node in transition starts nothing", curr: node("a", 1, 2), latest: 3, want: 0},
		{name: "follow previous node ahead", curr: node("b", 1, 0), prev: prev(node("a", 3, 0)), latest: 3, want: 3},
		{name: "follow previous node ahead of an older revision", curr: node("b", 1, 0), prev: prev(node("a", 2, 0)), latest: 3, want: 2},
		{name: "previous node not ahead", curr: node("b", 3, 0), prev: prev(node("a", 3, 0)), latest: 4, want: 0},
		{name: "previous node behind", curr: node("b", 3, 0), prev: prev(node("a", 2, 0)), latest: 4, want: 0},
		{name: "previous node in transition", curr: node("b", 1, 0), prev: prev(node("a", 2, 3)), latest: 3, want: 0},
		{name: "this node failed the previous node's revision",
			curr: failed(node("b", 1, 0), 2, 1, ReasonOperandFailed, t0), prev: prev(node("a", 2, 0)), latest: 3, want: 0},
		{name: "previous node above latest is not followed", curr: node("b", 1, 0), prev: prev(node("a", 5, 0)), latest: 3, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RevisionToStart(tt.curr, tt.prev, tt.latest))
		})
	}
}
