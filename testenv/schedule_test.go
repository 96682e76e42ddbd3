package testenv

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// classes returns the class each request gets from s in turn, "-" for
// none.
func classes(s *schedule, identity string, reqs ...request) []string {
	var out []string
	for _, r := range reqs {
		got, ok := s.next(identity, r)
		if !ok {
			out = append(out, "-")
			continue
		}
		out = append(out, string(got.fault.Class))
	}
	return out
}

func repeat(r request, n int) []request {
	out := make([]request, n)
	for i := range out {
		out[i] = r
	}
	return out
}

var halfConflicts = FaultPlan{Seed: 42, Faults: []Fault{{Class: Conflict, Percent: 50}}}

// The same seed strikes the same requests of an identity, whatever other
// identities send in between; another seed or identity strikes others.
func TestScheduleReplaysBySeedAndIdentity(t *testing.T) {
	update, _ := parse(http.MethodPut, "/api/v1/namespaces/a/configmaps/b")
	first := classes(newSchedule(halfConflicts), "op-1", repeat(update, 32)...)

	interleaved := newSchedule(halfConflicts)
	var again []string
	for range 32 {
		classes(interleaved, "op-2", update)
		again = append(again, classes(interleaved, "op-1", update)...)
	}
	assert.Equal(t, first, again, "another identity's requests change nothing")

	other := halfConflicts
	other.Seed = 43
	assert.NotEqual(t, first, classes(newSchedule(other), "op-1", repeat(update, 32)...), "another seed")
	assert.NotEqual(t, first, classes(newSchedule(halfConflicts), "op-3", repeat(update, 32)...), "another identity")
}

// A request a fault does not select leaves its count alone: the k-th
// request it selects gets the k-th draw.
func TestScheduleCountsSelectedRequestsOnly(t *testing.T) {
	update, _ := parse(http.MethodPut, "/api/v1/namespaces/a/configmaps/b")
	get, _ := parse(http.MethodGet, "/api/v1/namespaces/a/configmaps/b")
	want := classes(newSchedule(halfConflicts), "op", repeat(update, 16)...)
	s := newSchedule(halfConflicts)
	var got []string
	for range 16 {
		assert.Equal(t, []string{"-"}, classes(s, "op", get))
		got = append(got, classes(s, "op", update)...)
	}
	assert.Equal(t, want, got)
}

// Percent is the share of selected requests struck.
func TestSchedulePercent(t *testing.T) {
	update, _ := parse(http.MethodPut, "/api/v1/namespaces/a/configmaps/b")
	for _, percent := range []int{1, 10, 50, 90, 100} {
		t.Run(fmt.Sprint(percent), func(t *testing.T) {
			s := newSchedule(FaultPlan{Seed: 1, Faults: []Fault{{Class: Conflict, Percent: percent}}})
			struck := 0
			for _, c := range classes(s, "op", repeat(update, 10000)...) {
				if c != "-" {
					struck++
				}
			}
			assert.InDelta(t, percent*100, struck, 150, "struck %d of 10000", struck)
		})
	}
}

// The first fault that strikes a request wins, and every fault that
// selects it counts it, so that a fault's draws do not depend on the
// faults before it.
func TestScheduleFirstStrikeWins(t *testing.T) {
	update, _ := parse(http.MethodPut, "/api/v1/namespaces/a/configmaps/b")
	both := newSchedule(FaultPlan{Seed: 9, Faults: []Fault{{Class: Conflict, Percent: 50}, {Class: InternalError, Percent: 100}}})
	conflicts := classes(newSchedule(FaultPlan{Seed: 9, Faults: []Fault{{Class: Conflict, Percent: 50}}}), "op", repeat(update, 20)...)
	got := classes(both, "op", repeat(update, 20)...)
	for i, c := range conflicts {
		want := "InternalError"
		if c == "Conflict" {
			want = "Conflict"
		}
		require.Equal(t, want, got[i], "request %d", i)
	}
}

// The draw is a function of seed, identity, fault and k alone.
func TestDrawIsAFunctionOfItsArguments(t *testing.T) {
	assert.Equal(t, draw(1, "op", 0, 5), draw(1, "op", 0, 5))
	seen := map[uint64]bool{}
	for _, d := range []uint64{draw(1, "op", 0, 5), draw(2, "op", 0, 5), draw(1, "op2", 0, 5), draw(1, "op", 1, 5), draw(1, "op", 0, 6),
		draw(1, "o", 0, 5)} {
		assert.False(t, seen[d], "two draws collide")
		seen[d] = true
	}
}

// The proxy keeps a log of a resource a StaleView may serve a get or list
// of stale, from its first read: not of a resource no StaleView selects,
// nor for a StaleView of watches only, which needs none, nor at a write.
func TestScheduleReadsStale(t *testing.T) {
	list, _ := parse(http.MethodGet, "/api/v1/namespaces/a/configmaps")
	create, _ := parse(http.MethodPost, "/api/v1/namespaces/a/configmaps")
	secrets, _ := parse(http.MethodGet, "/api/v1/namespaces/a/secrets")
	plan := func(f Fault) *schedule { return newSchedule(FaultPlan{Faults: []Fault{f}}) }
	assert.True(t, plan(Fault{Class: StaleView, LagEvents: 1, Percent: 1}).readsStale(list))
	assert.False(t, plan(Fault{Class: StaleView, LagEvents: 1, Percent: 1}).readsStale(create))
	assert.False(t, plan(Fault{Class: StaleView, Resources: []string{"configmaps"}, LagEvents: 1, Percent: 1}).readsStale(secrets))
	assert.False(t, plan(Fault{Class: StaleView, Verbs: []string{"watch"}, LagEvents: 1, Percent: 1}).readsStale(list))
	assert.False(t, plan(Fault{Class: Conflict, Percent: 1}).readsStale(list))
}
