package graph

import (
	"math/rand/v2"
	"slices"

	"github.com/converge-dev/converge/internal/input"
)

// Order is how Build arranges tasks.
type Order int

const (
	// OrderRunLevels runs run levels one after the other and the components of a
	// level in parallel, the tasks of a component in order (Place); consecutive
	// levels of a single component merge. It is how the payload worker updates.
	OrderRunLevels Order = iota
	// OrderParallel runs every component at once, the tasks of a component in order.
	// It is how the payload worker initializes.
	OrderParallel
	// OrderSerial runs every task one after the other, in input order.
	OrderSerial
)

func (o Order) breakFunc() (breakFunc, error) {
	switch o {
	case OrderRunLevels:
		return byNumberAndComponent, nil
	case OrderParallel:
		return flattenByNumberAndComponent, nil
	case OrderSerial:
		return nil, nil
	}
	return nil, input.Invalidf("graph", "order", "%d is unknown", int(o))
}

// Build arranges tasks in order: a barrier (Place.Barrier) is a node that nothing
// before it passes, and every dependency (Item.Dependencies) is an edge. The
// dependencies are checked against OrderRunLevels whatever order is asked for, so that
// an input has the same verdict in every order: a dependency on a later run level, or
// one that closes a cycle, is a *CycleError; one on an item the input lacks is an
// *UnknownDependencyError; a nil task or a task without an item is an error; all wrap
// converge.ErrInvalid.
func Build(tasks []*Task, order Order) (*Graph, error) {
	breakFn, err := order.breakFunc()
	if err != nil {
		return nil, err
	}
	if err := checkTasks(tasks, 0); err != nil {
		return nil, err
	}
	if order != OrderRunLevels && hasDependencies(tasks) {
		if _, err := buildGraph(tasks, byNumberAndComponent); err != nil {
			return nil, err
		}
	}
	return buildGraph(tasks, breakFn)
}

// buildGraph splits tasks around barriers, parallelizes them by breakFn (nil keeps every run
// of tasks serial), adds their explicit dependencies and seals the graph.
func buildGraph(tasks []*Task, breakFn breakFunc) (*Graph, error) {
	g := newGraph(tasks)
	if err := g.split(isBarrier); err != nil {
		return nil, err
	}
	if breakFn != nil {
		if err := g.parallelize(breakFn); err != nil {
			return nil, err
		}
	}
	if err := g.addDependencies(); err != nil {
		return nil, err
	}
	if err := g.seal(); err != nil {
		return nil, err
	}
	return g, nil
}

// shuffleStride is the number of passes that share one permutation of the nodes in
// BuildShuffled, each rotated further.
const shuffleStride = 8

// BuildShuffled arranges tasks as Build does in OrderParallel, and checks them as Build
// does, with the nodes in an order that changes with pass: a stride of 8 passes
// shares one permutation, seeded by pass/8, and each pass of the stride starts further
// into it, so that a task that always fails cannot starve the tasks behind it. It is
// how the payload worker reconciles, pass being the number of passes completed.
func BuildShuffled(tasks []*Task, pass int) (*Graph, error) {
	if _, err := Build(tasks, OrderParallel); err != nil {
		return nil, err
	}
	epoch, iteration := pass/shuffleStride, pass%shuffleStride
	r := rand.New(rand.NewPCG(uint64(epoch), 0))
	return buildGraph(tasks, shiftOrder(permuteOrder(flattenByNumberAndComponent, r), iteration, shuffleStride))
}

// isBarrier is true for a task whose item is a barrier: nothing before it runs after it
// or in parallel with it.
func isBarrier(t *Task) bool {
	return t.place().Barrier
}

// split breaks every node at the first task onFn is true for: a node [a b J c d] becomes
// [a b] -> [J] -> [c d], keeping the node's index for [J] and appending the others. The
// appended right-hand node is split again when it holds another such task. A nil onFn,
// a graph that fails check or a task without an item is an error wrapping
// ErrInvalid, and the graph is left as it was.
func (g *Graph) split(onFn func(*Task) bool) error {
	if onFn == nil {
		return input.Invalidf("graph", "split", "no function")
	}
	if err := g.checkShape(); err != nil {
		return err
	}
	for i := 0; i < len(g.nodes); i++ {
		node := g.nodes[i]
		if len(node.tasks) <= 1 {
			continue
		}
		j := slices.IndexFunc(node.tasks, onFn)
		if j < 0 {
			continue
		}
		tasks := node.tasks
		if j > 0 {
			left := len(g.nodes)
			g.nodes = append(g.nodes, &taskNode{in: node.in, tasks: tasks[:j:j], out: []int{i}, runLevel: -1})
			for _, from := range node.in {
				replaceAll(g.nodes[from].out, i, left)
			}
			node.in = []int{left}
		}
		if j < len(tasks)-1 {
			right := len(g.nodes)
			g.nodes = append(g.nodes, &taskNode{in: []int{i}, tasks: tasks[j+1:], out: node.out, runLevel: -1})
			for _, to := range node.out {
				replaceAll(g.nodes[to].in, i, right)
			}
			node.out = []int{right}
		}
		node.tasks = tasks[j : j+1 : j+1]
	}
	return nil
}

func replaceAll(s []int, old, new int) {
	for k, v := range s {
		if v == old {
			s[k] = new
		}
	}
}

// parallelize replaces every node whose tasks breakFn breaks into more than one node by
// a chain of steps: the node (now task-less) fans out to the first step's nodes, which
// join into the next step's nodes, and so on; a task-less spacer joins two steps of
// several nodes each, and a task-less anchor joins the last step to the node's old
// successors. A breakFn result of no steps, or of one step of one node, leaves the node
// as it is. Nodes added by parallelize are not broken again. A nil breakFn, a graph that
// fails check, a task without an item or a nil node in breakFn's result is an
// error wrapping ErrInvalid, and the graph is left as it was.
func (g *Graph) parallelize(breakFn breakFunc) error {
	if breakFn == nil {
		return input.Invalidf("graph", "parallelization", "no breakFunc")
	}
	if err := g.checkShape(); err != nil {
		return err
	}
	broken := make([][][]*taskNode, len(g.nodes))
	for i, node := range g.nodes {
		broken[i] = breakFn(node.tasks)
		for s, step := range broken[i] {
			if slices.Contains(step, nil) {
				return input.Invalidf("graph", "parallelization", "the breakFunc returned a nil node in step %d of node %d", s, i)
			}
		}
	}
	for i, steps := range broken {
		node := g.nodes[i]
		if len(steps) == 0 || (len(steps) == 1 && len(steps[0]) == 1) {
			if len(node.tasks) > 0 {
				*node = *newNodeLike(node, runKeyOf(node.tasks[0]))
			}
			continue
		}
		node.tasks = nil
		out := node.out
		node.out = nil

		in := []int{i}
		for _, step := range steps {
			if len(step) == 0 {
				continue
			}
			if len(in) > 1 && len(step) > 1 {
				in = g.bulkAdd([]*taskNode{{runLevel: -1}}, in)
			}
			in = g.bulkAdd(step, in)
		}
		if len(out) == 0 {
			continue
		}
		anchor := len(g.nodes)
		g.nodes = append(g.nodes, &taskNode{out: out, runLevel: -1})
		for _, to := range out {
			replaceAll(g.nodes[to].in, i, anchor)
		}
		for _, from := range in {
			g.nodes[from].out = []int{anchor}
			g.nodes[anchor].in = append(g.nodes[anchor].in, from)
		}
	}
	return nil
}

// bulkAdd appends nodes, each depending on every node of in, and returns their indexes.
func (g *Graph) bulkAdd(nodes []*taskNode, in []int) []int {
	from := len(g.nodes)
	g.nodes = append(g.nodes, nodes...)
	added := make([]int, len(nodes))
	for k := range nodes {
		added[k] = from + k
		g.nodes[from+k].in = slices.Clone(in)
	}
	for _, k := range in {
		g.nodes[k].out = append(g.nodes[k].out, added...) // new nodes: no duplicates possible
	}
	return added
}

// taskPos is where a task is: its node and its position in the node.
type taskPos struct{ node, pos int }

// addDependencies adds an edge for every dependency (Item.Dependencies) that
// the graph does not already honour. A dependency on a later task of the same node, or
// one that closes a cycle, is a *CycleError; a dependency on a reference no task has is
// an *UnknownDependencyError. The graph is also checked by check; its tasks are
// checked already (checkShape).
func (g *Graph) addDependencies() error {
	if err := g.check(); err != nil {
		return err
	}
	if !g.hasDependencies() {
		return nil
	}
	positions := map[string][]taskPos{}
	for i, n := range g.nodes {
		for p, t := range n.tasks {
			ref := t.Item.Ref()
			positions[ref] = append(positions[ref], taskPos{i, p})
		}
	}
	for i, n := range g.nodes {
		for p, t := range n.tasks {
			for _, dep := range t.Item.Dependencies() {
				targets, ok := positions[dep]
				if !ok {
					return &UnknownDependencyError{Task: t.String(), Dependency: dep}
				}
				for _, at := range targets {
					if at.node == i {
						if at.pos >= p {
							return &CycleError{Tasks: []string{t.String(), g.nodes[i].tasks[at.pos].String()}}
						}
						continue
					}
					if g.reaches(at.node, i) {
						continue
					}
					if g.reaches(i, at.node) {
						return &CycleError{Tasks: []string{t.String(), g.nodes[at.node].tasks[at.pos].String()}}
					}
					g.nodes[at.node].out = append(g.nodes[at.node].out, i)
					n.in = append(n.in, at.node)
				}
			}
		}
	}
	return nil
}

// hasDependencies reports whether a task of the graph has a dependency.
func (g *Graph) hasDependencies() bool {
	for _, n := range g.nodes {
		if hasDependencies(n.tasks) {
			return true
		}
	}
	return false
}

// hasDependencies reports whether a task of tasks, checked already (checkTasks), has a
// dependency.
func hasDependencies(tasks []*Task) bool {
	for _, t := range tasks {
		if len(t.Item.Dependencies()) > 0 {
			return true
		}
	}
	return false
}

// reaches reports whether to can be reached from from along Out edges.
func (g *Graph) reaches(from, to int) bool {
	seen := make([]bool, len(g.nodes))
	stack := []int{from}
	seen[from] = true
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if k == to {
			return true
		}
		for _, o := range g.nodes[k].out {
			if !seen[o] {
				seen[o] = true
				stack = append(stack, o)
			}
		}
	}
	return false
}
