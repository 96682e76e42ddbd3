package graph

import "math/rand/v2"

// breakFunc breaks a serial run of tasks into steps: the steps run one after the other,
// the nodes of a step run in parallel, the tasks of a node in order. An empty result
// means the tasks cannot be broken up.
type breakFunc func(tasks []*Task) [][]*taskNode

// runKey is the run level and component of a task; ok is false when it has none.
type runKey struct {
	level     int
	component string
	ok        bool
}

func runKeyOf(t *Task) runKey {
	p := t.place()
	if p.Component == "" {
		return runKey{}
	}
	return runKey{level: p.RunLevel, component: p.Component, ok: true}
}

func newNode(tasks []*Task, key runKey) *taskNode {
	if !key.ok {
		return &taskNode{tasks: tasks, runLevel: -1}
	}
	return &taskNode{tasks: tasks, runLevel: key.level, component: key.component}
}

// newNodeLike returns a copy of n labelled with key's run level and component.
func newNodeLike(n *taskNode, key runKey) *taskNode {
	labelled := newNode(n.tasks, key)
	labelled.in, labelled.out = n.in, n.out
	return labelled
}

// byNumberAndComponent makes one step per run level, with one node per component of the
// level (tasks of a component in input order, components in order of first appearance),
// so that the components of a level run in parallel and levels run in order. A task
// whose file name has no run level is a step of its own. Consecutive steps of a single
// node are merged into one node. Fewer than two tasks cannot be broken up.
func byNumberAndComponent(tasks []*Task) [][]*taskNode {
	if len(tasks) <= 1 {
		return nil
	}
	var steps [][]*taskNode
	for i := 0; i < len(tasks); {
		key := runKeyOf(tasks[i])
		if !key.ok {
			steps = appendStep(steps, []*taskNode{newNode(tasks[i:i+1:i+1], key)})
			i++
			continue
		}
		var step []*taskNode
		j := i
		for ; j < len(tasks); j++ {
			next := runKeyOf(tasks[j])
			if !next.ok || next.level != key.level {
				break
			}
			step = addToComponent(step, tasks[j], next)
		}
		steps = appendStep(steps, step)
		i = j
	}
	return steps
}

// addToComponent appends t to the node of its component in step, or to a new node.
func addToComponent(step []*taskNode, t *Task, key runKey) []*taskNode {
	for _, n := range step {
		if n.component == key.component {
			n.tasks = append(n.tasks, t)
			return step
		}
	}
	return append(step, newNode([]*Task{t}, key))
}

// appendStep appends step to steps, merging it into the previous step when both are a
// single node.
func appendStep(steps [][]*taskNode, step []*taskNode) [][]*taskNode {
	if len(step) == 1 && len(steps) > 0 && len(steps[len(steps)-1]) == 1 {
		last := steps[len(steps)-1][0]
		last.tasks = append(last.tasks[:len(last.tasks):len(last.tasks)], step[0].tasks...)
		return steps
	}
	return append(steps, step)
}

// flattenByNumberAndComponent makes a single step in which every contiguous run of tasks
// of the same run level and component is a node, and every task without a run level is
// a node of its own: everything runs in parallel, files of one component in order. Fewer
// than two tasks cannot be broken up.
func flattenByNumberAndComponent(tasks []*Task) [][]*taskNode {
	if len(tasks) <= 1 {
		return nil
	}
	var step []*taskNode
	for i := 0; i < len(tasks); {
		key := runKeyOf(tasks[i])
		j := i + 1
		for key.ok && j < len(tasks) && runKeyOf(tasks[j]) == key {
			j++
		}
		step = append(step, newNode(tasks[i:j:j], key))
		i = j
	}
	return [][]*taskNode{step}
}

// shiftOrder rotates the nodes of every step of breakFn's result left by step positions
// when the step has fewer nodes than stride, and by step*len/stride positions otherwise,
// so that successive attempts (step = 0, 1, … stride-1) start at different nodes. Empty
// steps are left alone; a stride below 1 counts as 1.
func shiftOrder(breakFn breakFunc, step, stride int) breakFunc {
	stride = max(stride, 1)
	return func(tasks []*Task) [][]*taskNode {
		steps := breakFn(tasks)
		for i, nodes := range steps {
			n := len(nodes)
			if n == 0 {
				continue
			}
			shift := step
			if n >= stride {
				shift = int(int64(step) * int64(n) / int64(stride))
			}
			shift = ((shift % n) + n) % n
			rotated := make([]*taskNode, 0, n)
			rotated = append(rotated, nodes[shift:]...)
			steps[i] = append(rotated, nodes[:shift]...)
		}
		return steps
	}
}

// permuteOrder shuffles the nodes of every step of breakFn's result with r, so that a
// seeded r gives the same order every time. A nil r leaves the order alone.
func permuteOrder(breakFn breakFunc, r *rand.Rand) breakFunc {
	return func(tasks []*Task) [][]*taskNode {
		steps := breakFn(tasks)
		if r == nil {
			return steps
		}
		for _, nodes := range steps {
			r.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		}
		return steps
	}
}
