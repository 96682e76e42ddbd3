package payload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder records the order in which tasks start and checks dependencies against it.
type recorder struct {
	mu      sync.Mutex
	started []string
	ended   map[string]int // task -> sequence number of its end
	seq     int
	empty   int // calls with no tasks
}

func (r *recorder) run(ctx context.Context, tasks []*Task, behave func(ctx context.Context, name string) error) error {
	if len(tasks) == 0 {
		r.mu.Lock()
		r.empty++
		r.mu.Unlock()
	}
	for _, t := range tasks {
		name := t.Manifest.File
		r.mu.Lock()
		r.started = append(r.started, name)
		r.mu.Unlock()
		var err error
		if behave != nil {
			err = behave(ctx, name)
		}
		r.mu.Lock()
		r.seq++
		if r.ended == nil {
			r.ended = map[string]int{}
		}
		r.ended[name] = r.seq
		r.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkOrder asserts that no node started before every task of its predecessors ended.
func (r *recorder) checkOrder(t *testing.T, g *TaskGraph) {
	t.Helper()
	for _, n := range g.Nodes {
		if len(n.Tasks) == 0 {
			continue
		}
		first := n.Tasks[0].Manifest.File
		startSeq, ok := r.ended[first]
		if !ok {
			continue
		}
		for _, ancestor := range ancestors(g, n) {
			for _, pt := range ancestor.Tasks {
				endSeq, ran := r.ended[pt.Manifest.File]
				require.True(t, ran, "%s ran before its dependency %s", first, pt.Manifest.File)
				require.Less(t, endSeq, startSeq, "%s ended after %s", pt.Manifest.File, first)
			}
		}
	}
}

func ancestors(g *TaskGraph, n *TaskNode) []*TaskNode {
	var out []*TaskNode
	seen := map[int]bool{}
	stack := append([]int(nil), n.In...)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, g.Nodes[k])
		stack = append(stack, g.Nodes[k].In...)
	}
	return out
}

func TestRunGraph(t *testing.T) {
	errA, errB := errors.New("error A"), errors.New("error B")
	tests := []struct {
		name      string
		nodes     []*TaskNode
		workers   int
		cancelled bool
		behave    func(ctx context.Context, cancel context.CancelFunc, name string) error
		wantRun   []string // sorted set of started tasks
		wantOrder []string // exact start order, when deterministic
		wantErrs  []error
		wantEmpty int
	}{
		{
			name:      "one serial node",
			nodes:     []*TaskNode{{Tasks: pods("a", "b")}},
			workers:   4,
			wantRun:   []string{"a", "b"},
			wantOrder: []string{"a", "b"},
		},
		{
			name: "fan out and in",
			nodes: []*TaskNode{
				{Tasks: pods("c"), In: []int{3}},
				{Tasks: pods("d", "e"), In: []int{3}},
				{Tasks: pods("f"), In: []int{3}, Out: []int{4}},
				{Tasks: pods("a", "b"), Out: []int{0, 1, 2}},
				{Tasks: pods("g"), In: []int{2}},
			},
			workers: 2,
			wantRun: []string{"a", "b", "c", "d", "e", "f", "g"},
		},
		{
			name: "a failure skips its dependents only",
			nodes: []*TaskNode{
				{Tasks: pods("c"), In: []int{2}},
				{Tasks: pods("d"), In: []int{2}, Out: []int{3}},
				{Tasks: pods("a", "b"), Out: []int{0, 1}},
				{Tasks: pods("e"), In: []int{1}},
			},
			workers: 2,
			behave: func(_ context.Context, _ context.CancelFunc, name string) error {
				if name == "d" {
					return errA
				}
				return nil
			},
			wantRun:  []string{"a", "b", "c", "d"},
			wantErrs: []error{errA},
		},
		{
			name: "failures in parallel branches are both returned in node order",
			nodes: []*TaskNode{
				{Out: []int{1, 2, 3}},
				{Tasks: pods("x"), In: []int{0}, Out: []int{4}},
				{Tasks: pods("y"), In: []int{0}, Out: []int{5}},
				{Tasks: pods("z"), In: []int{0}},
				{Tasks: pods("x2"), In: []int{1}},
				{Tasks: pods("y2"), In: []int{2}},
			},
			workers: 3,
			behave: func(_ context.Context, _ context.CancelFunc, name string) error {
				switch name {
				case "x":
					return errA
				case "y":
					return errB
				}
				return nil
			},
			wantRun:  []string{"x", "y", "z"},
			wantErrs: []error{errA, errB},
		},
		{
			name: "cancel mid-run",
			nodes: []*TaskNode{
				{Tasks: pods("a"), Out: []int{1}},
				{Tasks: pods("b"), In: []int{0}, Out: []int{2}},
				{Tasks: pods("c"), In: []int{1}, Out: []int{3}},
				{Tasks: pods("d"), In: []int{2}},
			},
			workers: 2,
			behave: func(_ context.Context, cancel context.CancelFunc, name string) error {
				if name == "b" {
					cancel()
				}
				return nil
			},
			wantRun:   []string{"a", "b"},
			wantOrder: []string{"a", "b"},
			wantErrs:  []error{&IncompleteError{Count: 2, First: nil}, context.Canceled},
		},
		{
			name: "cancel failing the node in flight keeps the incomplete nodes",
			nodes: []*TaskNode{
				{Tasks: pods("a"), Out: []int{1}},
				{Tasks: pods("b"), In: []int{0}, Out: []int{2}},
				{Tasks: pods("c"), In: []int{1}},
			},
			workers: 1,
			behave: func(ctx context.Context, cancel context.CancelFunc, name string) error {
				cancel()
				return ctx.Err()
			},
			wantRun:  []string{"a"},
			wantErrs: []error{context.Canceled, &IncompleteError{Count: 2}, context.Canceled},
		},
		{
			name: "a failure and a cancel in parallel branches",
			nodes: []*TaskNode{
				{Tasks: pods("x")},
				{Tasks: pods("y"), Out: []int{2}},
				{Tasks: pods("y2"), In: []int{1}},
			},
			workers: 2,
			behave: func(_ context.Context, cancel context.CancelFunc, name string) error {
				if name == "x" {
					return errA
				}
				cancel()
				return nil
			},
			wantRun:  []string{"x", "y"},
			wantErrs: []error{errA, &IncompleteError{Count: 1}, context.Canceled},
		},
		{
			name:      "already cancelled",
			nodes:     []*TaskNode{{Out: []int{1}}, {Tasks: pods("a"), In: []int{0}}, {Tasks: pods("b")}},
			workers:   2,
			cancelled: true,
			wantErrs:  []error{&IncompleteError{Count: 3}, context.Canceled},
		},
		{
			name: "task-less nodes only join edges",
			nodes: []*TaskNode{
				{Out: []int{1, 2}},
				{Tasks: pods("a"), In: []int{0}, Out: []int{3}},
				{Tasks: pods("b"), In: []int{0}, Out: []int{3}},
				{In: []int{1, 2}, Out: []int{4}},
				{Tasks: pods("c"), In: []int{3}},
			},
			workers: 2,
			wantRun: []string{"a", "b", "c"},
		},
		{
			name:      "lowest index first",
			nodes:     []*TaskNode{{Tasks: pods("n0"), Out: []int{3}}, {Tasks: pods("n1"), In: []int{2}}, {Tasks: pods("n2"), Out: []int{1}}, {Tasks: pods("n3"), In: []int{0}}},
			workers:   1,
			wantOrder: []string{"n0", "n2", "n1", "n3"},
			wantRun:   []string{"n0", "n1", "n2", "n3"},
		},
		{
			name:    "workers below one mean one",
			nodes:   []*TaskNode{{Tasks: pods("a")}, {Tasks: pods("b")}},
			workers: 0,
			wantRun: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &TaskGraph{Nodes: tt.nodes}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			rec := &recorder{}
			errs := RunGraph(ctx, g, tt.workers, func(ctx context.Context, tasks []*Task) error {
				return rec.run(ctx, tasks, func(ctx context.Context, name string) error {
					if tt.behave == nil {
						return nil
					}
					return tt.behave(ctx, cancel, name)
				})
			})
			assert.ElementsMatch(t, tt.wantRun, rec.started)
			if tt.wantOrder != nil {
				assert.Equal(t, tt.wantOrder, rec.started)
			}
			assert.Zero(t, rec.empty, "fn is never called for a task-less node")
			rec.checkOrder(t, g)
			require.Len(t, errs, len(tt.wantErrs), "errors: %v", errs)
			for i, want := range tt.wantErrs {
				var incomplete *IncompleteError
				if errors.As(want, &incomplete) {
					var got *IncompleteError
					require.ErrorAs(t, errs[i], &got)
					assert.Equal(t, incomplete.Count, got.Count)
					require.NotNil(t, got.First)
					assert.Contains(t, got.Error(), "incomplete task nodes, beginning with pod")
					continue
				}
				assert.ErrorIs(t, errs[i], want)
			}
		})
	}
}

func TestRunGraphIncompleteNamesFirstNodeWithTasks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := &TaskGraph{Nodes: []*TaskNode{{Out: []int{1}}, {Tasks: pods("first", "second"), In: []int{0}}}}
	g.Nodes[1].Tasks[0].Index, g.Nodes[1].Tasks[0].Total = 4, 9
	errs := RunGraph(ctx, g, 1, func(context.Context, []*Task) error { return nil })
	require.Len(t, errs, 2)
	assert.EqualError(t, errs[0], `payload: 2 incomplete task nodes, beginning with pod "first" (4 of 9)`)
	assert.ErrorIs(t, errs[1], context.Canceled)
}

func TestRunGraphCancelAfterAFailureNamesTheIncompleteNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &TaskGraph{Nodes: []*TaskNode{{Tasks: pods("first"), Out: []int{1}}, {Out: []int{2}, In: []int{0}}, {Tasks: pods("second"), In: []int{1}}}}
	g.Nodes[2].Tasks[0].Index, g.Nodes[2].Tasks[0].Total = 2, 2
	errs := RunGraph(ctx, g, 1, func(ctx context.Context, _ []*Task) error {
		cancel()
		return fmt.Errorf("apply interrupted: %w", ctx.Err())
	})
	require.Len(t, errs, 3, "errors: %v", errs)
	assert.EqualError(t, errs[0], "apply interrupted: context canceled")
	assert.EqualError(t, errs[1], `payload: 2 incomplete task nodes, beginning with pod "second" (2 of 2)`)
	assert.Equal(t, context.Canceled, errs[2])
}

func TestRunGraphPanicBecomesNodeError(t *testing.T) {
	g := &TaskGraph{Nodes: []*TaskNode{
		{Tasks: pods("boom"), Out: []int{2}},
		{Tasks: pods("fine")},
		{Tasks: pods("after"), In: []int{0}},
	}}
	rec := &recorder{}
	errs := RunGraph(context.Background(), g, 2, func(ctx context.Context, tasks []*Task) error {
		return rec.run(ctx, tasks, func(_ context.Context, name string) error {
			if name == "boom" {
				panic("kaboom")
			}
			return nil
		})
	})
	require.Len(t, errs, 1)
	var p *PanicError
	require.ErrorAs(t, errs[0], &p)
	assert.Equal(t, 0, p.Node)
	assert.Equal(t, "kaboom", p.Value)
	assert.NotEmpty(t, p.Stack)
	assert.EqualError(t, p, "payload: task node 0 panicked: kaboom")
	assert.ElementsMatch(t, []string{"boom", "fine"}, rec.started)
}

func TestRunGraphRejectsBadInput(t *testing.T) {
	called := false
	fn := func(context.Context, []*Task) error { called = true; return nil }
	tests := []struct {
		name  string
		graph *TaskGraph
		fn    func(context.Context, []*Task) error
	}{
		{name: "nil graph", graph: nil, fn: fn},
		{name: "nil fn", graph: &TaskGraph{Nodes: []*TaskNode{{Tasks: pods("a")}}}, fn: nil},
		{name: "cycle", graph: &TaskGraph{Nodes: []*TaskNode{{Tasks: pods("a"), In: []int{1}, Out: []int{1}}, {Tasks: pods("b"), In: []int{0}, Out: []int{0}}}}, fn: fn},
		{name: "dangling edge", graph: &TaskGraph{Nodes: []*TaskNode{{Tasks: pods("a"), Out: []int{7}}}}, fn: fn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := RunGraph(context.Background(), tt.graph, 2, tt.fn)
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0], ErrInvalid)
			assert.False(t, called)
		})
	}
	assert.Nil(t, RunGraph(context.Background(), &TaskGraph{}, 2, fn), "an empty graph has nothing to do")
}

func TestRunGraphUsesExactlyWorkers(t *testing.T) {
	for _, workers := range []int{1, 3, 8} {
		nodes := make([]*TaskNode, 12)
		for i := range nodes {
			nodes[i] = &TaskNode{Tasks: pods("n")}
		}
		var mu sync.Mutex
		running, peak := 0, 0
		full := make(chan struct{})
		errs := RunGraph(context.Background(), &TaskGraph{Nodes: nodes}, workers, func(context.Context, []*Task) error {
			mu.Lock()
			running++
			if running > peak {
				peak = running
				if peak == workers {
					close(full)
				}
			}
			mu.Unlock()
			select { // hold the first calls until every worker is busy
			case <-full:
			case <-time.After(5 * time.Second):
			}
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})
		assert.Empty(t, errs)
		assert.Equal(t, workers, peak, "workers=%d", workers)
	}
}

func TestRunGraphWaitsForInFlightNodesAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var finished sync.WaitGroup
	finished.Add(1)
	blockerDone := false
	g := &TaskGraph{Nodes: []*TaskNode{{Tasks: pods("blocker")}, {Tasks: pods("canceller"), Out: []int{2}}, {Tasks: pods("never"), In: []int{1}}}}
	errs := RunGraph(ctx, g, 2, func(ctx context.Context, tasks []*Task) error {
		switch tasks[0].Manifest.File {
		case "blocker":
			<-ctx.Done()
			blockerDone = true
			return ctx.Err()
		case "canceller":
			cancel()
		}
		return nil
	})
	assert.True(t, blockerDone, "RunGraph returned before an in-flight node finished")
	require.Len(t, errs, 3, "errors: %v", errs)
	assert.ErrorIs(t, errs[0], context.Canceled, "the blocker's own error")
	assert.EqualError(t, errs[1], `payload: 1 incomplete task nodes, beginning with pod "never" (1 of 1)`)
	assert.ErrorIs(t, errs[2], context.Canceled)
}

func TestRunGraphCriticalPathFirst(t *testing.T) {
	// n0 is a lone task; n1 -> n2 -> n3 is a longer chain; n4 is a lone task tied with n0.
	g := &TaskGraph{Nodes: []*TaskNode{
		{Tasks: pods("n0")},
		{Tasks: pods("n1"), Out: []int{2}},
		{Tasks: pods("n2"), In: []int{1}, Out: []int{3}},
		{Tasks: pods("n3"), In: []int{2}},
		{Tasks: pods("n4")},
	}}
	tests := []struct {
		priority Priority
		want     []string
	}{
		{LowestIndexFirst, []string{"n0", "n1", "n2", "n3", "n4"}},
		{CriticalPathFirst, []string{"n1", "n2", "n0", "n3", "n4"}}, // n3 and n0 tie: lowest index
	}
	for _, tt := range tests {
		rec := &recorder{}
		errs := RunGraphWith(context.Background(), g, RunOptions{Workers: 1, Priority: tt.priority}, func(ctx context.Context, tasks []*Task) error {
			return rec.run(ctx, tasks, nil)
		})
		assert.Empty(t, errs)
		assert.Equal(t, tt.want, rec.started, "priority %d", tt.priority)
	}
}

func TestRunGraphAllocationsDoNotGrowWithNodes(t *testing.T) {
	noop := func(context.Context, []*Task) error { return nil }
	allocs := func(g *TaskGraph) float64 {
		return testing.AllocsPerRun(20, func() {
			if errs := RunGraph(context.Background(), g, 2, noop); errs != nil {
				t.Fatal(errs)
			}
		})
	}
	small, large := allocs(independentGraph(10)), allocs(independentGraph(5000))
	assert.LessOrEqual(t, large, small+2, "10 nodes: %v allocations, 5000 nodes: %v", small, large)
	assert.LessOrEqual(t, allocs(chainGraph(5000)), small+2)
}
