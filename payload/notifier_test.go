package payload

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
)

// source is a status that changes, as the worker's does.
type source struct {
	mu sync.Mutex
	s  Status
	v  uint64
}

func (src *source) latest() (Status, uint64) {
	src.mu.Lock()
	defer src.mu.Unlock()
	return src.s, src.v
}

// set changes the status and tells n.
func (src *source) set(n *notifier, s Status) {
	src.mu.Lock()
	src.s, src.v = s, src.v+1
	src.mu.Unlock()
	n.poke()
}

func TestIsEdge(t *testing.T) {
	base := Status{ObservedGeneration: 1, Done: 1, Total: 5, Release: Release{Version: "1"}, State: StateUpdating}
	failed := &Failure{Message: "x"}
	tests := []struct {
		name string
		next func(s Status) Status
		want bool
	}{
		{"progress only", func(s Status) Status { s.Done = 2; return s }, false},
		{"completed count", func(s Status) Status { s.Completed = 3; return s }, false},
		{"generation", func(s Status) Status { s.ObservedGeneration = 2; return s }, true},
		{"release", func(s Status) Status { s.Release.Version = "2"; return s }, true},
		{"state", func(s Status) Status { s.State = StateReconciling; return s }, true},
		{"interrupted", func(s Status) Status { s.Interrupted = true; return s }, true},
		{"failure appears", func(s Status) Status { s.Failure = failed; return s }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := tt.next(base)
			assert.Equal(t, tt.want, isEdge(&base, &next))
		})
	}
	withFailure := base
	withFailure.Failure = failed
	other := withFailure
	other.Failure = &Failure{Message: "y"}
	assert.False(t, isEdge(&withFailure, &other), "a different failure is not an edge")
}

// runNotifier runs n until the test ends.
func runNotifier(t *testing.T, n *notifier) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestNotifier(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	got := make(chan Status, 10)
	src := &source{}
	n := newNotifier(10*time.Second, clk, src.latest, func(_ context.Context, s Status) error { got <- s; return nil })
	runNotifier(t, n)

	receive := func() Status {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-time.After(time.Minute): // a deadlock detector, not a timing
			require.FailNow(t, "no notification")
		}
		return Status{}
	}
	waitForTimer := func() {
		t.Helper()
		for !clk.HasWaiters() {
			runtime.Gosched()
		}
	}
	s := Status{ObservedGeneration: 1, Total: 10}

	src.set(n, s)
	assert.Equal(t, s, receive(), "the first status passes at once")

	s.Done = 1
	src.set(n, s)
	assert.Equal(t, int32(1), receive().Done, "the first change passes: the limiter starts full")

	s.Done = 2
	src.set(n, s)
	waitForTimer()
	s.Done = 3
	src.set(n, s)
	assert.Empty(t, got, "throttled")
	clk.Step(10 * time.Second)
	assert.Equal(t, int32(3), receive().Done, "after the interval the latest status is delivered")

	s.Done = 4
	src.set(n, s)
	waitForTimer()
	s.Failure = &Failure{Message: "boom"}
	src.set(n, s)
	assert.Equal(t, s, receive(), "an edge passes at once, even while a throttled status waits")
}

func TestNotifierStopsWhileThrottled(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	src := &source{}
	n := newNotifier(time.Second, clk, src.latest, func(context.Context, Status) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		n.run(ctx)
		close(done)
	}()
	src.set(n, Status{Done: 1})
	src.set(n, Status{Done: 1})
	cancel()
	<-done
}

func TestNotifierWritesAgainAfterAConflict(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var writes []int32
	conflicts := 2
	src := &source{}
	n := newNotifier(time.Second, clk, src.latest, func(_ context.Context, s Status) error {
		writes = append(writes, s.Done)
		if conflicts > 0 {
			conflicts--
			if conflicts == 0 {
				return apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "x", errors.New("changed"))
			}
			return fmt.Errorf("wrapped: %w", converge.ErrConflict)
		}
		return nil
	})
	src.set(n, Status{Done: 7})
	require.True(t, n.deliver(context.Background()), "written after two conflicts")
	assert.Equal(t, []int32{7, 7, 7}, writes, "converge.ErrConflict and the apiserver's 409 both make it write again at once")
}

func TestNotifierWaitsAfterConflictsInARow(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	writes := 0
	src := &source{}
	n := newNotifier(time.Second, clk, src.latest, func(context.Context, Status) error {
		writes++
		return converge.ErrConflict
	})
	src.set(n, Status{Done: 7})
	assert.False(t, n.deliver(context.Background()), "a writer that always conflicts is not retried forever")
	assert.Equal(t, 1+conflictRetries, writes, "one write and conflictRetries immediate writes again")
	waiting, _ := n.take()
	assert.True(t, waiting, "the status waits for the next write")
}

func TestNotifierKeepsAStatusWhoseWriteFailed(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	fail := true
	var written []int32
	src := &source{}
	n := newNotifier(time.Second, clk, src.latest, func(_ context.Context, s Status) error {
		if fail {
			return errors.New("apiserver down")
		}
		written = append(written, s.Done)
		return nil
	})
	src.set(n, Status{Done: 3})
	assert.False(t, n.deliver(context.Background()))
	fail = false
	assert.True(t, n.deliver(context.Background()))
	assert.Equal(t, []int32{3}, written, "the status is written once the writer recovers")
	assert.True(t, n.deliver(context.Background()))
	assert.Equal(t, []int32{3}, written, "a status written is not written again")

	fail = true
	src.set(n, Status{Done: 4})
	assert.False(t, n.deliver(context.Background()))
	src.set(n, Status{Done: 5})
	fail = false
	assert.True(t, n.deliver(context.Background()))
	assert.Equal(t, []int32{3, 5}, written, "the write after a failure writes the status as it is then")
}

// TestNotifierRetriesAFailedEdgeOnAChangeNotOnAPoke: an edge whose write failed is
// written again once the limiter allows (at once the first time: it starts full), at
// once when the status changes by an edge again, or once the interval has passed;
// being told again of the status it tried brings no write, however many goroutines
// tell it.
func TestNotifierRetriesAFailedEdgeOnAChangeNotOnAPoke(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	var tried []int64
	fail := true
	src := &source{}
	n := newNotifier(10*time.Second, clk, src.latest, func(_ context.Context, s Status) error {
		mu.Lock()
		defer mu.Unlock()
		tried = append(tried, s.ObservedGeneration)
		if fail {
			return errors.New("apiserver down")
		}
		return nil
	})
	attempts := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), tried...)
	}
	runNotifier(t, n)
	waitFor := func(want []int64) {
		t.Helper()
		deadline := time.Now().Add(time.Minute) // a deadlock detector, not a timing
		for !assert.ObjectsAreEqual(want, attempts()) {
			require.True(t, time.Now().Before(deadline), "attempts %v, want %v", attempts(), want)
			runtime.Gosched()
		}
	}

	throttled := func() {
		t.Helper()
		for !clk.HasWaiters() { // the failed write waits for the interval
			runtime.Gosched()
		}
	}
	src.set(n, Status{ObservedGeneration: 1})
	waitFor([]int64{1, 1})
	throttled()
	for range 5 {
		n.poke()
	}
	src.set(n, Status{ObservedGeneration: 1, Done: 1})
	assert.Equal(t, []int64{1, 1}, attempts(), "no write again for pokes or progress")
	src.set(n, Status{ObservedGeneration: 2, Done: 1})
	waitFor([]int64{1, 1, 2})
	throttled()
	mu.Lock()
	fail = false
	mu.Unlock()
	clk.Step(10 * time.Second)
	waitFor([]int64{1, 1, 2, 2})
}
