package graph

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
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
		name := fileOf(t)
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
func (r *recorder) checkOrder(t *testing.T, g *Graph) {
	t.Helper()
	for _, n := range g.nodes {
		if len(n.tasks) == 0 {
			continue
		}
		first := fileOf(n.tasks[0])
		startSeq, ok := r.ended[first]
		if !ok {
			continue
		}
		for _, ancestor := range ancestors(g, n) {
			for _, pt := range ancestor.tasks {
				endSeq, ran := r.ended[fileOf(pt)]
				require.True(t, ran, "%s ran before its dependency %s", first, fileOf(pt))
				require.Less(t, endSeq, startSeq, "%s ended after %s", fileOf(pt), first)
			}
		}
	}
}

func ancestors(g *Graph, n *taskNode) []*taskNode {
	var out []*taskNode
	seen := map[int]bool{}
	stack := append([]int(nil), n.in...)
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, g.nodes[k])
		stack = append(stack, g.nodes[k].in...)
	}
	return out
}

func TestRunGraph(t *testing.T) {
	errA, errB := errors.New("error A"), errors.New("error B")
	tests := []struct {
		name      string
		nodes     []*taskNode
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
			nodes:     []*taskNode{{tasks: pods("a", "b")}},
			workers:   4,
			wantRun:   []string{"a", "b"},
			wantOrder: []string{"a", "b"},
		},
		{
			name: "fan out and in",
			nodes: []*taskNode{
				{tasks: pods("c"), in: []int{3}},
				{tasks: pods("d", "e"), in: []int{3}},
				{tasks: pods("f"), in: []int{3}, out: []int{4}},
				{tasks: pods("a", "b"), out: []int{0, 1, 2}},
				{tasks: pods("g"), in: []int{2}},
			},
			workers: 2,
			wantRun: []string{"a", "b", "c", "d", "e", "f", "g"},
		},
		{
			name: "a failure skips its dependents only",
			nodes: []*taskNode{
				{tasks: pods("c"), in: []int{2}},
				{tasks: pods("d"), in: []int{2}, out: []int{3}},
				{tasks: pods("a", "b"), out: []int{0, 1}},
				{tasks: pods("e"), in: []int{1}},
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
			nodes: []*taskNode{
				{out: []int{1, 2, 3}},
				{tasks: pods("x"), in: []int{0}, out: []int{4}},
				{tasks: pods("y"), in: []int{0}, out: []int{5}},
				{tasks: pods("z"), in: []int{0}},
				{tasks: pods("x2"), in: []int{1}},
				{tasks: pods("y2"), in: []int{2}},
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
			nodes: []*taskNode{
				{tasks: pods("a"), out: []int{1}},
				{tasks: pods("b"), in: []int{0}, out: []int{2}},
				{tasks: pods("c"), in: []int{1}, out: []int{3}},
				{tasks: pods("d"), in: []int{2}},
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
			nodes: []*taskNode{
				{tasks: pods("a"), out: []int{1}},
				{tasks: pods("b"), in: []int{0}, out: []int{2}},
				{tasks: pods("c"), in: []int{1}},
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
			nodes: []*taskNode{
				{tasks: pods("x")},
				{tasks: pods("y"), out: []int{2}},
				{tasks: pods("y2"), in: []int{1}},
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
			nodes:     []*taskNode{{out: []int{1}}, {tasks: pods("a"), in: []int{0}}, {tasks: pods("b")}},
			workers:   2,
			cancelled: true,
			wantErrs:  []error{&IncompleteError{Count: 3}, context.Canceled},
		},
		{
			name: "task-less nodes only join edges",
			nodes: []*taskNode{
				{out: []int{1, 2}},
				{tasks: pods("a"), in: []int{0}, out: []int{3}},
				{tasks: pods("b"), in: []int{0}, out: []int{3}},
				{in: []int{1, 2}, out: []int{4}},
				{tasks: pods("c"), in: []int{3}},
			},
			workers: 2,
			wantRun: []string{"a", "b", "c"},
		},
		{
			// n2 is queued while n0 runs, n3 while n2 runs: each before the lower node
			// that the node running makes ready.
			name:      "lowest index first, queued ahead as the cluster-version operator does",
			nodes:     []*taskNode{{tasks: pods("n0"), out: []int{3}}, {tasks: pods("n1"), in: []int{2}}, {tasks: pods("n2"), out: []int{1}}, {tasks: pods("n3"), in: []int{0}}},
			workers:   1,
			wantOrder: []string{"n0", "n2", "n3", "n1"},
			wantRun:   []string{"n0", "n1", "n2", "n3"},
		},
		{
			name:    "workers below one mean one",
			nodes:   []*taskNode{{tasks: pods("a")}, {tasks: pods("b")}},
			workers: 0,
			wantRun: []string{"a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Graph{nodes: tt.nodes}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			rec := &recorder{}
			errs := Run(ctx, g, Options{Workers: tt.workers}, func(ctx context.Context, tasks []*Task) error {
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
					assert.Contains(t, got.Error(), "incomplete task node")
					assert.Contains(t, got.Error(), ", beginning with pod")
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
	g := &Graph{nodes: []*taskNode{{out: []int{1}}, {tasks: pods("first", "second"), in: []int{0}}}}
	g.nodes[1].tasks[0].Index, g.nodes[1].tasks[0].Total = 4, 9
	errs := Run(ctx, g, Options{Workers: 1}, func(context.Context, []*Task) error { return nil })
	require.Len(t, errs, 2)
	assert.EqualError(t, errs[0], `graph: 2 incomplete task nodes, beginning with pod "first" (4 of 9)`)
	assert.ErrorIs(t, errs[1], context.Canceled)
}

func TestRunGraphCancelAfterAFailureNamesTheIncompleteNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g := &Graph{nodes: []*taskNode{{tasks: pods("first"), out: []int{1}}, {out: []int{2}, in: []int{0}}, {tasks: pods("second"), in: []int{1}}}}
	g.nodes[2].tasks[0].Index, g.nodes[2].tasks[0].Total = 2, 2
	errs := Run(ctx, g, Options{Workers: 1}, func(ctx context.Context, _ []*Task) error {
		cancel()
		return fmt.Errorf("apply interrupted: %w", ctx.Err())
	})
	require.Len(t, errs, 3, "errors: %v", errs)
	assert.EqualError(t, errs[0], "apply interrupted: context canceled")
	assert.EqualError(t, errs[1], `graph: 2 incomplete task nodes, beginning with pod "second" (2 of 2)`)
	assert.Equal(t, context.Canceled, errs[2])
}

func TestRunGraphPanicBecomesNodeError(t *testing.T) {
	g := &Graph{nodes: []*taskNode{
		{tasks: pods("boom"), out: []int{2}},
		{tasks: pods("fine")},
		{tasks: pods("after"), in: []int{0}},
	}}
	rec := &recorder{}
	errs := Run(context.Background(), g, Options{Workers: 2}, func(ctx context.Context, tasks []*Task) error {
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
	assert.Equal(t, "boom", fileOf(p.Task))
	assert.Equal(t, "kaboom", p.Value)
	assert.NotEmpty(t, p.Stack)
	assert.EqualError(t, p, `graph: running pod "boom" (1 of 1) panicked: kaboom`)
	assert.ElementsMatch(t, []string{"boom", "fine"}, rec.started)
}

// TestRunGraphSurvivesGoexit protects the host from a task that calls runtime.Goexit
// (what t.FailNow does): the node fails, a new worker takes the place of the one that
// exited, and the rest of the graph runs with the same pool.
func TestRunGraphSurvivesGoexit(t *testing.T) {
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			g := &Graph{nodes: []*taskNode{
				{tasks: pods("exits"), out: []int{2}},
				{tasks: pods("fine")},
				{tasks: pods("after"), in: []int{0}},
				{tasks: pods("exits-too")},
				{tasks: pods("last")},
			}}
			rec := &recorder{}
			errs := Run(context.Background(), g, Options{Workers: workers}, func(ctx context.Context, tasks []*Task) error {
				return rec.run(ctx, tasks, func(_ context.Context, name string) error {
					if strings.HasPrefix(name, "exits") {
						runtime.Goexit()
					}
					return nil
				})
			})
			require.Len(t, errs, 2, "errors: %v", errs)
			for i, name := range []string{"exits", "exits-too"} {
				var p *PanicError
				require.ErrorAs(t, errs[i], &p)
				assert.Equal(t, name, fileOf(p.Task))
				assert.EqualError(t, p, fmt.Sprintf(`graph: running pod %q (1 of 1) called runtime.Goexit`, name))
			}
			assert.ElementsMatch(t, []string{"exits", "fine", "exits-too", "last"}, rec.started, "the dependent of a failed node never runs")
		})
	}
}

func TestRunGraphRejectsBadInput(t *testing.T) {
	called := false
	fn := func(context.Context, []*Task) error { called = true; return nil }
	tests := []struct {
		name  string
		ctx   context.Context
		graph *Graph
		fn    func(context.Context, []*Task) error
	}{
		{name: "nil context", ctx: nil, graph: &Graph{nodes: []*taskNode{{tasks: pods("a")}}}, fn: fn},
		{name: "nil graph", ctx: context.Background(), graph: nil, fn: fn},
		{name: "nil fn", ctx: context.Background(), graph: &Graph{nodes: []*taskNode{{tasks: pods("a")}}}, fn: nil},
		{name: "cycle", ctx: context.Background(), graph: &Graph{nodes: []*taskNode{{tasks: pods("a"), in: []int{1}, out: []int{1}}, {tasks: pods("b"), in: []int{0}, out: []int{0}}}}, fn: fn},
		{name: "dangling edge", ctx: context.Background(), graph: &Graph{nodes: []*taskNode{{tasks: pods("a"), out: []int{7}}}}, fn: fn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Run(tt.ctx, tt.graph, Options{Workers: 2}, tt.fn)
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0], converge.ErrInvalid)
			assert.False(t, called)
		})
	}
	assert.Nil(t, Run(context.Background(), &Graph{}, Options{Workers: 2}, fn), "an empty graph has nothing to do")
}

func TestRunGraphUsesExactlyWorkers(t *testing.T) {
	for _, workers := range []int{1, 3, 8} {
		nodes := make([]*taskNode, 12)
		for i := range nodes {
			nodes[i] = &taskNode{tasks: pods("n")}
		}
		var mu sync.Mutex
		running, peak := 0, 0
		full := make(chan struct{})
		errs := Run(context.Background(), &Graph{nodes: nodes}, Options{Workers: workers}, func(context.Context, []*Task) error {
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
			case <-time.After(time.Minute): // a deadlock detector, not a timing
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
	g := &Graph{nodes: []*taskNode{{tasks: pods("blocker")}, {tasks: pods("canceller"), out: []int{2}}, {tasks: pods("never"), in: []int{1}}}}
	errs := Run(ctx, g, Options{Workers: 2}, func(ctx context.Context, tasks []*Task) error {
		switch fileOf(tasks[0]) {
		case "blocker":
			<-ctx.Done()
			blockerDone = true
			return ctx.Err()
		case "canceller":
			cancel()
		}
		return nil
	})
	assert.True(t, blockerDone, "Run returned before an in-flight node finished")
	require.Len(t, errs, 3, "errors: %v", errs)
	assert.ErrorIs(t, errs[0], context.Canceled, "the blocker's own error")
	assert.EqualError(t, errs[1], `graph: 1 incomplete task node, beginning with pod "never" (1 of 1)`)
	assert.ErrorIs(t, errs[2], context.Canceled)
}

func TestRunGraphCriticalPathFirst(t *testing.T) {
	// n0 is a lone task; n1 -> n2 -> n3 is a longer chain; n4 is a lone task tied with n0.
	g := &Graph{nodes: []*taskNode{
		{tasks: pods("n0")},
		{tasks: pods("n1"), out: []int{2}},
		{tasks: pods("n2"), in: []int{1}, out: []int{3}},
		{tasks: pods("n3"), in: []int{2}},
		{tasks: pods("n4")},
	}}
	tests := []struct {
		priority Priority
		want     []string
	}{
		{LowestIndexFirst, []string{"n0", "n1", "n4", "n2", "n3"}},  // n4 is queued while n1 runs
		{CriticalPathFirst, []string{"n1", "n2", "n0", "n3", "n4"}}, // n3 and n0 tie: lowest index
	}
	for _, tt := range tests {
		rec := &recorder{}
		errs := Run(context.Background(), g, Options{Workers: 1, Priority: tt.priority}, func(ctx context.Context, tasks []*Task) error {
			return rec.run(ctx, tasks, nil)
		})
		assert.Empty(t, errs)
		assert.Equal(t, tt.want, rec.started, "priority %d", tt.priority)
	}
}

func TestRunGraphAllocationsDoNotGrowWithNodes(t *testing.T) {
	noop := func(context.Context, []*Task) error { return nil }
	allocs := func(g *Graph) float64 {
		return testing.AllocsPerRun(20, func() {
			if errs := Run(context.Background(), g, Options{Workers: 2}, noop); errs != nil {
				t.Fatal(errs)
			}
		})
	}
	small, large := allocs(independentGraph(10)), allocs(independentGraph(5000))
	assert.LessOrEqual(t, large, small+2, "10 nodes: %v allocations, 5000 nodes: %v", small, large)
	assert.LessOrEqual(t, allocs(chainGraph(5000)), small+2)
}
