package graph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// propertyRuns is the number of random graphs each property runs; -short runs fewer.
func propertyRuns(t *testing.T) int {
	if testing.Short() {
		return 40
	}
	return 300
}

// randomRunGraph is a random DAG of 1 to 60 nodes, or one run in ten of 300 to 900
// nodes, most of them roots: more roots than the queue holds beyond its window.
func randomRunGraph(r *rand.Rand) *Graph {
	if r.IntN(10) == 0 {
		return randomDAG(r, 300+r.IntN(600), 0.002+r.Float64()*0.004)
	}
	return randomDAG(r, r.IntN(60)+1, r.Float64()*0.3)
}

var priorities = []Priority{LowestIndexFirst, CriticalPathFirst}

// TestRunGraphRulesHoldOnRandomGraphs: whatever the graph, the number of workers and
// the priority, every task runs exactly once, every node after the nodes it depends
// on ended, and never more than Workers calls run at once.
func TestRunGraphRulesHoldOnRandomGraphs(t *testing.T) {
	for seed := range uint64(propertyRuns(t)) {
		r := rand.New(rand.NewPCG(seed, 1))
		g := randomRunGraph(r)
		opts := Options{Workers: r.IntN(20) + 1, Priority: priorities[r.IntN(2)]}
		nodeOf := map[*Task]int{}
		for i, n := range g.nodes {
			for _, task := range n.tasks {
				nodeOf[task] = i
			}
		}
		var running, peak atomic.Int32
		var mu sync.Mutex
		runs := map[int]int{}
		seq, started, ended := 0, map[int]int{}, map[int]int{}
		errs := Run(context.Background(), g, opts, func(_ context.Context, tasks []*Task) error {
			now := running.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			node := nodeOf[tasks[0]]
			mu.Lock()
			seq++
			runs[node]++
			started[node] = seq
			mu.Unlock()
			runtime.Gosched() // lets other workers start while this call runs
			mu.Lock()
			seq++
			ended[node] = seq
			mu.Unlock()
			running.Add(-1)
			return nil
		})
		name := fmt.Sprintf("seed %d: %d nodes, %+v", seed, len(g.nodes), opts)
		require.Empty(t, errs, name)
		assert.LessOrEqual(t, int(peak.Load()), opts.Workers, "%s: calls at once", name)
		for i, n := range g.nodes {
			if want := min(len(n.tasks), 1); runs[i] != want {
				t.Fatalf("%s: node %d ran %d times, want %d", name, i, runs[i], want)
			}
			for _, from := range n.in {
				if end, ok := ended[from]; len(g.nodes[from].tasks) > 0 && runs[i] > 0 && (!ok || end > started[i]) {
					t.Fatalf("%s: node %d started before its dependency %d ended", name, i, from)
				}
			}
		}
	}
}

// TestRunGraphWithOneWorkerStartsNodesInTheScheduleOrder: with one worker, Run starts
// the nodes in exactly the order of its schedule, also when a node becomes ready while
// roots beyond the dispatch window wait in its queue.
func TestRunGraphWithOneWorkerStartsNodesInTheScheduleOrder(t *testing.T) {
	for seed := range uint64(propertyRuns(t)) {
		r := rand.New(rand.NewPCG(seed, 2))
		g := randomRunGraph(r)
		opts := Options{Workers: 1, Priority: priorities[r.IntN(2)]}
		var got []string
		errs := Run(context.Background(), g, opts, func(_ context.Context, tasks []*Task) error {
			got = append(got, fileOf(tasks[0]))
			return nil
		})
		require.Empty(t, errs)
		want := startOrder(t, g, opts)
		require.Equal(t, want, got, "seed %d: %d nodes, %+v", seed, len(g.nodes), opts)
	}
}
