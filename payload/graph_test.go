package payload

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*TaskNode
		want  []nodeView
	}{
		{name: "empty", nodes: []*TaskNode{}, want: []nodeView{}},
		{name: "single", nodes: []*TaskNode{{Tasks: pods("p")}}, want: []nodeView{{Files: []string{"p"}}}},
		{
			name:  "job first",
			nodes: []*TaskNode{{Tasks: []*Task{job("j"), pod("p")}}},
			want:  []nodeView{{Files: []string{"j"}, Out: []int{1}}, {In: []int{0}, Files: []string{"p"}}},
		},
		{
			name:  "job last",
			nodes: []*TaskNode{{Tasks: []*Task{pod("p"), job("j")}}},
			want:  []nodeView{{In: []int{1}, Files: []string{"j"}}, {Files: []string{"p"}, Out: []int{0}}},
		},
		{
			name:  "interior",
			nodes: []*TaskNode{{Tasks: []*Task{pod("p1"), pod("p2"), job("j"), pod("p3")}}},
			want: []nodeView{
				{In: []int{1}, Files: []string{"j"}, Out: []int{2}},
				{Files: []string{"p1", "p2"}, Out: []int{0}},
				{In: []int{0}, Files: []string{"p3"}},
			},
		},
		{
			name:  "interspersed",
			nodes: []*TaskNode{{Tasks: []*Task{pod("p1"), pod("p2"), job("j1"), pod("p3"), job("j2"), pod("p4")}}},
			want: []nodeView{
				{In: []int{1}, Files: []string{"j1"}, Out: []int{3}},
				{Files: []string{"p1", "p2"}, Out: []int{0}},
				{In: []int{3}, Files: []string{"j2"}, Out: []int{4}},
				{In: []int{0}, Files: []string{"p3"}, Out: []int{2}},
				{In: []int{2}, Files: []string{"p4"}},
			},
		},
		{
			name:  "both ends",
			nodes: []*TaskNode{{Tasks: []*Task{job("j1"), pod("p1"), pod("p2"), job("j2")}}},
			want: []nodeView{
				{Files: []string{"j1"}, Out: []int{2}},
				{In: []int{2}, Files: []string{"j2"}},
				{In: []int{0}, Files: []string{"p1", "p2"}, Out: []int{1}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &TaskGraph{Nodes: tt.nodes}
			require.NoError(t, g.Split(SplitOnJobs))
			assert.Equal(t, tt.want, view(g.Nodes))
			require.NoError(t, g.Validate())
		})
	}
}

func TestSplitAndParallelize(t *testing.T) {
	tests := []struct {
		name  string
		tasks []*Task
		want  []nodeView
	}{
		{name: "empty", tasks: nil, want: []nodeView{{}}},
		{name: "single", tasks: pods("0000_50_a_0"), want: []nodeView{{Files: []string{"0000_50_a_0"}}}},
		{
			name:  "job after an unnumbered pod",
			tasks: []*Task{pod("a"), job("0000_50_a_0")},
			want:  []nodeView{{In: []int{1}, Files: []string{"0000_50_a_0"}}, {Files: []string{"a"}, Out: []int{0}}},
		},
		{
			name:  "job then one component",
			tasks: []*Task{pod("a"), job("0000_50_a_0"), pod("0000_50_a_1"), pod("0000_50_a_2")},
			want: []nodeView{
				{In: []int{1}, Files: []string{"0000_50_a_0"}, Out: []int{2}},
				{Files: []string{"a"}, Out: []int{0}},
				{In: []int{0}, Files: []string{"0000_50_a_1", "0000_50_a_2"}},
			},
		},
		{
			name:  "job then several components in one level",
			tasks: []*Task{job("a"), pod("0000_50_a_0"), pod("0000_50_b_0"), pod("0000_50_b_1")},
			want: []nodeView{
				{Files: []string{"a"}, Out: []int{1}},
				{In: []int{0}, Out: []int{2, 3}},
				{In: []int{1}, Files: []string{"0000_50_a_0"}},
				{In: []int{1}, Files: []string{"0000_50_b_0", "0000_50_b_1"}},
			},
		},
		{
			name:  "jobs around a level: fan out, fan in to an anchor",
			tasks: []*Task{job("a"), pod("0000_50_a_0"), pod("0000_50_b_0"), pod("0000_50_b_1"), pod("0000_50_c_0"), job("b")},
			want: []nodeView{
				{Files: []string{"a"}, Out: []int{2}},
				{In: []int{6}, Files: []string{"b"}},
				{In: []int{0}, Out: []int{3, 4, 5}},
				{In: []int{2}, Files: []string{"0000_50_a_0"}, Out: []int{6}},
				{In: []int{2}, Files: []string{"0000_50_b_0", "0000_50_b_1"}, Out: []int{6}},
				{In: []int{2}, Files: []string{"0000_50_c_0"}, Out: []int{6}},
				{In: []int{3, 4, 5}, Out: []int{1}},
			},
		},
		{
			name: "consecutive single-component levels merge",
			tasks: pods("0000_07_a_0", "0000_08_a_0", "0000_09_a_0", "0000_09_a_1", "0000_09_b_0", "0000_09_b_1",
				"0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"),
			want: []nodeView{
				{Out: []int{1}},
				{In: []int{0}, Files: []string{"0000_07_a_0", "0000_08_a_0"}, Out: []int{2, 3}},
				{In: []int{1}, Files: []string{"0000_09_a_0", "0000_09_a_1"}, Out: []int{4}},
				{In: []int{1}, Files: []string{"0000_09_b_0", "0000_09_b_1"}, Out: []int{4}},
				{In: []int{2, 3}, Files: []string{"0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"}},
			},
		},
		{
			name:  "two parallel levels in a row get a spacer",
			tasks: pods("0000_10_a_0", "0000_10_b_0", "0000_20_a_0", "0000_20_b_0"),
			want: []nodeView{
				{Out: []int{1, 2}},
				{In: []int{0}, Files: []string{"0000_10_a_0"}, Out: []int{3}},
				{In: []int{0}, Files: []string{"0000_10_b_0"}, Out: []int{3}},
				{In: []int{1, 2}, Out: []int{4, 5}},
				{In: []int{3}, Files: []string{"0000_20_a_0"}},
				{In: []int{3}, Files: []string{"0000_20_b_0"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := BuildGraph(tt.tasks, ByNumberAndComponent)
			require.NoError(t, err)
			assert.Equal(t, tt.want, view(g.Nodes))
		})
	}
}

func TestAddDependencies(t *testing.T) {
	ns := newTask("0000_10_a_ns", nsGVKForTest)
	var cycle *CycleError
	var unknown *UnknownDependencyError
	tests := []struct {
		name    string
		tasks   []*Task
		breakFn BreakFunc
		want    []nodeView
		wantErr any // a pointer to the wanted error type
	}{
		{
			name:    "a dependency across parallel nodes adds an edge",
			tasks:   []*Task{newTask("0000_10_a_0", podGVK, "Pod/0000_10_b_0"), pod("0000_10_b_0")},
			breakFn: ByNumberAndComponent,
			want: []nodeView{
				{Out: []int{1, 2}},
				{In: []int{0, 2}, Files: []string{"0000_10_a_0"}},
				{In: []int{0}, Files: []string{"0000_10_b_0"}, Out: []int{1}},
			},
		},
		{
			name:    "a dependency the run levels honour adds nothing",
			tasks:   []*Task{ns, pod("0000_20_b_0"), newTask("0000_20_c_0", podGVK, "Namespace/0000_10_a_ns")},
			breakFn: ByNumberAndComponent,
			want: []nodeView{
				{Out: []int{1}},
				{In: []int{0}, Files: []string{"0000_10_a_ns"}, Out: []int{2, 3}},
				{In: []int{1}, Files: []string{"0000_20_b_0"}},
				{In: []int{1}, Files: []string{"0000_20_c_0"}},
			},
		},
		{
			name:    "unknown dependency",
			tasks:   []*Task{newTask("0000_10_a_0", podGVK, "Pod/missing"), pod("0000_10_b_0")},
			breakFn: ByNumberAndComponent,
			wantErr: &unknown,
		},
		{
			name:    "a dependency on a later task of the same node is a cycle",
			tasks:   []*Task{newTask("0000_10_a_0", podGVK, "Pod/0000_10_a_1"), pod("0000_10_a_1")},
			breakFn: ByNumberAndComponent,
			wantErr: &cycle,
		},
		{
			name:    "a dependency against the run-level order is a cycle",
			tasks:   []*Task{newTask("0000_10_a_0", podGVK, "Namespace/0000_20_b_ns"), pod("0000_10_c_0"), newTask("0000_20_b_ns", nsGVKForTest)},
			breakFn: ByNumberAndComponent,
			wantErr: &cycle,
		},
		{
			name:    "the same dependency is an edge when flattened",
			tasks:   []*Task{newTask("0000_10_a_0", podGVK, "Namespace/0000_20_b_ns"), pod("0000_10_c_0"), newTask("0000_20_b_ns", nsGVKForTest)},
			breakFn: FlattenByNumberAndComponent,
			want: []nodeView{
				{Out: []int{1, 2, 3}},
				{In: []int{0, 3}, Files: []string{"0000_10_a_0"}},
				{In: []int{0}, Files: []string{"0000_10_c_0"}},
				{In: []int{0}, Files: []string{"0000_20_b_ns"}, Out: []int{1}},
			},
		},
		{
			name:    "two tasks depending on each other",
			tasks:   []*Task{newTask("0000_10_a_0", podGVK, "Pod/0000_10_b_0"), newTask("0000_10_b_0", podGVK, "Pod/0000_10_a_0")},
			breakFn: FlattenByNumberAndComponent,
			wantErr: &cycle,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := BuildGraph(tt.tasks, tt.breakFn)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorAs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want != nil {
				assert.Equal(t, tt.want, view(g.Nodes))
			}
			require.NoError(t, g.Validate())
		})
	}
}

var nsGVKForTest = schemaGVK("", "v1", "Namespace")

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*TaskNode
	}{
		{name: "nil node", nodes: []*TaskNode{nil}},
		{name: "edge to a missing node", nodes: []*TaskNode{{Out: []int{3}}}},
		{name: "edge from a missing node", nodes: []*TaskNode{{In: []int{-1}}}},
		{name: "In without Out", nodes: []*TaskNode{{}, {In: []int{0}}}},
		{name: "In and Out disagree", nodes: []*TaskNode{{Out: []int{2}}, {}, {In: []int{1}}}},
		{name: "cycle", nodes: []*TaskNode{{In: []int{1}, Out: []int{1}}, {In: []int{0}, Out: []int{0}}}},
		{
			name:  "In names other predecessors with the same count and index sum",
			nodes: []*TaskNode{{Out: []int{2}}, {}, {In: []int{1, 3}}, {}, {Out: []int{2}}},
		},
		{
			name:  "In repeats a predecessor another Out edge stands for",
			nodes: []*TaskNode{{Out: []int{3, 3}}, {}, {Out: []int{3}}, {In: []int{1, 1, 0}}},
		},
		{name: "In misses a repeated Out edge", nodes: []*TaskNode{{Out: []int{1, 1}}, {In: []int{0}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, (&TaskGraph{Nodes: tt.nodes}).Validate(), ErrInvalid)
		})
	}
	var cycle *CycleError
	require.ErrorAs(t, (&TaskGraph{Nodes: []*TaskNode{{Out: []int{1}}, {In: []int{0, 2}, Out: []int{2}}, {In: []int{1}, Out: []int{1}}}}).Validate(), &cycle)
	assert.Equal(t, []int{1, 2}, cycle.Nodes)
	require.ErrorIs(t, (*TaskGraph)(nil).Validate(), ErrInvalid)
}

func TestValidateMismatchNamesTheRealPredecessors(t *testing.T) {
	err := (&TaskGraph{Nodes: []*TaskNode{{Out: []int{2}}, {}, {In: []int{1, 3}}, {}, {Out: []int{2}}}}).Validate()
	require.ErrorIs(t, err, ErrInvalid)
	assert.EqualError(t, err, "payload: graph node 2: In [1 3] does not match the nodes whose Out point at it [0 4]: payload: invalid input")
}

func TestValidateAcceptsMatchingEdges(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*TaskNode
	}{
		{name: "empty", nodes: nil},
		{name: "In in another order than the Out edges", nodes: []*TaskNode{{Out: []int{3}}, {Out: []int{3}}, {Out: []int{3}}, {In: []int{2, 0, 1}}}},
		{name: "a repeated edge on both sides", nodes: []*TaskNode{{Out: []int{2, 2}}, {Out: []int{2}}, {In: []int{0, 1, 0}}}},
		{name: "diamond", nodes: []*TaskNode{{Out: []int{2, 1}}, {In: []int{0}, Out: []int{3}}, {In: []int{0}, Out: []int{3}}, {In: []int{2, 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, (&TaskGraph{Nodes: tt.nodes}).Validate())
		})
	}
}

func TestSplitAndParallelizeRejectBadGraphs(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*TaskNode
	}{
		{name: "nil node", nodes: []*TaskNode{{Tasks: pods("0000_10_a_0")}, nil}},
		{name: "nil task", nodes: []*TaskNode{{Tasks: []*Task{pod("0000_10_a_0"), nil, job("j"), pod("0000_10_b_0")}}}},
		{name: "task without manifest", nodes: []*TaskNode{{Tasks: []*Task{job("j"), {}}}}},
		{name: "edge to a missing node", nodes: []*TaskNode{{Tasks: []*Task{pod("0000_10_a_0"), job("j"), pod("0000_10_b_0")}, Out: []int{5}}}},
		{name: "edge from a missing node", nodes: []*TaskNode{{Tasks: []*Task{pod("0000_10_a_0"), job("j"), pod("0000_10_b_0")}, In: []int{-2}}}},
		{name: "In and Out disagree", nodes: []*TaskNode{{Tasks: []*Task{pod("0000_10_a_0"), job("j")}, Out: []int{1}}, {Tasks: pods("0000_10_b_0", "0000_10_c_0")}}},
		{name: "cycle", nodes: []*TaskNode{{Tasks: []*Task{pod("0000_10_a_0"), job("j")}, In: []int{1}, Out: []int{1}}, {Tasks: pods("0000_10_b_0", "0000_10_c_0"), In: []int{0}, Out: []int{0}}}},
	}
	ops := []struct {
		name string
		run  func(*TaskGraph) error
	}{
		{name: "Split", run: func(g *TaskGraph) error { return g.Split(SplitOnJobs) }},
		{name: "Parallelize by number", run: func(g *TaskGraph) error { return g.Parallelize(ByNumberAndComponent) }},
		{name: "Parallelize flattened", run: func(g *TaskGraph) error { return g.Parallelize(FlattenByNumberAndComponent) }},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				g := &TaskGraph{Nodes: tt.nodes}
				before := len(g.Nodes)
				require.NotPanics(t, func() { require.ErrorIs(t, op.run(g), ErrInvalid) })
				assert.Len(t, g.Nodes, before, "the graph is left as it was")
			})
		}
	}
}

func TestSplitAndParallelizeRejectBadFunctions(t *testing.T) {
	g := NewTaskGraph(pods("0000_10_a_0", "0000_10_b_0"))
	require.ErrorIs(t, g.Split(nil), ErrInvalid)
	require.ErrorIs(t, g.Parallelize(nil), ErrInvalid)
	withNil := func(tasks []*Task) [][]*TaskNode {
		return [][]*TaskNode{{{Tasks: tasks[:1]}, nil}, {{Tasks: tasks[1:]}}}
	}
	require.ErrorIs(t, g.Parallelize(withNil), ErrInvalid)
	assert.Equal(t, []nodeView{{Files: []string{"0000_10_a_0", "0000_10_b_0"}}}, view(g.Nodes), "the graph is left as it was")
}

func TestBuildGraphRejectsTasksWithoutManifest(t *testing.T) {
	_, err := BuildGraph([]*Task{pod("a"), {}}, ByNumberAndComponent)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestPrinting(t *testing.T) {
	tasks := pods("0000_10_a_0", "0000_10_b_0", "0000_20_a_0")
	for i, task := range tasks {
		task.Index, task.Total = i+1, len(tasks)
	}
	g, err := BuildGraph(tasks, ByNumberAndComponent)
	require.NoError(t, err)

	assert.Equal(t, `node 0: 0 manifests
node 1: 10-a, 1 manifests, after 0
  0000_10_a_0 pod "0000_10_a_0" (1 of 3)
node 2: 10-b, 1 manifests, after 0
  0000_10_b_0 pod "0000_10_b_0" (2 of 3)
node 3: 20-a, 1 manifests, after 1, 2
  0000_20_a_0 pod "0000_20_a_0" (3 of 3)
`, g.String())

	assert.Equal(t, `flowchart TD
  n0["0 manifests"]
  n1["10-a, 1 manifests"]
  n2["10-b, 1 manifests"]
  n3["20-a, 1 manifests"]
  n0 --> n1
  n0 --> n2
  n1 --> n3
  n2 --> n3
`, g.Mermaid())

	assert.Equal(t, `digraph tasks {
  labelloc=t;
  rankdir=TB;
  0 [ label="0 manifests" shape="box" ];
  1 [ label="10-a, 1 manifests" shape="box" ];
  2 [ label="10-b, 1 manifests" shape="box" ];
  3 [ label="20-a, 1 manifests" shape="box" ];
  0 -> 1;
  0 -> 2;
  1 -> 3;
  2 -> 3;
}
`, g.DOT())
	assert.Equal(t, []int{0}, g.Roots())
}
