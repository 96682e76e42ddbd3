package graph

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// seal validates the graph and records what Run needs, so that a run neither
// validates nor allocates in proportion to the edges.
func (g *Graph) seal() error {
	indegree := make([]int32, len(g.nodes))
	order := make([]int32, 0, len(g.nodes))
	if err := validate(g, indegree, make([]int32, 0, len(g.nodes)), &order); err != nil {
		return err
	}
	g.indegree, g.critical = indegree, criticalPathKeys(g, order)
	for i, d := range indegree {
		if d == 0 {
			g.roots = append(g.roots, int32(i))
		}
	}
	g.criticalRoots = slices.Clone(g.roots)
	slices.SortFunc(g.criticalRoots, func(a, b int32) int { return cmp.Compare(g.critical[a], g.critical[b]) })
	return nil
}

// checkShape is what split and parallelize need before they change a graph: check
// holds and every task has an item (checkTasks).
func (g *Graph) checkShape() error {
	if err := g.check(); err != nil {
		return err
	}
	for i, n := range g.nodes {
		if err := checkTasks(n.tasks, i); err != nil {
			return err
		}
	}
	return nil
}

// checkTasks reports a nil task of node, or one whose item is nil or a typed nil.
func checkTasks(tasks []*Task, node int) error {
	for p, t := range tasks {
		if t == nil || input.IsNil(t.Item) {
			return input.Invalidf("graph", "graph", "node %d: task %d has no item", node, p)
		}
	}
	return nil
}

// CycleError reports tasks whose dependencies, together with the order Build imposes
// (run levels, the tasks of a component in order, barriers), form a cycle.
type CycleError struct {
	// Tasks names the tasks on the cycle, e.g. `deployment "ns/a" (3 of 9)`.
	Tasks []string
}

// Error implements error.
func (e *CycleError) Error() string {
	return "graph: dependency cycle: " + strings.Join(e.Tasks, " -> ")
}

// Is reports converge.ErrInvalid.
func (e *CycleError) Is(target error) bool { return target == converge.ErrInvalid }

// UnknownDependencyError reports a dependency on an item the tasks lack.
type UnknownDependencyError struct {
	// Task is the task that declares the dependency.
	Task string
	// Dependency is the reference that matches no item.
	Dependency string
}

// Error implements error.
func (e *UnknownDependencyError) Error() string {
	return fmt.Sprintf("graph: %s depends on unknown item %q", e.Task, e.Dependency)
}

// Is reports converge.ErrInvalid.
func (e *UnknownDependencyError) Is(target error) bool { return target == converge.ErrInvalid }

// check reports a nil node, an edge to a missing node and a cycle. Errors wrap
// converge.ErrInvalid. That in and out edges agree holds by construction.
func (g *Graph) check() error {
	if g == nil {
		return input.Invalidf("graph", "graph", "nil")
	}
	indegree := make([]int32, len(g.nodes))
	return validate(g, indegree, make([]int32, 0, len(g.nodes)), nil)
}

// validate does check's work in caller-provided scratch space: on success indegree
// holds each node's number of predecessors and, when order is not nil, *order is
// appended a topological order of the nodes.
func validate(g *Graph, indegree, queue []int32, order *[]int32) error {
	n := len(g.nodes)
	for i, node := range g.nodes {
		if node == nil {
			return input.Invalidf("graph", "graph", "node %d is nil", i)
		}
		for _, o := range node.out {
			if o < 0 || o >= n {
				return input.Invalidf("graph", "graph", "node %d has an edge to missing node %d", i, o)
			}
			indegree[o]++
		}
	}
	for i, node := range g.nodes {
		for _, from := range node.in {
			if from < 0 || from >= n {
				return input.Invalidf("graph", "graph", "node %d has an edge from missing node %d", i, from)
			}
		}
	}
	remaining := slices.Clone(indegree)
	for i := range remaining {
		if remaining[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	visited := 0
	for len(queue) > 0 {
		k := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		visited++
		if order != nil {
			*order = append(*order, k)
		}
		for _, o := range g.nodes[k].out {
			if remaining[o]--; remaining[o] == 0 {
				queue = append(queue, int32(o))
			}
		}
	}
	if visited == n {
		return nil
	}
	cycle := &CycleError{}
	for i, r := range remaining {
		if r > 0 {
			cycle.Tasks = append(cycle.Tasks, g.nodes[i].name(i))
		}
	}
	return cycle
}
