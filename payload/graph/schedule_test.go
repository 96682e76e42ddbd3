package graph

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeNamed returns a node of one task per name, in order.
func nodeNamed(in, out []int, names ...string) *taskNode {
	return &taskNode{in: in, out: out, tasks: pods(names...)}
}

// startOrder drives a run's schedule without goroutines: free workers start what next
// gives, and of the nodes running, the one that comes first in finishing ends first
// (the earliest started when finishing names none of them). It returns the first task
// of each node, in the order the nodes started.
func startOrder(t *testing.T, g *Graph, opts Options, finishing ...string) []string {
	t.Helper()
	sealed := &Graph{nodes: g.nodes}
	require.NoError(t, sealed.seal())
	var s schedule
	s.init(sealed, opts)
	var started []string
	var running []int32
	for {
		for len(running) < max(opts.Workers, 1) {
			k, ok := s.next()
			if !ok {
				break
			}
			if len(sealed.nodes[k].tasks) == 0 {
				s.finish(k, nil)
				continue
			}
			started = append(started, fileOf(sealed.nodes[k].tasks[0]))
			running = append(running, k)
		}
		if len(running) == 0 {
			return started
		}
		i := 0
		for j, k := range running {
			if slices.Contains(finishing, fileOf(sealed.nodes[k].tasks[0])) &&
				(!slices.Contains(finishing, fileOf(sealed.nodes[running[i]].tasks[0])) ||
					slices.Index(finishing, fileOf(sealed.nodes[k].tasks[0])) < slices.Index(finishing, fileOf(sealed.nodes[running[i]].tasks[0]))) {
				i = j
			}
		}
		k := running[i]
		running = slices.Delete(running, i, i+1)
		s.finish(k, nil)
	}
}

// runReleased runs g with Run's goroutines in a bubble where every node blocks
// until the test releases it: of the nodes running once the bubble is idle, the one
// that comes first in finishing (else the earliest started) returns. It returns the
// first task of each node in the order the nodes started.
func runReleased(t *testing.T, g *Graph, opts Options, finishing ...string) []string {
	t.Helper()
	var started []string
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		release := map[string]chan struct{}{}
		var running []string
		done := make(chan []error, 1)
		go func() {
			done <- Run(context.Background(), g, opts, func(_ context.Context, tasks []*Task) error {
				name := fileOf(tasks[0])
				ch := make(chan struct{})
				mu.Lock()
				started, running, release[name] = append(started, name), append(running, name), ch
				mu.Unlock()
				<-ch
				return nil
			})
		}()
		for {
			synctest.Wait()
			mu.Lock()
			if len(running) == 0 {
				mu.Unlock()
				require.Empty(t, <-done)
				return
			}
			i := 0
			for j, name := range running {
				if slices.Contains(finishing, name) && (!slices.Contains(finishing, running[i]) || slices.Index(finishing, name) < slices.Index(finishing, running[i])) {
					i = j
				}
			}
			name := running[i]
			running = slices.Delete(running, i, i+1)
			close(release[name])
			mu.Unlock()
		}
	})
	return started
}

// TestLowestIndexFirstIsTheClusterVersionOperatorsOrder pins LowestIndexFirst to the
// order of the cluster-version operator's RunGraph (pkg/payload/task_graph.go): a
// dispatcher queues the lowest-index node whose predecessors all succeeded whenever
// its channel of Workers slots has room, and the workers take the queued nodes in
// order. The graphs are the ones of its TestRunGraph, the three nodes and two
// of several workers whose nodes end in a given order; the pure schedule and
// Run's goroutines must both start them so.
func TestLowestIndexFirstIsTheClusterVersionOperatorsOrder(t *testing.T) {
	// The graph of the operator's "nodes executed after dependencies" cases.
	afterDependencies := func() []*taskNode {
		return []*taskNode{
			nodeNamed([]int{3}, nil, "c"),
			nodeNamed([]int{3}, nil, "d", "e"),
			nodeNamed([]int{3}, []int{4}, "f"),
			nodeNamed(nil, []int{0, 1, 2}, "a", "b"),
			nodeNamed([]int{2}, nil, "g"),
		}
	}
	tests := []struct {
		name      string
		nodes     func() []*taskNode
		workers   int
		finishing []string
		want      []string
	}{
		{
			name:    "tasks executed in order in a single node",
			nodes:   func() []*taskNode { return []*taskNode{nodeNamed(nil, nil, "b", "a")} },
			workers: 1, want: []string{"b"},
		},
		{
			name:    "nodes executed after dependencies, one worker",
			nodes:   afterDependencies,
			workers: 1, want: []string{"a", "c", "d", "f", "g"},
		},
		{
			// As the cluster-version operator's test runs it: c and d start with a's
			// end, f once d ends, g once f ends.
			name:    "nodes executed after dependencies, two workers",
			nodes:   afterDependencies,
			workers: 2, finishing: []string{"a", "d", "f", "c", "g"}, want: []string{"a", "c", "d", "f", "g"},
		},
		{
			name: "task errors in parallel nodes, their shape",
			nodes: func() []*taskNode {
				return []*taskNode{
					nodeNamed(nil, []int{1}, "a"),
					nodeNamed([]int{0}, []int{2, 4, 8}, "b"),
					nodeNamed([]int{1}, []int{3}, "c1"),
					nodeNamed([]int{2}, []int{7}, "c2"),
					nodeNamed([]int{1}, []int{5}, "d1"),
					nodeNamed([]int{4}, []int{6}, "d2"),
					nodeNamed([]int{5}, []int{7}, "d3"),
					nodeNamed([]int{3, 6}, nil, "e"),
					nodeNamed([]int{1}, nil, "f"),
				}
			},
			workers: 1, want: []string{"a", "b", "c1", "d1", "c2", "d2", "f", "d3", "e"},
		},
		{
			// The graph: y and z ready, x waiting on y. z is queued while y runs.
			name: "a node queued ahead starts before a lower one made ready later",
			nodes: func() []*taskNode {
				return []*taskNode{nodeNamed([]int{1}, nil, "x"), nodeNamed(nil, []int{0}, "y"), nodeNamed(nil, nil, "z")}
			},
			workers: 1, want: []string{"y", "z", "x"},
		},
		{
			// Two workers and two queued: a's end makes x ready behind c and d.
			name: "several workers queue as many nodes ahead",
			nodes: func() []*taskNode {
				return []*taskNode{
					nodeNamed([]int{1}, nil, "x"), nodeNamed(nil, []int{0}, "a"),
					nodeNamed(nil, nil, "b"), nodeNamed(nil, nil, "c"), nodeNamed(nil, nil, "d"),
				}
			},
			workers: 2, finishing: []string{"a", "b", "c", "d", "x"}, want: []string{"a", "b", "c", "d", "x"},
		},
		{
			// A task-less node is queued and taken like any other: z is queued while the
			// first join is taken, before the join makes a ready.
			name: "a join takes its turn in the queue",
			nodes: func() []*taskNode {
				return []*taskNode{
					{out: []int{1}}, nodeNamed([]int{0}, []int{2}, "a"), {in: []int{1}, out: []int{3}},
					nodeNamed([]int{2}, nil, "b"), nodeNamed(nil, nil, "z"),
				}
			},
			workers: 1, want: []string{"z", "a", "b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Workers: tt.workers, Priority: LowestIndexFirst}
			assert.Equal(t, tt.want, startOrder(t, &Graph{nodes: tt.nodes()}, opts, tt.finishing...), "the schedule")
			assert.Equal(t, tt.want, runReleased(t, &Graph{nodes: tt.nodes()}, opts, tt.finishing...), "Run")
		})
	}
}

// TestRunGraphOnTheClusterVersionOperatorsCases runs the failure and cancellation cases
// of the cluster-version operator's TestRunGraph: the same tasks run to their end, and
// the same errors come back, except that a cancelled run also names its incomplete
// nodes when a node failed (the operator names them only when none failed).
func TestRunGraphOnTheClusterVersionOperatorsCases(t *testing.T) {
	errA, errC1, errF := errors.New("error A"), errors.New("error - c1"), errors.New("error - f")
	tests := []struct {
		name     string
		nodes    []*taskNode
		workers  int
		behave   func(ctx context.Context, cancel context.CancelFunc, name string) error
		want     []string
		wantErrs []string
	}{
		{
			name: "task error interrupts node processing",
			nodes: []*taskNode{
				nodeNamed([]int{2}, nil, "c"), nodeNamed([]int{2}, []int{3}, "d"),
				nodeNamed(nil, []int{0, 1}, "a", "b"), nodeNamed([]int{1}, nil, "e"),
			},
			workers: 2,
			behave: func(_ context.Context, _ context.CancelFunc, name string) error {
				if name == "d" {
					return errA
				}
				return nil
			},
			want: []string{"a", "b", "c"}, wantErrs: []string{"error A"},
		},
		{
			name: "mid-task cancellation error interrupts node processing",
			nodes: []*taskNode{
				nodeNamed([]int{2}, nil, "c"), nodeNamed([]int{2}, []int{3}, "d"),
				nodeNamed(nil, []int{0, 1}, "a", "b"), nodeNamed([]int{1}, nil, "e"),
			},
			workers: 2,
			behave: func(ctx context.Context, cancel context.CancelFunc, name string) error {
				if name == "d" {
					cancel()
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			},
			want: []string{"a", "b", "c"}, wantErrs: []string{"context canceled", "1 incomplete task node, beginning with pod \"e\"", "context canceled"},
		},
		{
			name:    "mid-task cancellation with work in queue does not deadlock",
			nodes:   []*taskNode{nodeNamed(nil, nil, "a1", "a2", "a3"), nodeNamed(nil, nil, "b")},
			workers: 1,
			behave: func(ctx context.Context, cancel context.CancelFunc, name string) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				if name == "a2" {
					cancel()
				}
				return nil
			},
			want: []string{"a1", "a2"}, wantErrs: []string{"context canceled", "1 incomplete task node, beginning with pod \"b\"", "context canceled"},
		},
		{
			name: "task errors in parallel nodes both reported",
			nodes: []*taskNode{
				nodeNamed(nil, []int{1}, "a"), nodeNamed([]int{0}, []int{2, 4, 8}, "b"),
				nodeNamed([]int{1}, []int{3}, "c1"), nodeNamed([]int{2}, []int{7}, "c2"),
				nodeNamed([]int{1}, []int{5}, "d1"), nodeNamed([]int{4}, []int{6}, "d2"),
				nodeNamed([]int{5}, []int{7}, "d3"), nodeNamed([]int{3, 6}, nil, "e"), nodeNamed([]int{1}, nil, "f"),
			},
			workers: 2,
			behave: func(_ context.Context, _ context.CancelFunc, name string) error {
				switch name {
				case "c1":
					return errC1
				case "f":
					return errF
				}
				return nil
			},
			want: []string{"a", "b", "d1", "d2", "d3"}, wantErrs: []string{"error - c1", "error - f"},
		},
		{
			name:    "cancellation without task errors is reported",
			nodes:   []*taskNode{nodeNamed(nil, []int{1}, "a"), nodeNamed([]int{0}, nil, "b")},
			workers: 1,
			behave: func(_ context.Context, cancel context.CancelFunc, name string) error {
				if name != "a" {
					return fmt.Errorf("task %s should never run", name)
				}
				cancel()
				return nil
			},
			want: []string{"a"}, wantErrs: []string{"1 incomplete task node, beginning with pod \"b\"", "context canceled"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var executed []string
			errs := Run(ctx, &Graph{nodes: tt.nodes}, Options{Workers: tt.workers}, func(ctx context.Context, tasks []*Task) error {
				for _, task := range tasks {
					name := fileOf(task)
					if err := tt.behave(ctx, cancel, name); err != nil {
						return err
					}
					mu.Lock()
					executed = append(executed, name)
					mu.Unlock()
				}
				return nil
			})
			assert.ElementsMatch(t, tt.want, executed)
			var messages []string
			for _, err := range errs {
				messages = append(messages, err.Error())
			}
			require.Len(t, messages, len(tt.wantErrs), "%q", messages)
			for i, want := range tt.wantErrs {
				assert.Contains(t, messages[i], want)
			}
		})
	}
}

// scheduleEvent is a node that ends at a simulated time.
type scheduleEvent struct {
	at   int64
	seq  int
	node int32
}

type scheduleEvents []scheduleEvent

func (e scheduleEvents) Len() int { return len(e) }
func (e scheduleEvents) Less(i, j int) bool {
	return e[i].at < e[j].at || (e[i].at == e[j].at && e[i].seq < e[j].seq)
}
func (e scheduleEvents) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *scheduleEvents) Push(x any)   { *e = append(*e, x.(scheduleEvent)) }
func (e *scheduleEvents) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

// makespan runs the schedule of g in simulated time, every task taking one unit, and
// returns when the last node ends: a worker that is free starts what the schedule
// gives at once; nodes that end at the same time end in the order they started.
func makespan(g *Graph, opts Options) int64 {
	var s schedule
	s.init(g, opts)
	var events scheduleEvents
	free, now, seq := max(opts.Workers, 1), int64(0), 0
	for {
		for free > 0 {
			k, ok := s.next()
			if !ok {
				break
			}
			if len(g.nodes[k].tasks) == 0 {
				s.finish(k, nil)
				continue
			}
			free--
			seq++
			heap.Push(&events, scheduleEvent{at: now + int64(len(g.nodes[k].tasks)), seq: seq, node: k})
		}
		if events.Len() == 0 {
			return now
		}
		e := heap.Pop(&events).(scheduleEvent)
		now = e.at
		free++
		s.finish(e.node, nil)
	}
}

// lowerBound is max(N/w, critical path) in task latencies: no schedule of g on w
// workers can end sooner.
func lowerBound(g *Graph, workers int) float64 {
	n := 0
	for _, node := range g.nodes {
		n += len(node.tasks)
	}
	return max(float64(n)/float64(workers), float64(criticalPath(g)))
}

// TestCriticalPathFirstEndsNearTheLowerBound: on the recorded OpenShift 4.15 install
// graph (74 components, 862 manifests, a 74-manifest critical path),
// CriticalPathFirst ends within 1.1× the lower bound max(N·L/w, critical path·L) at
// every pool size from 1 to 16, where the cluster-version operator's order
// (LowestIndexFirst) starts the 74-manifest component late.
func TestCriticalPathFirstEndsNearTheLowerBound(t *testing.T) {
	g := ocpGraph(t, "install")
	for w := 1; w <= 16; w++ {
		ratio := float64(makespan(g, Options{Workers: w, Priority: CriticalPathFirst})) / lowerBound(g, w)
		assert.LessOrEqual(t, ratio, 1.1, "%d workers", w)
	}
	cvo := float64(makespan(g, Options{Workers: 16, Priority: LowestIndexFirst})) / lowerBound(g, 16)
	assert.Greater(t, cvo, 1.25, "the cluster-version operator's order at 16 workers, the figure CriticalPathFirst improves on")
}

// BenchmarkInstallSchedule schedules the recorded OpenShift 4.15 install graph in
// simulated time (every manifest one latency L) and reports the makespan against the
// lower bound max(N·L/w, critical path·L), for CriticalPathFirst (the payload worker's
// initializing order) and for the cluster-version operator's, at every pool size from
// 1 to 16. The figures do
// not depend on the machine.
func BenchmarkInstallSchedule(b *testing.B) {
	g := ocpGraph(b, "install")
	orders := []struct {
		name     string
		priority Priority
	}{{"initializing", CriticalPathFirst}, {"cvo", LowestIndexFirst}}
	for _, o := range orders {
		for w := 1; w <= 16; w++ {
			b.Run(fmt.Sprintf("%s/workers=%d", o.name, w), func(b *testing.B) {
				var span int64
				for b.Loop() {
					span = makespan(g, Options{Workers: w, Priority: o.priority})
				}
				b.ReportMetric(float64(span)/lowerBound(g, w), "makespan/bound")
				b.ReportMetric(float64(span), "latencies")
			})
		}
	}
}
