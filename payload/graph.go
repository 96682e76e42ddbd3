package payload

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TaskNode is a node of a TaskGraph: tasks applied one after the other, after every node
// in In has succeeded. A node may have no tasks: it then only joins edges.
type TaskNode struct {
	// In are the indexes of the nodes that must succeed before this one starts.
	In []int
	// Tasks run in order.
	Tasks []*Task
	// Out are the indexes of the nodes that wait for this one.
	Out []int
	// RunLevel is the run level of the node's first task, -1 when it has none.
	RunLevel int
	// Component is the component of the node's first task, "" when it has none.
	Component string
}

// label is the node's short description: "07-a, 2 manifests".
func (n *TaskNode) label() string {
	if n.Component != "" {
		return fmt.Sprintf("%02d-%s, %d manifests", n.RunLevel, n.Component, len(n.Tasks))
	}
	return fmt.Sprintf("%d manifests", len(n.Tasks))
}

// TaskGraph is a directed acyclic graph of TaskNodes, built from a payload's tasks by
// NewTaskGraph, Split, Parallelize and AddDependencies (or all at once by BuildGraph),
// printed as a dry-run plan by String, Mermaid and DOT, and run by RunGraph. The zero
// value is an empty graph. A graph is not safe for concurrent modification.
type TaskGraph struct {
	// Nodes are the graph's nodes; edges refer to them by index.
	Nodes []*TaskNode
}

// NewTaskGraph returns a graph with one node that runs tasks in order.
func NewTaskGraph(tasks []*Task) *TaskGraph {
	return &TaskGraph{Nodes: []*TaskNode{{Tasks: tasks, RunLevel: -1}}}
}

// BuildGraph builds the graph of tasks: split around Jobs, parallelized by breakFn (nil
// keeps every run of tasks serial), with the tasks' explicit dependencies added. A task
// without a manifest, a cycle or an unknown dependency is an error wrapping ErrInvalid
// (*CycleError, *UnknownDependencyError).
func BuildGraph(tasks []*Task, breakFn BreakFunc) (*TaskGraph, error) {
	g := NewTaskGraph(tasks)
	if err := g.Split(SplitOnJobs); err != nil {
		return nil, err
	}
	if breakFn != nil {
		if err := g.Parallelize(breakFn); err != nil {
			return nil, err
		}
	}
	if err := g.AddDependencies(); err != nil {
		return nil, err
	}
	return g, nil
}

// checkShape is what Split and Parallelize need before they change a graph: Validate
// holds and every task has a manifest.
func (g *TaskGraph) checkShape() error {
	if err := g.Validate(); err != nil {
		return err
	}
	for i, n := range g.Nodes {
		for p, t := range n.Tasks {
			if t == nil || t.Manifest == nil {
				return fmt.Errorf("payload: graph node %d: task %d has no manifest: %w", i, p, ErrInvalid)
			}
		}
	}
	return nil
}

var jobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// SplitOnJobs is true for batch/v1 Jobs: a Job is a barrier, nothing before it runs after
// it or in parallel with it.
func SplitOnJobs(t *Task) bool {
	return t != nil && t.Manifest != nil && t.Manifest.GVK == jobGVK
}

// Split breaks every node at the first task onFn is true for: a node [a b J c d] becomes
// [a b] -> [J] -> [c d], keeping the node's index for [J] and appending the others. The
// appended right-hand node is split again when it holds another such task. A nil onFn,
// a graph that fails Validate or a task without a manifest is an error wrapping
// ErrInvalid, and the graph is left as it was.
func (g *TaskGraph) Split(onFn func(*Task) bool) error {
	if onFn == nil {
		return fmt.Errorf("payload: Split needs a function: %w", ErrInvalid)
	}
	if err := g.checkShape(); err != nil {
		return err
	}
	for i := 0; i < len(g.Nodes); i++ {
		node := g.Nodes[i]
		if len(node.Tasks) <= 1 {
			continue
		}
		j := slices.IndexFunc(node.Tasks, onFn)
		if j < 0 {
			continue
		}
		tasks := node.Tasks
		if j > 0 {
			left := len(g.Nodes)
			g.Nodes = append(g.Nodes, &TaskNode{In: node.In, Tasks: tasks[:j:j], Out: []int{i}, RunLevel: -1})
			for _, from := range node.In {
				replaceAll(g.Nodes[from].Out, i, left)
			}
			node.In = []int{left}
		}
		if j < len(tasks)-1 {
			right := len(g.Nodes)
			g.Nodes = append(g.Nodes, &TaskNode{In: []int{i}, Tasks: tasks[j+1:], Out: node.Out, RunLevel: -1})
			for _, to := range node.Out {
				replaceAll(g.Nodes[to].In, i, right)
			}
			node.Out = []int{right}
		}
		node.Tasks = tasks[j : j+1 : j+1]
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

// Parallelize replaces every node whose tasks breakFn breaks into more than one node by
// a chain of steps: the node (now task-less) fans out to the first step's nodes, which
// join into the next step's nodes, and so on; a task-less spacer joins two steps of
// several nodes each, and a task-less anchor joins the last step to the node's old
// successors. A breakFn result of no steps, or of one step of one node, leaves the node
// as it is. Nodes added by Parallelize are not broken again. A nil breakFn, a graph that
// fails Validate, a task without a manifest or a nil node in breakFn's result is an
// error wrapping ErrInvalid, and the graph is left as it was.
func (g *TaskGraph) Parallelize(breakFn BreakFunc) error {
	if breakFn == nil {
		return fmt.Errorf("payload: Parallelize needs a BreakFunc: %w", ErrInvalid)
	}
	if err := g.checkShape(); err != nil {
		return err
	}
	broken := make([][][]*TaskNode, len(g.Nodes))
	for i, node := range g.Nodes {
		broken[i] = breakFn(node.Tasks)
		for s, step := range broken[i] {
			if slices.Contains(step, nil) {
				return fmt.Errorf("payload: Parallelize: the BreakFunc returned a nil node in step %d of node %d: %w", s, i, ErrInvalid)
			}
		}
	}
	for i, steps := range broken {
		node := g.Nodes[i]
		if len(steps) == 0 || (len(steps) == 1 && len(steps[0]) == 1) {
			if len(node.Tasks) > 0 {
				*node = *newNodeLike(node, runKeyOf(node.Tasks[0]))
			}
			continue
		}
		node.Tasks = nil
		out := node.Out
		node.Out = nil

		in := []int{i}
		for _, step := range steps {
			if len(step) == 0 {
				continue
			}
			if len(in) > 1 && len(step) > 1 {
				in = g.bulkAdd([]*TaskNode{{RunLevel: -1}}, in)
			}
			in = g.bulkAdd(step, in)
		}
		if len(out) == 0 {
			continue
		}
		anchor := len(g.Nodes)
		g.Nodes = append(g.Nodes, &TaskNode{Out: out, RunLevel: -1})
		for _, to := range out {
			replaceAll(g.Nodes[to].In, i, anchor)
		}
		for _, from := range in {
			g.Nodes[from].Out = []int{anchor}
			g.Nodes[anchor].In = append(g.Nodes[anchor].In, from)
		}
	}
	return nil
}

// bulkAdd appends nodes, each depending on every node of in, and returns their indexes.
func (g *TaskGraph) bulkAdd(nodes []*TaskNode, in []int) []int {
	from := len(g.Nodes)
	g.Nodes = append(g.Nodes, nodes...)
	added := make([]int, len(nodes))
	for k := range nodes {
		added[k] = from + k
		g.Nodes[from+k].In = slices.Clone(in)
	}
	for _, k := range in {
		g.Nodes[k].Out = append(g.Nodes[k].Out, added...) // new nodes: no duplicates possible
	}
	return added
}

// Roots returns the indexes of the nodes without predecessors, in ascending order.
func (g *TaskGraph) Roots() []int {
	var roots []int
	for i, n := range g.Nodes {
		if len(n.In) == 0 {
			roots = append(roots, i)
		}
	}
	return roots
}

// CycleError reports a graph whose edges, or whose explicit dependencies together with
// the order of tasks within a node, form a cycle.
type CycleError struct {
	// Nodes are the indexes of the nodes on the cycle, ascending.
	Nodes []int
	// Tasks names the tasks involved when the cycle comes from explicit dependencies.
	Tasks []string
}

// Error implements error.
func (e *CycleError) Error() string {
	if len(e.Tasks) > 0 {
		return fmt.Sprintf("payload: dependency cycle through nodes %v: %s", e.Nodes, strings.Join(e.Tasks, " -> "))
	}
	return fmt.Sprintf("payload: dependency cycle through nodes %v", e.Nodes)
}

// Is reports ErrInvalid.
func (e *CycleError) Is(target error) bool { return target == ErrInvalid }

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

// Is reports ErrInvalid.
func (e *UnknownDependencyError) Is(target error) bool { return target == ErrInvalid }

type taskPos struct{ node, pos int }

// AddDependencies adds an edge for every explicit dependency (Manifest.DependsOn) that
// the graph does not already honour. A dependency on a later task of the same node, or
// one that closes a cycle, is a *CycleError; a dependency on a reference no task has is
// an *UnknownDependencyError. The graph is also checked by Validate.
func (g *TaskGraph) AddDependencies() error {
	if err := g.Validate(); err != nil {
		return err
	}
	if !g.hasDependencies() {
		return nil
	}
	positions := map[string][]taskPos{}
	for i, n := range g.Nodes {
		for p, t := range n.Tasks {
			if t != nil && t.Manifest != nil {
				ref := t.Manifest.Ref()
				positions[ref] = append(positions[ref], taskPos{i, p})
			}
		}
	}
	for i, n := range g.Nodes {
		for p, t := range n.Tasks {
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
							return &CycleError{Nodes: []int{i}, Tasks: []string{t.String(), g.Nodes[i].Tasks[at.pos].String()}}
						}
						continue
					}
					if g.reaches(at.node, i) {
						continue
					}
					if g.reaches(i, at.node) {
						return &CycleError{Nodes: sortedPair(i, at.node), Tasks: []string{t.String(), g.Nodes[at.node].Tasks[at.pos].String()}}
					}
					g.Nodes[at.node].Out = append(g.Nodes[at.node].Out, i)
					n.In = append(n.In, at.node)
				}
			}
		}
	}
	return nil
}

func (g *TaskGraph) hasDependencies() bool {
	for _, n := range g.Nodes {
		for _, t := range n.Tasks {
			if t != nil && t.Manifest != nil && len(t.Manifest.DependsOn) > 0 {
				return true
			}
		}
	}
	return false
}

func sortedPair(a, b int) []int {
	return []int{min(a, b), max(a, b)}
}

// reaches reports whether to can be reached from from along Out edges.
func (g *TaskGraph) reaches(from, to int) bool {
	seen := make([]bool, len(g.Nodes))
	stack := []int{from}
	seen[from] = true
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if k == to {
			return true
		}
		for _, o := range g.Nodes[k].Out {
			if !seen[o] {
				seen[o] = true
				stack = append(stack, o)
			}
		}
	}
	return false
}

// Validate checks that the graph has no nil node, that every edge points at a node, that
// In and Out describe the same edges and that there is no cycle. Errors wrap ErrInvalid.
func (g *TaskGraph) Validate() error {
	if g == nil {
		return fmt.Errorf("payload: nil graph: %w", ErrInvalid)
	}
	indegree := make([]int32, len(g.Nodes))
	return validate(g, indegree, make([]int32, 0, len(g.Nodes)), nil)
}

// validate does Validate's work in caller-provided scratch space: on success indegree
// holds each node's number of predecessors and, when order is not nil, *order is
// appended a topological order of the nodes.
func validate(g *TaskGraph, indegree, queue []int32, order *[]int32) error {
	n := len(g.Nodes)
	edges := 0
	for i, node := range g.Nodes {
		if node == nil {
			return fmt.Errorf("payload: graph node %d is nil: %w", i, ErrInvalid)
		}
		for _, o := range node.Out {
			if o < 0 || o >= n {
				return fmt.Errorf("payload: graph node %d has an edge to missing node %d: %w", i, o, ErrInvalid)
			}
			indegree[o]++
		}
		edges += len(node.Out)
	}
	for i, node := range g.Nodes {
		for _, from := range node.In {
			if from < 0 || from >= n {
				return fmt.Errorf("payload: graph node %d has an edge from missing node %d: %w", i, from, ErrInvalid)
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
		for _, o := range g.Nodes[k].Out {
			if remaining[o]--; remaining[o] == 0 {
				queue = append(queue, int32(o))
			}
		}
	}
	if visited == n {
		return nil
	}
	var cyclic []int
	for i, r := range remaining {
		if r > 0 {
			cyclic = append(cyclic, i)
		}
	}
	return &CycleError{Nodes: cyclic}
}

// matchEdges checks that the In of every node holds exactly the nodes whose Out point at
// it, as many times as they do; indegree counts those Out edges, edges is their total.
// It groups the Out edges by target (ascending sources) and compares each group with
// In by counting: O(nodes + edges), one allocation.
func matchEdges(g *TaskGraph, indegree []int32, edges int) error {
	n := len(g.Nodes)
	buf := make([]int32, 2*n+edges)
	start, count, sources := buf[:n], buf[n:2*n], buf[2*n:]
	var sum int32
	for i, d := range indegree {
		sum += d
		start[i] = sum
	}
	for i := n - 1; i >= 0; i-- {
		for _, o := range g.Nodes[i].Out {
			start[o]--
			sources[start[o]] = int32(i)
		}
	}
	for i, node := range g.Nodes {
		want := sources[start[i] : start[i]+indegree[i]]
		ok := len(node.In) == len(want)
		if ok {
			for _, from := range want {
				count[from]++
			}
			for _, from := range node.In {
				if count[from] == 0 {
					ok = false
					break
				}
				count[from]--
			}
		}
		if !ok {
			return fmt.Errorf("payload: graph node %d: In %v does not match the nodes whose Out point at it %v: %w", i, node.In, want, ErrInvalid)
		}
	}
	return nil
}

// String prints the graph as a text plan, nodes in the order a single worker would run
// them: one line per node with its run level, component and predecessors, then one
// indented line per task. An invalid graph prints its nodes in index order.
func (g *TaskGraph) String() string {
	var b strings.Builder
	for _, i := range g.runOrder() {
		n := g.Nodes[i]
		fmt.Fprintf(&b, "node %d: %s", i, n.label())
		if len(n.In) > 0 {
			fmt.Fprintf(&b, ", after %s", joinInts(sortedInts(n.In), ", "))
		}
		b.WriteByte('\n')
		for _, t := range n.Tasks {
			fmt.Fprintf(&b, "  %s %s\n", t.file(), t)
		}
	}
	return b.String()
}

// runOrder returns the node indexes in the order RunGraph with one worker starts them,
// or in index order when the graph is invalid.
func (g *TaskGraph) runOrder() []int {
	order := make([]int, 0, len(g.Nodes))
	remaining := make([]int32, len(g.Nodes))
	if validate(g, remaining, make([]int32, 0, len(g.Nodes)), nil) != nil {
		for i := range g.Nodes {
			order = append(order, i)
		}
		return order
	}
	ready := readyHeap{ids: make([]int32, 0, len(g.Nodes))}
	for i, r := range remaining {
		if r == 0 {
			ready.push(int32(i))
		}
	}
	for ready.len() > 0 {
		k := ready.pop()
		order = append(order, int(k))
		for _, o := range g.Nodes[k].Out {
			if remaining[o]--; remaining[o] == 0 {
				ready.push(int32(o))
			}
		}
	}
	return order
}

// Mermaid prints the graph as a Mermaid flowchart, one box per node.
func (g *TaskGraph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, n := range g.Nodes {
		fmt.Fprintf(&b, "  n%d[\"%s\"]\n", i, n.label())
	}
	g.eachEdge(func(from, to int) { fmt.Fprintf(&b, "  n%d --> n%d\n", from, to) })
	return b.String()
}

// DOT prints the graph in Graphviz DOT, one box per node.
func (g *TaskGraph) DOT() string {
	var b strings.Builder
	b.WriteString("digraph tasks {\n  labelloc=t;\n  rankdir=TB;\n")
	for i, n := range g.Nodes {
		fmt.Fprintf(&b, "  %d [ label=\"%s\" shape=\"box\" ];\n", i, n.label())
	}
	g.eachEdge(func(from, to int) { fmt.Fprintf(&b, "  %d -> %d;\n", from, to) })
	b.WriteString("}\n")
	return b.String()
}

func (g *TaskGraph) eachEdge(fn func(from, to int)) {
	for i, n := range g.Nodes {
		for _, to := range sortedInts(n.Out) {
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
