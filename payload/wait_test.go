package payload_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestDecideBoundsEveryWaitToItsLength: no stored due time is further from now than
// its own interval, or its backoff at the largest jitter: one that is (the clock
// stepped back, or the status comes from a replica whose clock runs ahead of this
// one) is pulled back to now plus that length, and a LastProgressTime in the future
// becomes now. A due time within its length is kept.
func TestDecideBoundsEveryWaitToItsLength(t *testing.T) {
	const interval = 3 * time.Minute
	const longestSecondRetry = 54 * time.Second // Interval/8·2, plus 20 %
	failed := payload.Failure{Reason: "UpdatePayloadFailed", Message: "boom", Effect: payload.EffectFailAfterInterval}
	tests := []struct {
		name   string
		status func(s *payload.Status)
		want   time.Duration
	}{
		{name: "the interval, after the clock stepped back an hour",
			status: func(s *payload.Status) { s.NextApplyTime = dueAt(time.Hour + interval) }, want: interval},
		{name: "a failed apply's retry, after the clock stepped back an hour", status: func(s *payload.Status) {
			s.Failures, s.Failure, s.NextApplyTime = 2, &failed, dueAt(time.Hour+45*time.Second)
		}, want: longestSecondRetry},
		{name: "the interval, on a replica whose clock runs 5 minutes behind the writer's",
			status: func(s *payload.Status) { s.NextApplyTime = dueAt(5*time.Minute + interval) }, want: interval},
		{name: "an interval not over is kept",
			status: func(s *payload.Status) { s.NextApplyTime = dueAt(2 * time.Minute) }, want: 2 * time.Minute},
		{name: "a retry within its backoff's largest jitter is kept", status: func(s *payload.Status) {
			s.Failures, s.Failure, s.NextApplyTime = 2, &failed, dueAt(50*time.Second)
		}, want: 50 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := payload.Status{Release: v1, State: payload.StateReconciling, Done: 1, Total: 1, Completed: 1,
				History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: v1.Version}}}
			tt.status(&st)
			d, err := payload.Decide(payload.Input{Desired: v1, Status: st, Now: t0,
				Policy: payload.Policy{Interval: metav1.Duration{Duration: interval}}})
			require.NoError(t, err)
			assert.False(t, d.Apply)
			assert.Equal(t, tt.want, d.RequeueAfter)
			assert.Equal(t, dueAt(tt.want), d.Status.NextApplyTime)
		})
	}
	t.Run("a last progress in the future is now, so a failure fails an interval later", func(t *testing.T) {
		st := payload.Status{Release: v1, State: payload.StateUpdating, Done: 1, Total: 2, Failures: 1, Failure: &failed,
			LastProgressTime: at(time.Hour), NextApplyTime: dueAt(time.Hour)}
		policy := payload.Policy{Interval: metav1.Duration{Duration: interval}}
		d, err := payload.Decide(payload.Input{Desired: v1, Status: st, Now: t0, Policy: policy})
		require.NoError(t, err)
		assert.Equal(t, at(0), d.Status.LastProgressTime)
		d, err = payload.Decide(payload.Input{Desired: v1, Status: d.Status, Now: t0.Add(interval), Policy: policy})
		require.NoError(t, err)
		failing, _ := conditionOf(d.Status, "Failing")
		assert.Equal(t, metav1.ConditionTrue, failing.Status, "no progress for an interval")
	})
}

// TestWorkerWaitsNoLongerThanItsLength: whatever the worker's clock reads, every pass
// comes within its wait's own length: a clock that steps back an hour after an apply
// (while the worker waits, or while the host handles the result) leaves a reconcile in
// every interval and a failed apply's retry within its backoff, and a worker given the
// status of a replica whose clock ran 5 minutes ahead reconciles within the interval.
func TestWorkerWaitsNoLongerThanItsLength(t *testing.T) {
	const interval = 3 * time.Minute
	reconciling := payload.Status{Release: v1, State: payload.StateReconciling, Done: 1, Total: 1, Completed: 1,
		History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: v1.Version}}}
	tests := []struct {
		name string
		// stepBack is true when the clock steps back an hour in the host's OnResult of
		// the first apply, false when it steps back while the worker waits.
		stepBack  bool
		failFirst bool
		status    payload.Status
		waits     []time.Duration // each ends with one pass
	}{
		{name: "the clock steps back an hour while the worker waits", waits: []time.Duration{interval, interval, interval, interval}},
		{name: "the clock steps back an hour while the host handles the result", stepBack: true,
			waits: []time.Duration{interval, interval, interval, interval}},
		{name: "a failed apply's retry, the clock stepped back an hour", stepBack: true, failFirst: true,
			waits: []time.Duration{27 * time.Second, interval}},
		{name: "the status of a replica whose clock ran 5 minutes ahead", status: func() payload.Status {
			st := *reconciling.DeepCopy()
			st.NextApplyTime = dueAt(5*time.Minute + interval)
			return st
		}(), waits: []time.Duration{interval, interval}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakeClock := clocktesting.NewFakeClock(t0)
			clk := &offsetClock{WithDelayedExecution: fakeClock} // what it reads steps; its timers measure the time that passes
			passes := make(chan struct{}, 100)
			var applied atomic.Int32
			applier := payload.ApplierFunc(func(context.Context, *manifest.Manifest, payload.State) error {
				if n := applied.Add(1); tt.failFirst && n == 1 {
					return errors.New("boom")
				}
				return nil
			})
			var stepped atomic.Bool
			onResult := func(r converge.Result) { // the decision that follows a pass
				if r.RequeueAfter == 0 {
					return
				}
				if tt.stepBack && !stepped.Swap(true) {
					fakeClock.SetTime(fakeClock.Now().Add(-time.Hour))
				}
				passes <- struct{}{}
			}
			w := startWaitingWorker(t, clk, applier, onResult, tt.status)
			if tt.status.Release.IsZero() {
				<-passes // the first apply
				awaitWaiters(t, fakeClock, 1)
				if !tt.stepBack {
					clk.jump(-time.Hour)
				}
			}
			for i, wait := range tt.waits {
				awaitWaiters(t, fakeClock, 1)
				fakeClock.Step(wait)
				select {
				case <-passes:
				case <-time.After(time.Minute): // a deadlock detector, not a timing
					require.FailNow(t, "no pass", "wait %d of %s ended without a pass; status %+v", i+1, wait, w.Status())
				}
			}
		})
	}
}

// startWaitingWorker starts a worker of a one-manifest release on clk, from st, told
// to apply v1 in its Config.
func startWaitingWorker(t *testing.T, clk clock.WithDelayedExecution, applier payload.Applier, onResult func(converge.Result), st payload.Status) *payload.Worker {
	t.Helper()
	loader := &fake.PayloadLoader{}
	loader.Add(onePayload(v1))
	w, err := payload.NewWorker(payload.Config{Loader: loader, Applier: applier, Clock: clk, Status: st, Desired: v1, Generation: 1,
		OnResult: onResult, Jitter: func() float64 { return 0 },
		Policy: payload.Policy{Interval: metav1.Duration{Duration: 3 * time.Minute}, ManifestAttempts: 1}})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return w
}

// awaitWaiters waits until n timers wait on clk.
func awaitWaiters(t *testing.T, clk *clocktesting.FakeClock, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a deadlock detector, not a timing
	for clk.Waiters() != n {
		if time.Now().After(deadline) {
			require.FailNow(t, "the worker does not wait", "%d timers wait, want %d", clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}
