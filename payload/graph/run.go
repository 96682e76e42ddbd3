package graph

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

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
	nodes := "nodes"
	if e.Count == 1 {
		nodes = "node"
	}
	return fmt.Sprintf("graph: %d incomplete task %s, beginning with %s", e.Count, nodes, e.First)
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
		return fmt.Sprintf("graph: running %s called runtime.Goexit", e.Task)
	}
	return fmt.Sprintf("graph: running %s panicked: %v", e.Task, e.Value)
}

// errGoexit is the Value of a PanicError about runtime.Goexit.
var errGoexit = errors.New("runtime.Goexit")

// Priority decides which of several ready nodes runs first.
type Priority int

const (
	// LowestIndexFirst is the cluster-version operator's order: a dispatcher keeps up
	// to Workers nodes queued ahead of the workers, each time taking the ready node
	// that comes first in the input, and the workers start the queued nodes in the
	// order they were queued. A node that becomes ready while the queue is full
	// therefore starts after the nodes queued before it, even when it comes first in
	// the input: with one worker, y and z ready and x waiting on y, the order is
	// y, z, x. It is how the payload worker updates and reconciles.
	LowestIndexFirst Priority = iota
	// CriticalPathFirst starts the ready node with the most tasks left on its longest
	// path first (input order on ties), when a worker is free, which keeps the wall
	// time near the critical path when the pool is smaller than the graph is wide. It
	// is how the payload worker initializes.
	CriticalPathFirst
)

// Options configures Run.
type Options struct {
	// Workers is the number of goroutines; fewer than 1 means 1.
	Workers int
	// Priority orders ready nodes (default LowestIndexFirst).
	Priority Priority
}

// Run runs graph with exactly opts.Workers goroutines, calling fn with the tasks of
// every group once all the groups it depends on have succeeded. When fn fails, panics
// or calls runtime.Goexit (a *PanicError), the group's dependents never run while
// independent groups go on.
//
// Run returns the errors of the failed groups in input order. When ctx ended
// before the run was over and groups did not run, these are followed by an
// *IncompleteError ("N incomplete task nodes, beginning with …") and ctx's error, also
// when groups failed (in-flight tasks usually fail on a cancel). A run that is over,
// every group having run or waiting on a failed one, returns only the group errors, as
// in the cluster-version operator. A nil ctx, graph or fn is a single error wrapping
// converge.ErrInvalid and nothing runs. Run returns only after every goroutine it
// started has returned; in-flight groups are waited for, without spinning, after ctx
// ends.
//
// Scheduling is a ready queue over the graph Build validated: workers claim queued
// groups with one atomic operation each and take the lock only to queue more, to
// finish a group with dependents or a failure, and to wait; the cost is a heap
// operation per group with dependents plus its edges, with a constant number of
// allocations per run.
func Run(ctx context.Context, graph *Graph, opts Options, fn func(ctx context.Context, tasks []*Task) error) []error {
	if ctx == nil || graph == nil || fn == nil {
		return []error{input.Invalidf("graph", "Run arguments", "it needs a context, a graph and a function")}
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
	r.schedule.refill(0, 0, spareRoots)
	r.queue = r.schedule.queue[:n]
	r.claims.publish(len(r.schedule.queue))
	r.outstanding = len(graph.roots)
	r.cond.L = &r.mu

	workers := max(opts.Workers, 1)
	r.wg.Add(workers)
	for range workers {
		go r.work(ctx)
	}
	select {
	case <-ctx.Done():
		r.mu.Lock()
		r.stop()
		r.mu.Unlock()
	case <-r.finished:
	}
	r.wg.Wait()
	klog.FromContext(ctx).V(4).Info("Task graph finished", "nodes", n, "workers", workers)
	return r.result(ctx)
}

// spareRoots is how many roots beyond the dispatch window wait in the queue while
// only roots are ready, so that a run of independent nodes takes the lock once for
// as many.
const spareRoots = 256

// graphRun is the shared state of one Run call. Workers claim the nodes of queue
// through claims; the rest is guarded by mu.
type graphRun struct {
	graph *Graph
	fn    func(ctx context.Context, tasks []*Task) error
	wg    sync.WaitGroup

	// queue is the schedule's queue at its full length: its elements below the
	// tail of claims are written and never change.
	queue   []int32
	claims  claims
	stopped atomic.Bool // ctx ended: start nothing new; set under mu

	mu       sync.Mutex
	cond     sync.Cond
	schedule schedule
	// outstanding counts the nodes queued, ready or in flight, less those the
	// workers completed and have not counted yet: the run is done at 0.
	outstanding int
	idle        int
	done        bool // nothing ready, nothing in flight
	finished    chan struct{}
}

// worker is one of Run's goroutines. completed counts the nodes it completed
// without the lock (they succeeded and have no dependents), which it takes off
// outstanding the next time it holds the lock, before it can wait.
type worker struct {
	run       *graphRun
	completed int
}

// work runs ready nodes until the run is stopped or done.
func (r *graphRun) work(ctx context.Context) {
	defer r.wg.Done()
	w := worker{run: r}
	k, ok := w.claim(ctx)
	for ok {
		var err error
		if tasks := r.graph.nodes[k].tasks; len(tasks) > 0 {
			var exited bool
			if err, exited = w.runNode(ctx, k, tasks); exited {
				return
			}
		}
		k, ok = w.complete(ctx, k, err)
	}
}

// claim returns the node to start next: a queued one without the lock when there
// is one, else what claimLocked gives.
func (w *worker) claim(ctx context.Context) (int32, bool) {
	r := w.run
	if !r.stopped.Load() && ctx.Err() == nil {
		if p, ok := r.claims.claim(); ok {
			return r.queue[p], true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count(ctx, -w.take())
	return r.claimLocked(ctx)
}

// complete records the end of node k and claims the next node. A node that succeeded
// and has no dependents changes nothing but the count of outstanding nodes: no lock.
func (w *worker) complete(ctx context.Context, k int32, err error) (int32, bool) {
	r := w.run
	if err == nil && len(r.graph.nodes[k].out) == 0 {
		w.completed++
		return w.claim(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finish(ctx, k, err, w.take())
	return r.claimLocked(ctx)
}

// take returns the nodes the worker completed without the lock and forgets them.
func (w *worker) take() int {
	n := w.completed
	w.completed = 0
	return n
}

// claimLocked queues what the schedule gives and claims a node, waiting while none
// is ready and some are in flight; false once the run is stopped or done. The caller
// holds mu.
func (r *graphRun) claimLocked(ctx context.Context) (int32, bool) {
	for !r.stopped.Load() && !r.done {
		if ctx.Err() != nil {
			r.stop()
			break
		}
		if p, ok := r.claims.claim(); ok {
			return r.queue[p], true
		}
		r.refill(1)
		if p, ok := r.claims.claim(); ok {
			return r.queue[p], true
		}
		if r.schedule.ready.len() == 0 {
			r.idle++
			r.cond.Wait()
			r.idle--
		}
	}
	return 0, false
}

// finish records the end of node k and of completed other nodes, queues the nodes k
// made ready and wakes idle workers for them but one, which the caller claims; the
// caller holds mu.
func (r *graphRun) finish(ctx context.Context, k int32, err error, completed int) {
	head, tail := r.claims.load()
	if tail > head+r.schedule.ahead {
		head = r.claims.limit(r.schedule.ahead)
	}
	r.schedule.settle(head)
	ready := r.schedule.finish(k, err)
	head = r.refill(0)
	if r.count(ctx, ready-1-completed) {
		return
	}
	startable := len(r.schedule.queue) - head + r.schedule.ready.len()
	for extra := min(startable-1, r.idle); extra > 0; extra-- {
		r.cond.Signal()
	}
}

// refill queues what the schedule gives for the claims so far, at least need nodes
// when it has them, publishes them and returns the head. The caller holds mu, so the
// tail changes only here.
func (r *graphRun) refill(need int) int {
	head, tail := r.claims.load()
	r.schedule.refill(head, need, spareRoots)
	if len(r.schedule.queue) == tail {
		return head
	}
	return r.claims.publish(len(r.schedule.queue))
}

// count adds delta to the outstanding nodes and ends the run when none is left,
// which it reports. The caller holds mu.
func (r *graphRun) count(ctx context.Context, delta int) bool {
	if delta == 0 {
		return false
	}
	r.outstanding += delta
	if r.outstanding > 0 {
		return false
	}
	r.end(ctx)
	return true
}

// stop ends the run early: nothing starts after it. The caller holds mu.
func (r *graphRun) stop() {
	r.stopped.Store(true)
	r.cond.Broadcast()
}

// end marks the run done once nothing is ready and nothing in flight, as the workers
// find it; a run whose ctx ended first is stopped instead. The caller holds mu.
func (r *graphRun) end(ctx context.Context) {
	if ctx.Err() != nil {
		r.stop()
		return
	}
	if !r.done {
		r.done = true
		close(r.finished)
		r.cond.Broadcast()
	}
}

// runNode calls fn with the node's tasks. A panic becomes a *PanicError. A call of
// runtime.Goexit cannot be stopped: the node is finished with a *PanicError, a new
// worker takes the place of this one, and exited is true while the goroutine ends.
func (w *worker) runNode(ctx context.Context, k int32, tasks []*Task) (err error, exited bool) {
	r := w.run
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
		r.finish(ctx, k, &PanicError{Task: tasks[0], Value: errGoexit, Stack: debug.Stack()}, w.take())
		r.wg.Add(1)
		go r.work(ctx)
		r.mu.Unlock()
	}()
	err = r.fn(ctx, tasks)
	returned = true
	return err, false
}

func (r *graphRun) result(ctx context.Context) []error {
	started, _ := r.claims.load()
	for _, k := range r.queue[:started] {
		r.schedule.remaining[k] = -1
	}
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
