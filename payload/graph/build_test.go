package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*taskNode
		want  []nodeView
	}{
		{name: "empty", nodes: []*taskNode{}, want: []nodeView{}},
		{name: "single", nodes: []*taskNode{{tasks: pods("p")}}, want: []nodeView{{Files: []string{"p"}}}},
		{
			name:  "job first",
			nodes: []*taskNode{{tasks: []*Task{job("j"), pod("p")}}},
			want:  []nodeView{{Files: []string{"j"}, out: []int{1}}, {in: []int{0}, Files: []string{"p"}}},
		},
		{
			name:  "job last",
			nodes: []*taskNode{{tasks: []*Task{pod("p"), job("j")}}},
			want:  []nodeView{{in: []int{1}, Files: []string{"j"}}, {Files: []string{"p"}, out: []int{0}}},
		},
		{
			name:  "interior",
			nodes: []*taskNode{{tasks: []*Task{pod("p1"), pod("p2"), job("j"), pod("p3")}}},
			want: []nodeView{
				{in: []int{1}, Files: []string{"j"}, out: []int{2}},
				{Files: []string{"p1", "p2"}, out: []int{0}},
				{in: []int{0}, Files: []string{"p3"}},
			},
		},
		{
			name:  "interspersed",
			nodes: []*taskNode{{tasks: []*Task{pod("p1"), pod("p2"), job("j1"), pod("p3"), job("j2"), pod("p4")}}},
			want: []nodeView{
				{in: []int{1}, Files: []string{"j1"}, out: []int{3}},
				{Files: []string{"p1", "p2"}, out: []int{0}},
				{in: []int{3}, Files: []string{"j2"}, out: []int{4}},
				{in: []int{0}, Files: []string{"p3"}, out: []int{2}},
				{in: []int{2}, Files: []string{"p4"}},
			},
		},
		{
			name:  "both ends",
			nodes: []*taskNode{{tasks: []*Task{job("j1"), pod("p1"), pod("p2"), job("j2")}}},
			want: []nodeView{
				{Files: []string{"j1"}, out: []int{2}},
				{in: []int{2}, Files: []string{"j2"}},
				{in: []int{0}, Files: []string{"p1", "p2"}, out: []int{1}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Graph{nodes: tt.nodes}
			require.NoError(t, g.split(isBarrier))
			assert.Equal(t, tt.want, view(g.nodes))
			require.NoError(t, g.check())
			require.NoError(t, matchEdges(g))
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
			want:  []nodeView{{in: []int{1}, Files: []string{"0000_50_a_0"}}, {Files: []string{"a"}, out: []int{0}}},
		},
		{
			name:  "job then one component",
			tasks: []*Task{pod("a"), job("0000_50_a_0"), pod("0000_50_a_1"), pod("0000_50_a_2")},
			want: []nodeView{
				{in: []int{1}, Files: []string{"0000_50_a_0"}, out: []int{2}},
				{Files: []string{"a"}, out: []int{0}},
				{in: []int{0}, Files: []string{"0000_50_a_1", "0000_50_a_2"}},
			},
		},
		{
			name:  "job then several components in one level",
			tasks: []*Task{job("a"), pod("0000_50_a_0"), pod("0000_50_b_0"), pod("0000_50_b_1")},
			want: []nodeView{
				{Files: []string{"a"}, out: []int{1}},
				{in: []int{0}, out: []int{2, 3}},
				{in: []int{1}, Files: []string{"0000_50_a_0"}},
				{in: []int{1}, Files: []string{"0000_50_b_0", "0000_50_b_1"}},
			},
		},
		{
			name:  "jobs around a level: fan out, fan in to an anchor",
			tasks: []*Task{job("a"), pod("0000_50_a_0"), pod("0000_50_b_0"), pod("0000_50_b_1"), pod("0000_50_c_0"), job("b")},
			want: []nodeView{
				{Files: []string{"a"}, out: []int{2}},
				{in: []int{6}, Files: []string{"b"}},
				{in: []int{0}, out: []int{3, 4, 5}},
				{in: []int{2}, Files: []string{"0000_50_a_0"}, out: []int{6}},
				{in: []int{2}, Files: []string{"0000_50_b_0", "0000_50_b_1"}, out: []int{6}},
				{in: []int{2}, Files: []string{"0000_50_c_0"}, out: []int{6}},
				{in: []int{3, 4, 5}, out: []int{1}},
			},
		},
		{
			name: "consecutive single-component levels merge",
			tasks: pods("0000_07_a_0", "0000_08_a_0", "0000_09_a_0", "0000_09_a_1", "0000_09_b_0", "0000_09_b_1",
				"0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"),
			want: []nodeView{
				{out: []int{1}},
				{in: []int{0}, Files: []string{"0000_07_a_0", "0000_08_a_0"}, out: []int{2, 3}},
				{in: []int{1}, Files: []string{"0000_09_a_0", "0000_09_a_1"}, out: []int{4}},
				{in: []int{1}, Files: []string{"0000_09_b_0", "0000_09_b_1"}, out: []int{4}},
				{in: []int{2, 3}, Files: []string{"0000_10_a_0", "0000_10_a_1", "0000_11_a_0", "0000_11_a_1"}},
			},
		},
		{
			name:  "two parallel levels in a row get a spacer",
			tasks: pods("0000_10_a_0", "0000_10_b_0", "0000_20_a_0", "0000_20_b_0"),
			want: []nodeView{
				{out: []int{1, 2}},
				{in: []int{0}, Files: []string{"0000_10_a_0"}, out: []int{3}},
				{in: []int{0}, Files: []string{"0000_10_b_0"}, out: []int{3}},
				{in: []int{1, 2}, out: []int{4, 5}},
				{in: []int{3}, Files: []string{"0000_20_a_0"}},
				{in: []int{3}, Files: []string{"0000_20_b_0"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := buildGraph(tt.tasks, byNumberAndComponent)
			require.NoError(t, err)
			assert.Equal(t, tt.want, view(g.nodes))
		})
	}
}

func TestAddDependencies(t *testing.T) {
	ns := newTask("0000_10_a_ns", "Namespace")
	var cycle *CycleError
	var unknown *UnknownDependencyError
	tests := []struct {
		name    string
		tasks   []*Task
		breakFn breakFunc
		want    []nodeView
		wantErr any // a pointer to the wanted error type
	}{
		{
			name:    "a dependency across parallel nodes adds an edge",
			tasks:   []*Task{newTask("0000_10_a_0", "Pod", "Pod/0000_10_b_0"), pod("0000_10_b_0")},
			breakFn: byNumberAndComponent,
			want: []nodeView{
				{out: []int{1, 2}},
				{in: []int{0, 2}, Files: []string{"0000_10_a_0"}},
				{in: []int{0}, Files: []string{"0000_10_b_0"}, out: []int{1}},
			},
		},
		{
			name:    "a dependency the run levels honour adds nothing",
			tasks:   []*Task{ns, pod("0000_20_b_0"), newTask("0000_20_c_0", "Pod", "Namespace/0000_10_a_ns")},
			breakFn: byNumberAndComponent,
			want: []nodeView{
				{out: []int{1}},
				{in: []int{0}, Files: []string{"0000_10_a_ns"}, out: []int{2, 3}},
				{in: []int{1}, Files: []string{"0000_20_b_0"}},
				{in: []int{1}, Files: []string{"0000_20_c_0"}},
			},
		},
		{
			name:    "unknown dependency",
			tasks:   []*Task{newTask("0000_10_a_0", "Pod", "Pod/missing"), pod("0000_10_b_0")},
			breakFn: byNumberAndComponent,
			wantErr: &unknown,
		},
		{
			name:    "a dependency on a later task of the same node is a cycle",
			tasks:   []*Task{newTask("0000_10_a_0", "Pod", "Pod/0000_10_a_1"), pod("0000_10_a_1")},
			breakFn: byNumberAndComponent,
			wantErr: &cycle,
		},
		{
			name:    "a dependency against the run-level order is a cycle",
			tasks:   []*Task{newTask("0000_10_a_0", "Pod", "Namespace/0000_20_b_ns"), pod("0000_10_c_0"), newTask("0000_20_b_ns", "Namespace")},
			breakFn: byNumberAndComponent,
			wantErr: &cycle,
		},
		{
			name:    "the same dependency is an edge when flattened",
			tasks:   []*Task{newTask("0000_10_a_0", "Pod", "Namespace/0000_20_b_ns"), pod("0000_10_c_0"), newTask("0000_20_b_ns", "Namespace")},
			breakFn: flattenByNumberAndComponent,
			want: []nodeView{
				{out: []int{1, 2, 3}},
				{in: []int{0, 3}, Files: []string{"0000_10_a_0"}},
				{in: []int{0}, Files: []string{"0000_10_c_0"}},
				{in: []int{0}, Files: []string{"0000_20_b_ns"}, out: []int{1}},
			},
		},
		{
			name:    "two tasks depending on each other",
			tasks:   []*Task{newTask("0000_10_a_0", "Pod", "Pod/0000_10_b_0"), newTask("0000_10_b_0", "Pod", "Pod/0000_10_a_0")},
			breakFn: flattenByNumberAndComponent,
			wantErr: &cycle,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := buildGraph(tt.tasks, tt.breakFn)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, converge.ErrInvalid)
				require.ErrorAs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want != nil {
				assert.Equal(t, tt.want, view(g.nodes))
			}
			require.NoError(t, g.check())
			require.NoError(t, matchEdges(g))
		})
	}
}

func TestSplitAndParallelizeRejectBadGraphs(t *testing.T) {
	tests := []struct {
		name  string
		nodes []*taskNode
	}{
		{name: "nil node", nodes: []*taskNode{{tasks: pods("0000_10_a_0")}, nil}},
		{name: "nil task", nodes: []*taskNode{{tasks: []*Task{pod("0000_10_a_0"), nil, job("j"), pod("0000_10_b_0")}}}},
		{name: "task without an item", nodes: []*taskNode{{tasks: []*Task{job("j"), {}}}}},
		{name: "task with a typed nil item", nodes: []*taskNode{{tasks: []*Task{job("j"), {Item: (*item)(nil)}}}}},
		{name: "edge to a missing node", nodes: []*taskNode{{tasks: []*Task{pod("0000_10_a_0"), job("j"), pod("0000_10_b_0")}, out: []int{5}}}},
		{name: "edge from a missing node", nodes: []*taskNode{{tasks: []*Task{pod("0000_10_a_0"), job("j"), pod("0000_10_b_0")}, in: []int{-2}}}},
		{name: "cycle", nodes: []*taskNode{{tasks: []*Task{pod("0000_10_a_0"), job("j")}, in: []int{1}, out: []int{1}}, {tasks: pods("0000_10_b_0", "0000_10_c_0"), in: []int{0}, out: []int{0}}}},
	}
	ops := []struct {
		name string
		run  func(*Graph) error
	}{
		{name: "Split", run: func(g *Graph) error { return g.split(isBarrier) }},
		{name: "Parallelize by number", run: func(g *Graph) error { return g.parallelize(byNumberAndComponent) }},
		{name: "Parallelize flattened", run: func(g *Graph) error { return g.parallelize(flattenByNumberAndComponent) }},
	}
	for _, tt := range tests {
		for _, op := range ops {
			t.Run(tt.name+"/"+op.name, func(t *testing.T) {
				g := &Graph{nodes: tt.nodes}
				before := len(g.nodes)
				require.NotPanics(t, func() { require.ErrorIs(t, op.run(g), converge.ErrInvalid) })
				assert.Len(t, g.nodes, before, "the graph is left as it was")
			})
		}
	}
}

func TestSplitAndParallelizeRejectBadFunctions(t *testing.T) {
	g := newGraph(pods("0000_10_a_0", "0000_10_b_0"))
	require.ErrorIs(t, g.split(nil), converge.ErrInvalid)
	require.ErrorIs(t, g.parallelize(nil), converge.ErrInvalid)
	withNil := func(tasks []*Task) [][]*taskNode {
		return [][]*taskNode{{{tasks: tasks[:1]}, nil}, {{tasks: tasks[1:]}}}
	}
	require.ErrorIs(t, g.parallelize(withNil), converge.ErrInvalid)
	assert.Equal(t, []nodeView{{Files: []string{"0000_10_a_0", "0000_10_b_0"}}}, view(g.nodes), "the graph is left as it was")
}

func TestBuildRejectsTasksWithoutAnItem(t *testing.T) {
	for _, order := range []Order{OrderRunLevels, OrderParallel, OrderSerial} {
		for _, tasks := range [][]*Task{{pod("a"), {}}, {pod("a"), nil}, {pod("a"), {Item: (*item)(nil)}}} {
			_, err := Build(tasks, order)
			require.ErrorIs(t, err, converge.ErrInvalid)
		}
	}
	_, err := BuildShuffled([]*Task{pod("a"), nil}, 3)
	require.ErrorIs(t, err, converge.ErrInvalid)
}
