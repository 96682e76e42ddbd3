package payload

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/internal/input"
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

// PanicError is the error of a task node whose function panicked or called
// runtime.Goexit (what t.FailNow does): the run goes on without that node.
type PanicError struct {
	// Task is the first task of the node.
	Task *Task
	// Value is what the function panicked with; errGoexit for runtime.Goexit.
	Value any
	// Stack is the stack of the panicking goroutine.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	if e.Value == errGoexit {
		return fmt.Sprintf("payload: applying %s called runtime.Goexit", e.Task)
	}
	return fmt.Sprintf("payload: applying %s panicked: %v", e.Task, e.Value)
}

// errGoexit is the Value of a PanicError about runtime.Goexit.
var errGoexit = errors.New("runtime.Goexit")

// Priority decides which of several ready nodes runs first.
type Priority int

const (
	// LowestIndexFirst is the cluster-version operator's order: a dispatcher keeps up
	// to Workers nodes queued ahead of the workers, each time taking the ready node
	// that comes first in the payload, and the workers start the queued nodes in the
	// order they were queued. A node that becomes ready while the queue is full
	// therefore starts after the nodes queued before it, even when it comes first in
	// the payload: with one worker, y and z ready and x waiting on y, the order is
	// y, z, x. It is how the Worker updates and reconciles.
	LowestIndexFirst Priority = iota
	// CriticalPathFirst starts the ready node with the most tasks left on its longest
	// path first (payload order on ties), when a worker is free, which keeps the wall
	// time near the critical path when the pool is smaller than the graph is wide. It
	// is how the Worker initializes.
	CriticalPathFirst
)

// RunOptions configures RunGraph.
type RunOptions struct {
	// Workers is the number of goroutines; fewer than 1 means 1.
	Workers int
	// Priority orders ready nodes (default LowestIndexFirst).
	Priority Priority
}

// RunGraph runs graph with exactly opts.Workers goroutines, calling fn with the tasks of
// every group once all the groups it depends on have succeeded. When fn fails, panics
// or calls runtime.Goexit (a *PanicError), the group's dependents never run while
// independent groups go on.
//
// RunGraph returns the errors of the failed groups in payload order. When ctx ended
// before the run was over and groups did not run, these are followed by an
// *IncompleteError ("N incomplete task nodes, beginning with …") and ctx's error, also
// when groups failed (in-flight tasks usually fail on a cancel). A run that is over,
// every group having run or waiting on a failed one, returns only the group errors, as
// in the cluster-version operator. A nil ctx, graph or fn is a single error wrapping
// ErrInvalid and nothing runs. RunGraph returns only after every goroutine it started
// has returned; in-flight groups are waited for, without spinning, after ctx ends.
//
// Scheduling is a ready queue over the graph BuildGraph validated: the cost is a heap
// operation per group plus its edges, with a constant number of allocations per run.
func RunGraph(ctx context.Context, graph *Graph, opts RunOptions, fn func(ctx context.Context, tasks []*Task) error) []error {
	if ctx == nil || graph == nil || fn == nil {
		return []error{input.Invalidf("payload", "RunGraph arguments", "it needs a context, a graph and a function")}
	}
	n := len(graph.nodes)
	if n == 0 {
		return nil
	}
	if graph.indegree == nil {
		// A graph assembled by hand (in this package's tests) is checked on every run.
		sealed := &Graph{nodes: graph.nodes}
		if err := sealed.seal(); err != nil {
			return []error{err}
		}
		graph = sealed
	}
	r := &graphRun{graph: graph, fn: fn, finished: make(chan struct{})}
	r.schedule.init(graph, opts)
	r.cond.L = &r.mu

	workers := max(opts.Workers, 1)
	r.wg.Add(workers)
	for range workers {
		go r.work(ctx)
	}
	select {
	case <-ctx.Done():
		r.mu.Lock()
		r.stopped = true
		r.cond.Broadcast()
		r.mu.Unlock()
	case <-r.finished:
	}
	r.wg.Wait()
	klog.FromContext(ctx).V(4).Info("Task graph finished", "nodes", n, "workers", workers)
	return r.result(ctx)
}

// criticalPathKeys gives every node a heap key that sorts by the number of tasks on
// its longest path to a leaf, descending, then by index; order is topological.
func criticalPathKeys(g *Graph, order []int32) []int64 {
	key := make([]int64, len(g.nodes))
	for k := len(order) - 1; k >= 0; k-- {
		i := order[k]
		longest := int64(0)
		for _, o := range g.nodes[i].out {
			longest = max(longest, key[o])
		}
		key[i] = longest + int64(len(g.nodes[i].tasks))
	}
	for i := range key {
		key[i] = -key[i]<<32 | int64(i)
	}
	return key
}

// nodeError is the error of the node at index node.
type nodeError struct {
	node int32
	err  error
}

// schedule is RunGraph's order, without goroutines: which node a free worker starts
// next (next), and what a finished node makes ready (finish). RunGraph calls it under
// its lock; the schedule benchmarks drive it in simulated time.
type schedule struct {
	graph *Graph
	// remaining counts the unfinished predecessors of a node; -1 once the node started.
	remaining []int32
	ready     readyHeap
	// queue holds, for LowestIndexFirst, the nodes dispatched ahead of the workers, in
	// order: queue[head:] wait, at most ahead of them.
	queue []int32
	head  int
	ahead int
	errs  []nodeError
}

// init prepares a run of the sealed graph g.
func (s *schedule) init(g *Graph, opts RunOptions) {
	n := len(g.nodes)
	s.graph = g
	s.remaining = slices.Clone(g.indegree)
	s.ready = readyHeap{ids: make([]int32, 0, n), roots: g.roots}
	if opts.Priority == CriticalPathFirst {
		s.ready.key, s.ready.roots = g.critical, g.criticalRoots
		return
	}
	s.ahead = max(opts.Workers, 1)
	s.queue = make([]int32, 0, n)
	s.dispatch()
}

// dispatch queues ready nodes, lowest index first, until ahead of them wait.
func (s *schedule) dispatch() {
	for len(s.queue)-s.head < s.ahead && s.ready.len() > 0 {
		s.queue = append(s.queue, s.ready.pop())
	}
}

// next returns the node a free worker starts now; false when none is ready.
func (s *schedule) next() (int32, bool) {
	var k int32
	switch {
	case s.ahead > 0 && s.head < len(s.queue):
		k = s.queue[s.head]
		s.head++
		s.dispatch()
	case s.ahead == 0 && s.ready.len() > 0:
		k = s.ready.pop()
	default:
		return 0, false
	}
	s.remaining[k] = -1
	return k, true
}

// startable counts the nodes next can return now.
func (s *schedule) startable() int {
	if s.ahead > 0 {
		return len(s.queue) - s.head
	}
	return s.ready.len()
}

// finish records the end of node k: a failure, or dependents that may now be ready.
func (s *schedule) finish(k int32, err error) {
	if err != nil {
		s.errs = append(s.errs, nodeError{node: k, err: err})
		return
	}
	for _, o := range s.graph.nodes[k].out {
		if s.remaining[o]--; s.remaining[o] == 0 {
			s.ready.push(int32(o))
		}
	}
	if s.ahead > 0 {
		s.dispatch()
	}
}

// graphRun is the shared state of one RunGraph call, guarded by mu.
type graphRun struct {
	graph *Graph
	fn    func(ctx context.Context, tasks []*Task) error
	wg    sync.WaitGroup

	mu       sync.Mutex
	cond     sync.Cond
	schedule schedule
	inflight int
	idle     int
	stopped  bool // ctx ended: start nothing new
	done     bool // nothing ready, nothing in flight
	finished chan struct{}
}

// work runs ready nodes until the run is stopped or done.
func (r *graphRun) work(ctx context.Context) {
	defer r.wg.Done()
	r.mu.Lock()
	for !r.stopped && !r.done {
		if ctx.Err() != nil {
			r.stopped = true
			r.cond.Broadcast()
			break
		}
		k, ok := r.schedule.next()
		if !ok {
			if r.inflight == 0 {
				r.done = true
				close(r.finished)
				r.cond.Broadcast()
				break
			}
			r.idle++
			r.cond.Wait()
			r.idle--
			continue
		}
		var err error
		if tasks := r.graph.nodes[k].tasks; len(tasks) > 0 {
			r.inflight++
			r.mu.Unlock()
			var exited bool
			err, exited = r.runNode(ctx, k, tasks)
			if exited {
				return
			}
			r.mu.Lock()
			r.inflight--
		}
		r.finish(k, err)
	}
	r.mu.Unlock()
}

// finish records the end of node k and wakes idle workers for the nodes it made
// ready; the caller holds mu and takes one ready node itself.
func (r *graphRun) finish(k int32, err error) {
	r.schedule.finish(k, err)
	for extra := min(r.schedule.startable()-1, r.idle); extra > 0; extra-- {
		r.cond.Signal()
	}
}

// runNode calls fn with the node's tasks. A panic becomes a *PanicError. A call of
// runtime.Goexit cannot be stopped: the node is finished with a *PanicError, a new
// worker takes the place of this one, and exited is true while the goroutine ends.
func (r *graphRun) runNode(ctx context.Context, k int32, tasks []*Task) (err error, exited bool) {
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			err = &PanicError{Task: tasks[0], Value: p, Stack: debug.Stack()}
			return
		}
		r.mu.Lock()
		r.inflight--
		r.finish(k, &PanicError{Task: tasks[0], Value: errGoexit, Stack: debug.Stack()})
		r.wg.Add(1)
		go r.work(ctx)
		r.mu.Unlock()
	}()
	err = r.fn(ctx, tasks)
	returned = true
	return err, false
}

func (r *graphRun) result(ctx context.Context) []error {
	var errs []error
	if nodeErrs := r.schedule.errs; len(nodeErrs) > 0 {
		slices.SortFunc(nodeErrs, func(a, b nodeError) int { return int(a.node - b.node) })
		errs = make([]error, len(nodeErrs))
		for i, e := range nodeErrs {
			errs[i] = e.err
		}
		if r.done {
			return errs // nodes left are dependents of failures, as the errors say
		}
	}
	incomplete := &IncompleteError{}
	for i, left := range r.schedule.remaining {
		if left < 0 {
			continue
		}
		incomplete.Count++
		if tasks := r.graph.nodes[i].tasks; incomplete.First == nil && len(tasks) > 0 {
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

// readyHeap is a min-heap of node indexes, ordered by key when key is set, in front of
// which the roots wait in order: a graph of independent nodes pops in constant time.
type readyHeap struct {
	ids   []int32
	key   []int64
	roots []int32 // sorted by less; roots[next:] are ready
	next  int
}

func (h *readyHeap) len() int { return len(h.ids) + len(h.roots) - h.next }

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
	if h.next < len(h.roots) && (len(h.ids) == 0 || h.less(h.roots[h.next], h.ids[0])) {
		h.next++
		return h.roots[h.next-1]
	}
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
