package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrinting(t *testing.T) {
	tasks := pods("0000_10_a_0", "0000_10_b_0", "0000_20_a_0")
	for i, task := range tasks {
		task.Index, task.Total = i+1, len(tasks)
	}
	g, err := buildGraph(tasks, byNumberAndComponent)
	require.NoError(t, err)

	assert.Equal(t, `node 0: 0 tasks
node 1: 10-a, 1 task, after 0
  0000_10_a_0 pod "0000_10_a_0" (1 of 3)
node 2: 10-b, 1 task, after 0
  0000_10_b_0 pod "0000_10_b_0" (2 of 3)
node 3: 20-a, 1 task, after 1, 2
  0000_20_a_0 pod "0000_20_a_0" (3 of 3)
`, g.String())

	assert.Equal(t, `flowchart TD
  n0["0 tasks"]
  n1["10-a, 1 task"]
  n2["10-b, 1 task"]
  n3["20-a, 1 task"]
  n0 --> n1
  n0 --> n2
  n1 --> n3
  n2 --> n3
`, g.Mermaid())

	assert.Equal(t, `digraph tasks {
  labelloc=t;
  rankdir=TB;
  0 [ label="0 tasks" shape="box" ];
  1 [ label="10-a, 1 task" shape="box" ];
  2 [ label="10-b, 1 task" shape="box" ];
  3 [ label="20-a, 1 task" shape="box" ];
  0 -> 1;
  0 -> 2;
  1 -> 3;
  2 -> 3;
}
`, g.DOT())
	assert.Len(t, g.nodes, 4)
}
