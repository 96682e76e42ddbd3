package graph

import "slices"

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

// schedule is Run's order, without goroutines: which node a free worker starts
// next (next), and what a finished node makes ready (finish). Run calls it under
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
func (s *schedule) init(g *Graph, opts Options) {
	n := len(g.nodes)
	s.graph = g
	s.remaining = slices.Clone(g.indegree)
	s.ready = readyHeap{size: n, roots: g.roots}
	s.queue = make([]int32, 0, n)
	if opts.Priority == CriticalPathFirst {
		s.ready.key, s.ready.roots = g.critical, g.criticalRoots
		return
	}
	s.ahead = max(opts.Workers, 1)
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

// finish records the end of node k: a failure, or dependents that may now be ready,
// whose number it returns.
func (s *schedule) finish(k int32, err error) int {
	if err != nil {
		s.errs = append(s.errs, nodeError{node: k, err: err})
		return 0
	}
	ready := 0
	for _, o := range s.graph.nodes[k].out {
		if s.remaining[o]--; s.remaining[o] == 0 {
			s.ready.push(int32(o))
			ready++
		}
	}
	if s.ahead > 0 {
		s.dispatch()
	}
	return ready
}

// Run's workers take queued nodes without the lock: queue[:head] are claimed, and
// the queue may run past the dispatch window. Nodes queued while only roots are
// ready start in the order they would start if queued one by one at their claims,
// as long as no node becomes ready meanwhile; before one does, settle gives back
// those beyond the window, so the order stays next's, exactly.

// refill dispatches what the claims of queue[:head] owe, queues nodes until need
// wait whatever the priority, then up to spare more while only roots are ready.
func (s *schedule) refill(head, need, spare int) {
	s.head = head
	s.dispatch()
	for len(s.queue)-head < need && s.ready.len() > 0 {
		s.queue = append(s.queue, s.ready.pop())
	}
	r := &s.ready
	for len(r.ids) == 0 && r.next < len(r.roots) && len(s.queue)-head < max(s.ahead, need)+spare {
		s.queue = append(s.queue, r.roots[r.next])
		r.next++
	}
}

// settle prepares a node's finish once queue[:head] are claimed: the roots queued
// beyond the dispatch window go back in front of the ready heap (no claim beyond
// head can take them now), and the window is dispatched.
func (s *schedule) settle(head int) {
	if keep := head + s.ahead; len(s.queue) > keep {
		s.ready.next -= len(s.queue) - keep
		s.queue = s.queue[:keep]
	}
	s.head = head
	s.dispatch()
}

// readyHeap is a min-heap of node indexes, ordered by key when key is set, in front of
// which the roots wait in order: a graph of independent nodes pops in constant time,
// and allocates nothing for the heap.
type readyHeap struct {
	size  int // the number of nodes, what the heap holds at most
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
	if h.ids == nil {
		h.ids = make([]int32, 0, h.size)
	}
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
