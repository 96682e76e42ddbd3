package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// randomDAG builds a graph of n nodes whose edges go from lower to higher positions of a
// random permutation, so the node indexes are not a topological order.
func randomDAG(r *rand.Rand, n int, density float64) *Graph {
	perm := r.Perm(n)
	g := &Graph{nodes: make([]*taskNode, n)}
	for i := range g.nodes {
		g.nodes[i] = &taskNode{runLevel: -1}
		if r.IntN(5) > 0 { // one node in five has no tasks
			for k := range r.IntN(3) + 1 {
				g.nodes[i].tasks = append(g.nodes[i].tasks, pod(fmt.Sprintf("n%d-t%d", i, k)))
			}
		}
	}
	for a := range n {
		for b := a + 1; b < n; b++ {
			if r.Float64() < density {
				from, to := perm[a], perm[b]
				g.nodes[from].out = append(g.nodes[from].out, to)
				g.nodes[to].in = append(g.nodes[to].in, from)
			}
		}
	}
	return g
}

func FuzzRunGraph(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(60), uint64(0), uint8(2))
	f.Add(uint64(2), uint8(30), uint8(20), uint64(0b1010), uint8(4))
	f.Add(uint64(3), uint8(1), uint8(0), uint64(1), uint8(1))
	f.Add(uint64(4), uint8(40), uint8(200), uint64(0xff00ff), uint8(7))
	f.Add(uint64(5), uint8(25), uint8(5), uint64(0xffffffffffffffff), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, size, density uint8, failMask uint64, workers uint8) {
		defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
		r := rand.New(rand.NewPCG(seed, 0))
		g := randomDAG(r, int(size)%40+1, float64(density)/256)
		failing := func(node int) bool { return failMask&(1<<(node%64)) != 0 }
		nodeOf := map[*Task]int{}
		for i, n := range g.nodes {
			for _, task := range n.tasks {
				nodeOf[task] = i
			}
		}

		var mu sync.Mutex
		runs := map[*Task]int{}
		started := map[int]int{} // node -> sequence number of its start
		ended := map[int]int{}   // node -> sequence number of its end
		seq := 0
		errs := Run(context.Background(), g, Options{Workers: int(workers)%8 + 1}, func(_ context.Context, tasks []*Task) error {
			node := nodeOf[tasks[0]]
			mu.Lock()
			seq++
			started[node] = seq
			for _, task := range tasks {
				runs[task]++
			}
			mu.Unlock()
			var err error
			if failing(node) {
				err = fmt.Errorf("node %d failed", node)
			}
			mu.Lock()
			seq++
			ended[node] = seq
			mu.Unlock()
			return err
		})

		// What must run: every node with tasks none of whose ancestors failed.
		blocked := make([]bool, len(g.nodes))
		order := topologicalOrder(t, g)
		for _, i := range order {
			for _, from := range g.nodes[i].in {
				if blocked[from] || (failing(from) && len(g.nodes[from].tasks) > 0) {
					blocked[i] = true
				}
			}
		}
		wantErrs := 0
		for i, n := range g.nodes {
			_, ran := started[i]
			switch {
			case len(n.tasks) == 0:
				if ran {
					t.Fatalf("task-less node %d was run", i)
				}
			case blocked[i] && ran:
				t.Fatalf("node %d ran although a dependency failed", i)
			case !blocked[i] && !ran:
				t.Fatalf("node %d did not run although no dependency failed", i)
			}
			if ran && failing(i) {
				wantErrs++
			}
			for _, from := range n.in {
				if !ran || len(g.nodes[from].tasks) == 0 {
					continue
				}
				if end, ok := ended[from]; !ok || end > started[i] {
					t.Fatalf("node %d started before its dependency %d ended", i, from)
				}
			}
		}
		for task, count := range runs {
			if count != 1 {
				t.Fatalf("task %s ran %d times", fileOf(task), count)
			}
		}
		if len(errs) != wantErrs {
			t.Fatalf("got %d errors, want %d: %v", len(errs), wantErrs, errs)
		}
	})
}

func topologicalOrder(t *testing.T, g *Graph) []int {
	indegree := make([]int, len(g.nodes))
	for _, n := range g.nodes {
		for _, o := range n.out {
			indegree[o]++
		}
	}
	var queue, order []int
	for i, d := range indegree {
		if d == 0 {
			queue = append(queue, i)
		}
	}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		order = append(order, k)
		for _, o := range g.nodes[k].out {
			if indegree[o]--; indegree[o] == 0 {
				queue = append(queue, o)
			}
		}
	}
	if len(order) != len(g.nodes) {
		t.Fatalf("the generated graph has a cycle")
	}
	return order
}

func FuzzBuild(f *testing.F) {
	f.Add(uint64(1), uint8(12))
	f.Add(uint64(2), uint8(40))
	f.Add(uint64(3), uint8(0))
	f.Add(uint64(4), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, size uint8) {
		r := rand.New(rand.NewPCG(seed, 0))
		tasks := make([]*Task, int(size)%60)
		for i := range tasks {
			var file string
			switch r.IntN(6) {
			case 0:
				file = fmt.Sprintf("plain-%d.yaml", i)
			default:
				file = fmt.Sprintf("0000_%d_%c_%03d.yaml", r.IntN(4)*10, 'a'+rune(r.IntN(3)), i)
			}
			if r.IntN(10) == 0 {
				tasks[i] = job(file)
			} else {
				tasks[i] = pod(file)
			}
		}
		for _, breakFn := range []breakFunc{byNumberAndComponent, flattenByNumberAndComponent, shiftOrder(permuteOrder(flattenByNumberAndComponent, r), int(seed%8), 8)} {
			g, err := buildGraph(tasks, breakFn)
			if err != nil {
				t.Fatalf("buildGraph: %v", err)
			}
			if err := errors.Join(g.check(), matchEdges(g)); err != nil {
				t.Fatalf("invalid graph: %v\n%s", err, g)
			}
			position := map[*Task][2]int{}
			for i, n := range g.nodes {
				for k, task := range n.tasks {
					if _, dup := position[task]; dup {
						t.Fatalf("task %s is in the graph twice", fileOf(task))
					}
					position[task] = [2]int{i, k}
				}
			}
			if len(position) != len(tasks) {
				t.Fatalf("%d of %d tasks in the graph", len(position), len(tasks))
			}
			// Barriers: every earlier task runs before, every later one after.
			for j, task := range tasks {
				if !isBarrier(task) {
					continue
				}
				jobNode := position[task][0]
				for i, other := range tasks {
					otherNode := position[other][0]
					switch {
					case i < j && !g.reaches(otherNode, jobNode):
						t.Fatalf("%s does not run before job %s", fileOf(other), fileOf(task))
					case i > j && !g.reaches(jobNode, otherNode):
						t.Fatalf("%s does not run after job %s", fileOf(other), fileOf(task))
					}
				}
			}
		}
	})
}
