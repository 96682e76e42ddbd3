package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func noop(context.Context, []*Task) error { return nil }

// independentGraph has n nodes of one task and no edges, sealed as Build seals.
func independentGraph(n int) *Graph {
	return sealed(nodesOfOneTask(n))
}

func nodesOfOneTask(n int) *Graph {
	g := &Graph{nodes: make([]*taskNode, n)}
	for i := range g.nodes {
		g.nodes[i] = &taskNode{tasks: pods("t"), runLevel: -1}
	}
	return g
}

// chainGraph has n nodes of one task, each depending on the previous one.
func chainGraph(n int) *Graph {
	g := nodesOfOneTask(n)
	for i := 1; i < n; i++ {
		g.nodes[i-1].out = []int{i}
		g.nodes[i].in = []int{i - 1}
	}
	return sealed(g)
}

// sealed seals a graph assembled by hand, as Build seals what it builds.
func sealed(g *Graph) *Graph {
	if err := g.seal(); err != nil {
		panic(err)
	}
	return g
}

// syntheticTasks mimics a payload: 50 run levels of 1 to 5 components, files in order.
func syntheticTasks(n int) []*Task {
	tasks := make([]*Task, n)
	for i := range tasks {
		level := i * 50 / n
		component := i % (level%5 + 1)
		tasks[i] = pod(fmt.Sprintf("0000_%02d_comp%d_%05d.yaml", level, component, i))
	}
	sortTasksByFile(tasks)
	for i, t := range tasks {
		t.Index, t.Total = i+1, n
	}
	return tasks
}

// sortTasksByFile sorts tasks by file, which puts the files of syntheticTasks in
// run-level order: their levels have two digits.
func sortTasksByFile(tasks []*Task) {
	slices.SortFunc(tasks, func(a, b *Task) int { return strings.Compare(fileOf(a), fileOf(b)) })
}

type graphShape struct {
	Nodes map[string]int `json:"nodes"`
	Edges [][2]int       `json:"edges"`
}

// ocpGraph reads a recorded OpenShift 4.15 task-graph shape: one task per manifest.
func ocpGraph(tb testing.TB, name string) *Graph {
	data, err := os.ReadFile(filepath.Join("testdata", "ocp-4.15-"+name+"-graph.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var shape graphShape
	if err := json.Unmarshal(data, &shape); err != nil {
		tb.Fatal(err)
	}
	g := &Graph{nodes: make([]*taskNode, len(shape.Nodes))}
	for id, count := range shape.Nodes {
		i, err := strconv.Atoi(id)
		if err != nil {
			tb.Fatal(err)
		}
		g.nodes[i] = &taskNode{runLevel: -1}
		for k := range count {
			g.nodes[i].tasks = append(g.nodes[i].tasks, pod(fmt.Sprintf("n%d-%d", i, k)))
		}
	}
	for _, e := range shape.Edges {
		g.nodes[e[0]].out = append(g.nodes[e[0]].out, e[1])
		g.nodes[e[1]].in = append(g.nodes[e[1]].in, e[0])
	}
	if err := g.seal(); err != nil {
		tb.Fatal(err)
	}
	return g
}

func TestOCPGraphShapes(t *testing.T) {
	for _, name := range []string{"install", "update"} {
		g := ocpGraph(t, name)
		total := 0
		for _, n := range g.nodes {
			total += len(n.tasks)
		}
		if total != 862 {
			t.Errorf("%s: %d manifests, want 862", name, total)
		}
		if errs := Run(context.Background(), g, Options{Workers: 8}, noop); errs != nil {
			t.Errorf("%s: %v", name, errs)
		}
	}
}

// criticalPath is the largest number of tasks on one path through the graph.
func criticalPath(g *Graph) int {
	memo := make([]int, len(g.nodes))
	done := make([]bool, len(g.nodes))
	var longest func(int) int
	longest = func(i int) int {
		if done[i] {
			return memo[i]
		}
		best := 0
		for _, o := range g.nodes[i].out {
			best = max(best, longest(o))
		}
		memo[i], done[i] = best+len(g.nodes[i].tasks), true
		return memo[i]
	}
	path := 0
	for i := range g.nodes {
		if g.indegree[i] == 0 {
			path = max(path, longest(i))
		}
	}
	return path
}

func reportPerNode(b *testing.B, nodes int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
}

func BenchmarkRunGraph(b *testing.B) {
	cases := []struct {
		name  string
		graph *Graph
	}{
		{"independent-1000", independentGraph(1000)},
		{"independent-10000", independentGraph(10000)},
		{"independent-100000", independentGraph(100000)},
		{"chain-10000", chainGraph(10000)},
		{"ocp-4.15-update", ocpGraph(b, "update")},
		{"ocp-4.15-install", ocpGraph(b, "install")},
	}
	for _, c := range cases {
		for _, workers := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/workers=%d", c.name, workers), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if errs := Run(context.Background(), c.graph, Options{Workers: workers}, noop); errs != nil {
						b.Fatal(errs)
					}
				}
				reportPerNode(b, len(c.graph.nodes))
			})
		}
	}
}

// BenchmarkBuildAndRunPayload builds the graph of a synthetic payload by run level and
// component, and runs it with no-op tasks.
func BenchmarkBuildAndRunPayload(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		tasks := syntheticTasks(n)
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			nodes := 0
			for b.Loop() {
				g, err := buildGraph(tasks, byNumberAndComponent)
				if err != nil {
					b.Fatal(err)
				}
				nodes = len(g.nodes)
				if errs := Run(context.Background(), g, Options{Workers: 8}, noop); errs != nil {
					b.Fatal(errs)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/task")
			b.ReportMetric(float64(nodes), "nodes")
		})
	}
}

// sleepUnit measures what a 1ms sleep takes when concurrency goroutines sleep at once.
func sleepUnit(concurrency int) time.Duration {
	const rounds = 20
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return time.Since(start) / rounds
}

// BenchmarkSleepingTasks runs graphs whose tasks sleep 1ms and reports the wall time
// against the lower bound max(critical path, ceil(tasks/workers)), counted in sleeps as
// measured on this machine with as many goroutines sleeping at once.
func BenchmarkSleepingTasks(b *testing.B) {
	sleepy := func(_ context.Context, tasks []*Task) error {
		for range tasks {
			time.Sleep(time.Millisecond)
		}
		return nil
	}
	cases := []struct {
		name    string
		graph   *Graph
		workers int
	}{
		{"independent-200", independentGraph(200), 16},
		{"chain-50", chainGraph(50), 4},
		{"ocp-4.15-update", ocpGraph(b, "update"), 8},
		{"ocp-4.15-update", ocpGraph(b, "update"), 16},
		{"ocp-4.15-install", ocpGraph(b, "install"), 8},
		{"ocp-4.15-install", ocpGraph(b, "install"), 16},
	}
	for _, c := range cases {
		for _, priority := range []Priority{LowestIndexFirst, CriticalPathFirst} {
			name := map[Priority]string{LowestIndexFirst: "lowest-index", CriticalPathFirst: "critical-path"}[priority]
			b.Run(fmt.Sprintf("%s/workers=%d/%s", c.name, c.workers, name), func(b *testing.B) {
				total := 0
				for _, n := range c.graph.nodes {
					total += len(n.tasks)
				}
				bound := max(criticalPath(c.graph), (total+c.workers-1)/c.workers)
				unit := sleepUnit(min(c.workers, total))
				opts := Options{Workers: c.workers, Priority: priority}
				for b.Loop() {
					if errs := Run(context.Background(), c.graph, opts, sleepy); errs != nil {
						b.Fatal(errs)
					}
				}
				wall := b.Elapsed() / time.Duration(b.N)
				b.ReportMetric(float64(wall.Microseconds())/1000, "wall-ms")
				b.ReportMetric(float64(bound), "bound-sleeps")
				b.ReportMetric(float64(unit.Microseconds())/1000, "ms/sleep")
				b.ReportMetric(float64((time.Duration(bound)*unit).Microseconds())/1000, "bound-ms")
				b.ReportMetric(float64(wall)/float64(time.Duration(bound)*unit), "wall/bound")
			})
		}
	}
}
