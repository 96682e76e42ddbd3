package payload

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// taskNode is a node of a Graph: tasks applied one after the other, after every node
// in in has succeeded. A node may have no tasks: it then only joins edges.
type taskNode struct {
	// in are the indexes of the nodes that must succeed before this one starts.
	in []int
	// tasks run in order.
	tasks []*Task
	// out are the indexes of the nodes that wait for this one.
	out []int
	// runLevel is the run level of the node's first task, -1 when it has none.
	runLevel int
	// component is the component of the node's first task, "" when it has none.
	component string
}

// label is the node's short description: "07-a, 2 manifests".
func (n *taskNode) label() string {
	if n.component != "" {
		return fmt.Sprintf("%02d-%s, %d manifests", n.runLevel, n.component, len(n.tasks))
	}
	return fmt.Sprintf("%d manifests", len(n.tasks))
}

// Graph is a directed acyclic graph of the tasks of a payload: groups of tasks applied
// in order, each group after the groups it depends on. BuildGraph makes one, String,
// Mermaid and DOT print it as a dry-run plan, RunGraph runs it. A Graph is immutable
// once built, so several RunGraph calls may share it; the zero value is an empty graph.
type Graph struct {
	nodes []*taskNode
	// indegree counts each node's predecessors and critical orders nodes by the
	// number of tasks on their longest path; roots are the nodes without predecessors
	// in index order, criticalRoots in critical order. All are set by seal, nil before.
	indegree      []int32
	critical      []int64
	roots         []int32
	criticalRoots []int32
}

// newGraph returns a graph with one node that runs tasks in order.
func newGraph(tasks []*Task) *Graph {
	return &Graph{nodes: []*taskNode{{tasks: tasks, runLevel: -1}}}
}

// Order is how BuildGraph arranges the tasks of a payload.
type Order int

const (
	// OrderRunLevels applies run levels one after the other and the components of a
	// level in parallel, files of a component in order (file names
	// "0000_<level>_<component>_…", see ParseRunLevel); consecutive levels of a single
	// component merge. It is how the Worker updates.
	OrderRunLevels Order = iota
	// OrderParallel applies every component at once, files of a component in order.
	// It is how the Worker initializes and reconciles.
	OrderParallel
	// OrderSerial applies every task one after the other, in payload order.
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
	return nil, input.Invalidf("payload", "order", "%d is unknown", int(o))
}

// BuildGraph arranges tasks in order: a Job (batch/v1) is a barrier that nothing before
// it passes, and every explicit dependency (DependsOnAnnotation) is an edge. The
// dependencies are checked against the run-level order whatever order is asked for, so
// that a payload has the same verdict for every state of the Worker: a dependency on a
// later run level, or one that closes a cycle, is a *CycleError; one on a manifest the
// payload lacks is an *UnknownDependencyError; a nil task or a task without a manifest
// is an error; all wrap ErrInvalid.
func BuildGraph(tasks []*Task, order Order) (*Graph, error) {
	breakFn, err := order.breakFunc()
	if err != nil {
		return nil, err
	}
	if order != OrderRunLevels && hasDependencies(tasks) {
		if _, err := buildGraph(tasks, byNumberAndComponent); err != nil {
			return nil, err
		}
	}
	return buildGraph(tasks, breakFn)
}

// buildGraph splits tasks around Jobs, parallelizes them by breakFn (nil keeps every run
// of tasks serial), adds their explicit dependencies and seals the graph.
func buildGraph(tasks []*Task, breakFn breakFunc) (*Graph, error) {
	g := newGraph(tasks)
	if err := g.split(splitOnJobs); err != nil {
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

// seal validates the graph and records what RunGraph needs, so that a run neither
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
// holds and every task has a manifest.
func (g *Graph) checkShape() error {
	if err := g.check(); err != nil {
		return err
	}
	for i, n := range g.nodes {
		for p, t := range n.tasks {
			if t == nil || t.Manifest == nil {
				return input.Invalidf("payload", "graph", "node %d: task %d has no manifest", i, p)
			}
		}
	}
	return nil
}

var jobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// splitOnJobs is true for batch/v1 Jobs: a Job is a barrier, nothing before it runs after
// it or in parallel with it.
func splitOnJobs(t *Task) bool {
	return t != nil && t.Manifest != nil && t.Manifest.GVK == jobGVK
}

// split breaks every node at the first task onFn is true for: a node [a b J c d] becomes
// [a b] -> [J] -> [c d], keeping the node's index for [J] and appending the others. The
// appended right-hand node is split again when it holds another such task. A nil onFn,
// a graph that fails check or a task without a manifest is an error wrapping
// ErrInvalid, and the graph is left as it was.
func (g *Graph) split(onFn func(*Task) bool) error {
	if onFn == nil {
		return input.Invalidf("payload", "graph split", "no function")
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
// fails check, a task without a manifest or a nil node in breakFn's result is an
// error wrapping ErrInvalid, and the graph is left as it was.
func (g *Graph) parallelize(breakFn breakFunc) error {
	if breakFn == nil {
		return input.Invalidf("payload", "graph parallelization", "no breakFunc")
	}
	if err := g.checkShape(); err != nil {
		return err
	}
	broken := make([][][]*taskNode, len(g.nodes))
	for i, node := range g.nodes {
		broken[i] = breakFn(node.tasks)
		for s, step := range broken[i] {
			if slices.Contains(step, nil) {
				return input.Invalidf("payload", "graph parallelization", "the breakFunc returned a nil node in step %d of node %d", s, i)
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

// CycleError reports a payload whose explicit dependencies, together with the order the
// payload imposes (run levels, files of a component, Jobs as barriers), form a cycle.
type CycleError struct {
	// Tasks names the tasks on the cycle, e.g. `deployment "ns/a" (3 of 9)`.
	Tasks []string
}

// Error implements error.
func (e *CycleError) Error() string {
	return "payload: dependency cycle: " + strings.Join(e.Tasks, " -> ")
}

// Is reports converge.ErrInvalid.
func (e *CycleError) Is(target error) bool { return target == converge.ErrInvalid }

// UnknownDependencyError reports an explicit dependency on a manifest the payload lacks.
type UnknownDependencyError struct {
	// Task is the task that declares the dependency.
	Task string
	// Dependency is the reference that matches no manifest.
	Dependency string
}

// Error implements error.
func (e *UnknownDependencyError) Error() string {
	return fmt.Sprintf("payload: %s depends on unknown manifest %q", e.Task, e.Dependency)
}

// Is reports converge.ErrInvalid.
func (e *UnknownDependencyError) Is(target error) bool { return target == converge.ErrInvalid }

type taskPos struct{ node, pos int }

// addDependencies adds an edge for every explicit dependency (Manifest.DependsOn) that
// the graph does not already honour. A dependency on a later task of the same node, or
// one that closes a cycle, is a *CycleError; a dependency on a reference no task has is
// an *UnknownDependencyError. The graph is also checked by check.
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
			if t != nil && t.Manifest != nil {
				ref := t.Manifest.Ref()
				positions[ref] = append(positions[ref], taskPos{i, p})
			}
		}
	}
	for i, n := range g.nodes {
		for p, t := range n.tasks {
			if t == nil || t.Manifest == nil {
				continue
			}
			for _, dep := range t.Manifest.DependsOn {
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

func (g *Graph) hasDependencies() bool {
	for _, n := range g.nodes {
		if hasDependencies(n.tasks) {
			return true
		}
	}
	return false
}

func hasDependencies(tasks []*Task) bool {
	for _, t := range tasks {
		if t != nil && t.Manifest != nil && len(t.Manifest.DependsOn) > 0 {
			return true
		}
	}
	return false
}

// name names node i in errors: its first task, or its index when it has none.
func (n *taskNode) name(i int) string {
	if len(n.tasks) > 0 {
		return n.tasks[0].String()
	}
	return fmt.Sprintf("node %d", i)
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

// check reports a nil node, an edge to a missing node, in and out edges that disagree
// and a cycle. Errors wrap ErrInvalid.
func (g *Graph) check() error {
	if g == nil {
		return input.Invalidf("payload", "graph", "nil")
	}
	indegree := make([]int32, len(g.nodes))
	return validate(g, indegree, make([]int32, 0, len(g.nodes)), nil)
}

// validate does check's work in caller-provided scratch space: on success indegree
// holds each node's number of predecessors and, when order is not nil, *order is
// appended a topological order of the nodes.
func validate(g *Graph, indegree, queue []int32, order *[]int32) error {
	n := len(g.nodes)
	edges := 0
	for i, node := range g.nodes {
		if node == nil {
			return input.Invalidf("payload", "graph", "node %d is nil", i)
		}
		for _, o := range node.out {
			if o < 0 || o >= n {
				return input.Invalidf("payload", "graph", "node %d has an edge to missing node %d", i, o)
			}
			indegree[o]++
		}
		edges += len(node.out)
	}
	for i, node := range g.nodes {
		for _, from := range node.in {
			if from < 0 || from >= n {
				return input.Invalidf("payload", "graph", "node %d has an edge from missing node %d", i, from)
			}
		}
	}
	if err := matchEdges(g, indegree, edges); err != nil {
		return err
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

// matchEdges checks that the In of every node holds exactly the nodes whose Out point at
// it, as many times as they do; indegree counts those Out edges, edges is their total.
// It groups the Out edges by target (ascending sources) and compares each group with
// In by counting: O(nodes + edges), one allocation.
func matchEdges(g *Graph, indegree []int32, edges int) error {
	n := len(g.nodes)
	buf := make([]int32, 2*n+edges)
	start, count, sources := buf[:n], buf[n:2*n], buf[2*n:]
	var sum int32
	for i, d := range indegree {
		sum += d
		start[i] = sum
	}
	for i := n - 1; i >= 0; i-- {
		for _, o := range g.nodes[i].out {
			start[o]--
			sources[start[o]] = int32(i)
		}
	}
	for i, node := range g.nodes {
		want := sources[start[i] : start[i]+indegree[i]]
		ok := len(node.in) == len(want)
		if ok {
			for _, from := range want {
				count[from]++
			}
			for _, from := range node.in {
				if count[from] == 0 {
					ok = false
					break
				}
				count[from]--
			}
		}
		if !ok {
			return input.Invalidf("payload", "graph", "node %d: In %v does not match the nodes whose Out point at it %v", i, node.in, want)
		}
	}
	return nil
}

// String prints the graph as a text plan, nodes in the order a single worker would run
// them: one line per node with its run level, component and predecessors, then one
// indented line per task. An invalid graph prints its nodes in index order.
func (g *Graph) String() string {
	var b strings.Builder
	for _, i := range g.runOrder() {
		n := g.nodes[i]
		fmt.Fprintf(&b, "node %d: %s", i, n.label())
		if len(n.in) > 0 {
			fmt.Fprintf(&b, ", after %s", joinInts(sortedInts(n.in), ", "))
		}
		b.WriteByte('\n')
		for _, t := range n.tasks {
			fmt.Fprintf(&b, "  %s %s\n", t.file(), t)
		}
	}
	return b.String()
}

// runOrder returns the node indexes in the order RunGraph with one worker, in
// LowestIndexFirst order, starts them, or in index order when the graph is invalid.
func (g *Graph) runOrder() []int {
	order := make([]int, 0, len(g.nodes))
	sealed := &Graph{nodes: g.nodes}
	if sealed.seal() != nil {
		for i := range g.nodes {
			order = append(order, i)
		}
		return order
	}
	var s schedule
	s.init(sealed, RunOptions{Workers: 1})
	for k, ok := s.next(); ok; k, ok = s.next() {
		order = append(order, int(k))
		s.finish(k, nil)
	}
	return order
}

// Mermaid prints the graph as a Mermaid flowchart, one box per node.
func (g *Graph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, n := range g.nodes {
		fmt.Fprintf(&b, "  n%d[\"%s\"]\n", i, n.label())
	}
	g.eachEdge(func(from, to int) { fmt.Fprintf(&b, "  n%d --> n%d\n", from, to) })
	return b.String()
}

// DOT prints the graph in Graphviz DOT, one box per node.
func (g *Graph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph tasks {\n  labelloc=t;\n  rankdir=TB;\n")
	for i, n := range g.nodes {
		fmt.Fprintf(&b, "  %d [ label=\"%s\" shape=\"box\" ];\n", i, n.label())
	}
	g.eachEdge(func(from, to int) { fmt.Fprintf(&b, "  %d -> %d;\n", from, to) })
	b.WriteString("}\n")
	return b.String()
}

func (g *Graph) eachEdge(fn func(from, to int)) {
	for i, n := range g.nodes {
		for _, to := range sortedInts(n.out) {
			fn(i, to)
		}
	}
}

func sortedInts(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func joinInts(s []int, sep string) string {
	parts := make([]string, len(s))
	for i, v := range s {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, sep)
}
