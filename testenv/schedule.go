package testenv

import (
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
)

// schedule decides which fault of a plan each request gets. Its decisions
// depend on the order of an identity's requests only, never on timing.
type schedule struct {
	plan FaultPlan

	mu   sync.Mutex
	seen map[selection]uint64 // requests selected so far
}

// selection is one fault's count of one identity's requests.
type selection struct {
	identity string
	fault    int
}

// strike is the fault a request gets: the fault itself and a number drawn
// for the fault's own choices (after how many events WatchClose ends a
// watch).
type strike struct {
	fault *Fault
	draw  uint64
}

func newSchedule(plan FaultPlan) *schedule {
	return &schedule{plan: plan, seen: map[selection]uint64{}}
}

// next returns the fault the identity's request gets, if any: every fault
// that selects the request counts it, and the first whose draw strikes
// wins.
func (s *schedule) next(identity string, r request) (strike, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var got strike
	struck := false
	for i := range s.plan.Faults {
		f := &s.plan.Faults[i]
		if !f.selects(r) {
			continue
		}
		key := selection{identity: identity, fault: i}
		k := s.seen[key]
		s.seen[key] = k + 1
		d := draw(s.plan.Seed, identity, i, k)
		if !struck && d%100 < uint64(f.Percent) {
			got, struck = strike{fault: f, draw: mix(d)}, true
		}
	}
	return got, struck
}

// readsStale reports whether r reads a resource a StaleView fault of the
// plan may serve a get or list of stale, from the log the proxy then keeps
// of the resource.
func (s *schedule) readsStale(r request) bool {
	if !slices.Contains(readVerbs, r.verb) {
		return false
	}
	for i := range s.plan.Faults {
		f := &s.plan.Faults[i]
		reads := len(f.Verbs) == 0 || slices.Contains(f.Verbs, "get") || slices.Contains(f.Verbs, "list")
		if f.Class == StaleView && reads && f.selectsResource(r) {
			return true
		}
	}
	return false
}

// draw is the number the plan draws for the k-th request of identity that
// fault selects: a hash of the four, so that it depends on nothing else.
func draw(seed uint64, identity string, fault int, k uint64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %d %s %d %d", seed, len(identity), identity, fault, k)
	return mix(h.Sum64())
}

// mix is splitmix64's finalizer, which spreads every bit of x over the
// result.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
