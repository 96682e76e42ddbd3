package payload

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestIsEdge(t *testing.T) {
	base := Status{Generation: 1, Done: 1, Total: 5, Actual: Release{Version: "1"}}
	failed := &Failure{Message: "x"}
	tests := []struct {
		name string
		next func(s Status) Status
		want bool
	}{
		{"progress only", func(s Status) Status { s.Done = 2; return s }, false},
		{"completed count", func(s Status) Status { s.Completed = 3; return s }, false},
		{"generation", func(s Status) Status { s.Generation = 2; return s }, true},
		{"release", func(s Status) Status { s.Actual.Version = "2"; return s }, true},
		{"reconciling", func(s Status) Status { s.Reconciling = true; return s }, true},
		{"failure appears", func(s Status) Status { s.Failure = failed; return s }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsEdge(base, tt.next(base)))
		})
	}
	withFailure := base
	withFailure.Failure = failed
	other := withFailure
	other.Failure = &Failure{Message: "y"}
	assert.False(t, IsEdge(withFailure, other), "a different failure is not an edge")
}

func TestNotifier(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	got := make(chan Status, 10)
	n := NewNotifier(10*time.Second, 1, clk, func(s Status) { got <- s })
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		n.Run(ctx)
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()

	receive := func() Status {
		t.Helper()
		select {
		case s := <-got:
			return s
		case <-time.After(5 * time.Second):
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
	s := Status{Generation: 1, Total: 10}

	n.Offer(s)
	assert.Equal(t, s, receive(), "the first status passes at once")

	s.Done = 1
	n.Offer(s)
	assert.Equal(t, 1, receive().Done, "the burst lets the first change through")

	s.Done = 2
	n.Offer(s)
	waitForTimer()
	s.Done = 3
	n.Offer(s)
	assert.Empty(t, got, "throttled")
	clk.Step(10 * time.Second)
	assert.Equal(t, 3, receive().Done, "after the interval the latest status is delivered")

	s.Done = 4
	n.Offer(s)
	waitForTimer()
	s.Failure = &Failure{Message: "boom"}
	n.Offer(s)
	assert.Equal(t, s, receive(), "an edge passes at once, even while a throttled status waits")
}

func TestNotifierStopsWhileThrottled(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	n := NewNotifier(0, 0, clk, func(Status) {})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		n.Run(ctx)
		close(done)
	}()
	n.Offer(Status{Done: 1})
	n.Offer(Status{Done: 1})
	cancel()
	<-done
}

func TestWorkerNotifierUsesTheWorkerClock(t *testing.T) {
	applier := ApplierFunc(func(context.Context, *Manifest, State) error { return nil })
	loader := PayloadLoaderFunc(func(context.Context, Release) (*Payload, error) { return &Payload{}, nil })
	onStatus := func(Status) {}
	tests := []struct {
		name  string
		clock clock.WithDelayedExecution
		want  clock.Clock
	}{
		{name: "configured", clock: clocktesting.NewFakeClock(t0)},
		{name: "default", clock: nil, want: clock.RealClock{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewWorker(WorkerConfig{Loader: loader, Applier: applier, Clock: tt.clock, OnStatus: onStatus})
			require.NoError(t, err)
			require.NotNil(t, w.notifier)
			want := tt.want
			if want == nil {
				want = tt.clock
			}
			assert.Equal(t, want, w.notifier.clock, "OnStatus is throttled on the worker's clock")
		})
	}
}
