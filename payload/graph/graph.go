package graph

import "fmt"

// Graph is a directed acyclic graph of tasks: nodes of tasks run in order, each node
// after the nodes it depends on. Build makes one, String, Mermaid and DOT print it as a
// dry-run plan, Run runs it. A Graph is immutable once built, so several Run calls may
// share it; the zero value is an empty graph.
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

// taskNode is a node of a Graph: tasks run one after the other, after every node in in
// has succeeded. A node may have no tasks: it then only joins edges.
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

// newGraph returns a graph with one node that runs tasks in order.
func newGraph(tasks []*Task) *Graph {
	return &Graph{nodes: []*taskNode{{tasks: tasks, runLevel: -1}}}
}

// label is the node's short description: "07-a, 2 tasks".
func (n *taskNode) label() string {
	count := tasksCount(len(n.tasks))
	if n.component != "" {
		return fmt.Sprintf("%02d-%s, %s", n.runLevel, n.component, count)
	}
	return count
}

// tasksCount is "1 task", "2 tasks".
func tasksCount(n int) string {
	if n == 1 {
		return "1 task"
	}
	return fmt.Sprintf("%d tasks", n)
}

// name names node i in errors: its first task, or its index when it has none.
func (n *taskNode) name(i int) string {
	if len(n.tasks) > 0 {
		return n.tasks[0].String()
	}
	return fmt.Sprintf("node %d", i)
}
