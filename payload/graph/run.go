package graph

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
// Scheduling is a ready queue over the graph Build validated: the cost is a heap
// operation per group plus its edges, with a constant number of allocations per run.
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

// graphRun is the shared state of one Run call, guarded by mu.
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
