package payload

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"k8s.io/klog/v2"
)

// IncompleteError reports task nodes that never ran because the run was cancelled.
type IncompleteError struct {
	// Count is the number of nodes that did not run, with or without tasks.
	Count int
	// First is the first task of the lowest-indexed node with tasks that did not run.
	First *Task
}

// Error implements error.
func (e *IncompleteError) Error() string {
	return fmt.Sprintf("payload: %d incomplete task nodes, beginning with %s", e.Count, e.First)
}

// PanicError is the error of a task node whose function panicked.
type PanicError struct {
	// Node is the index of the node.
	Node int
	// Value is what the function panicked with.
	Value any
	// Stack is the stack of the panicking goroutine.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("payload: task node %d panicked: %v", e.Node, e.Value)
}

// Priority decides which of several ready nodes runs first.
type Priority int

const (
	// LowestIndexFirst runs the ready node with the lowest index first, as the
	// cluster-version operator does; ShiftOrder and PermuteOrder rely on it to vary the
	// order of nodes.
	LowestIndexFirst Priority = iota
	// CriticalPathFirst runs the ready node with the most tasks left on its longest path
	// first (lowest index on ties), which keeps the wall time near the critical path
	// when the pool is smaller than the graph is wide.
	CriticalPathFirst
)

// RunOptions configures RunGraphWith.
type RunOptions struct {
	// Workers is the number of goroutines; fewer than 1 means 1.
	Workers int
	// Priority orders ready nodes (default LowestIndexFirst).
	Priority Priority
}

// RunGraph runs the nodes of graph with exactly workers goroutines (fewer than 1 means
// 1), calling fn with the tasks of every node that has tasks once all the node's
// predecessors have succeeded; task-less nodes only join edges. When fn fails (or
// panics: the panic becomes a *PanicError), the node's dependents never run while
// independent nodes go on. When several nodes are ready the lowest index runs first.
//
// RunGraph returns the errors of the failed nodes in node order. When ctx ended before
// the run was over and nodes with tasks did not run, these are followed by an
// *IncompleteError ("N incomplete task nodes, beginning with …", counting every node
// that did not run) and ctx's error, also when nodes failed (in-flight tasks usually
// fail on a cancel). A run that is over, every node having run or waiting on a failed
// one, returns only the node errors, as in the cluster-version operator. An invalid
// graph (see TaskGraph.Validate) or a nil fn is a single error and nothing runs.
// RunGraph returns only after every goroutine it started has returned; in-flight nodes
// are waited for, without spinning, after ctx ends.
//
// Scheduling is a ready queue: the cost is O(nodes + edges) plus a heap operation per
// node, with a constant number of allocations per run.
func RunGraph(ctx context.Context, graph *TaskGraph, workers int, fn func(ctx context.Context, tasks []*Task) error) []error {
	return RunGraphWith(ctx, graph, RunOptions{Workers: workers}, fn)
}

// RunGraphWith is RunGraph with a choice of priority among ready nodes.
func RunGraphWith(ctx context.Context, graph *TaskGraph, opts RunOptions, fn func(ctx context.Context, tasks []*Task) error) []error {
	if graph == nil || fn == nil {
		return []error{fmt.Errorf("payload: RunGraph needs a graph and a function: %w", ErrInvalid)}
	}
	n := len(graph.Nodes)
	if n == 0 {
		return nil
	}
	r := &graphRun{
		graph:     graph,
		fn:        fn,
		remaining: make([]int32, n),
		errs:      make([]error, n),
		ran:       make([]bool, n),
		finished:  make(chan struct{}),
	}
	r.ready.ids = make([]int32, 0, n)
	order := make([]int32, 0, n)
	if err := validate(graph, r.remaining, r.ready.ids, &order); err != nil {
		return []error{err}
	}
	if opts.Priority == CriticalPathFirst {
		r.ready.key = criticalPathKeys(graph, order)
	}
	for i, k := range r.remaining {
		if k == 0 {
			r.ready.push(int32(i))
		}
	}
	r.cond.L = &r.mu

	workers := max(opts.Workers, 1)
	var wg sync.WaitGroup
	wg.Add(workers)
	for range workers {
		go r.work(ctx, &wg)
	}
	select {
	case <-ctx.Done():
		r.mu.Lock()
		r.stopped = true
		r.cond.Broadcast()
		r.mu.Unlock()
	case <-r.finished:
	}
	wg.Wait()
	klog.FromContext(ctx).V(4).Info("Task graph finished", "nodes", n, "workers", workers)
	return r.result(ctx)
}

// criticalPathKeys gives every node a heap key that sorts by the number of tasks on
// its longest path to a leaf, descending, then by index; order is topological.
func criticalPathKeys(g *TaskGraph, order []int32) []int64 {
	key := make([]int64, len(g.Nodes))
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		longest := int64(0)
		for _, o := range g.Nodes[i].Out {
			longest = max(longest, key[o])
		}
		key[i] = longest + int64(len(g.Nodes[i].Tasks))
	}
	for i := range key {
		key[i] = -key[i]<<32 | int64(i)
	}
	return key
}

// graphRun is the shared state of one RunGraph call, guarded by mu.
type graphRun struct {
	graph *TaskGraph
	fn    func(ctx context.Context, tasks []*Task) error

	mu        sync.Mutex
	cond      sync.Cond
	remaining []int32 // unfinished predecessors per node
	ready     readyHeap
	errs      []error
	ran       []bool
	inflight  int
	idle      int
	stopped   bool // ctx ended: start nothing new
	done      bool // nothing ready, nothing in flight
	finished  chan struct{}
}

func (r *graphRun) work(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !r.stopped && !r.done {
		if ctx.Err() != nil {
			r.stopped = true
			r.cond.Broadcast()
			return
		}
		if r.ready.len() == 0 {
			if r.inflight == 0 {
				r.done = true
				close(r.finished)
				r.cond.Broadcast()
				return
			}
			r.idle++
			r.cond.Wait()
			r.idle--
			continue
		}
		k := r.ready.pop()
		node := r.graph.Nodes[k]
		var err error
		if len(node.Tasks) > 0 {
			r.inflight++
			r.mu.Unlock()
			err = r.runNode(ctx, int(k), node.Tasks)
			r.mu.Lock()
			r.inflight--
		}
		r.ran[k] = true
		if err != nil {
			r.errs[k] = err
			continue
		}
		for _, o := range node.Out {
			if r.remaining[o]--; r.remaining[o] == 0 {
				r.ready.push(int32(o))
			}
		}
		// This worker takes one ready node itself; wake idle workers for the others.
		for extra := min(r.ready.len()-1, r.idle); extra > 0; extra-- {
			r.cond.Signal()
		}
	}
}

func (r *graphRun) runNode(ctx context.Context, k int, tasks []*Task) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Node: k, Value: p, Stack: debug.Stack()}
		}
	}()
	return r.fn(ctx, tasks)
}

func (r *graphRun) result(ctx context.Context) []error {
	var errs []error
	for _, err := range r.errs {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 && r.done {
		return errs // nodes left are dependents of failures, as the errors say
	}
	incomplete := &IncompleteError{}
	for i, ran := range r.ran {
		if ran {
			continue
		}
		incomplete.Count++
		if tasks := r.graph.Nodes[i].Tasks; incomplete.First == nil && len(tasks) > 0 {
			incomplete.First = tasks[0]
		}
	}
	if incomplete.First == nil {
		return errs
	}
	errs = append(errs, incomplete)
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// readyHeap is a min-heap of node indexes, ordered by key when key is set.
type readyHeap struct {
	ids []int32
	key []int64
}

func (h *readyHeap) len() int { return len(h.ids) }

func (h *readyHeap) less(a, b int32) bool {
	if h.key == nil {
		return a < b
	}
	return h.key[a] < h.key[b]
}

func (h *readyHeap) push(v int32) {
	h.ids = append(h.ids, v)
	s := h.ids
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(s[i], s[parent]) {
			break
		}
		s[parent], s[i] = s[i], s[parent]
		i = parent
	}
}

func (h *readyHeap) pop() int32 {
	s := h.ids
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && h.less(s[l], s[smallest]) {
			smallest = l
		}
		if r < len(s) && h.less(s[r], s[smallest]) {
			smallest = r
		}
		if smallest == i {
			break
		}
		s[i], s[smallest] = s[smallest], s[i]
		i = smallest
	}
	h.ids = s
	return top
}
