package payload_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// onePayload is a payload of one manifest.
func onePayload(r payload.Release) *payload.Payload {
	return &payload.Payload{Release: r, Manifests: []manifest.Manifest{newManifest("0000_10_a_00_cm.yaml", "ConfigMap", "a", "one")}}
}

// TestWorkerPassesNoSoonerThanItsInterval: whatever the interval's precision, and
// wherever in a second the worker starts, a pass starts only once the interval since
// the last one has elapsed, and then at once: over two seconds (both ends included)
// of an applier that returns at once, 21 passes at 100ms, 7 at 300ms, 3 at 1s.
func TestWorkerPassesNoSoonerThanItsInterval(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name     string
		interval time.Duration
		start    time.Duration // after a whole second
		want     int
	}{
		{"100ms", ms(100), 0, 21},
		{"300ms", ms(300), 0, 7},
		{"1s", time.Second, 0, 3},
		{"300ms, starting late in a second", ms(300), ms(900), 7},
		{"1s, starting off the second", time.Second, ms(10), 3},
	}
	const span = 2 * time.Second
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0.Add(tt.start))
			loader := &fake.PayloadLoader{}
			loader.Add(onePayload(v1))
			var mu sync.Mutex
			var passes []time.Time
			applier := payload.ApplierFunc(func(context.Context, *manifest.Manifest, payload.State) error {
				mu.Lock()
				passes = append(passes, clk.Now())
				mu.Unlock()
				return nil
			})
			decided := make(chan struct{})
			ack := make(chan struct{})
			ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
			w, err := payload.NewWorker(payload.Config{Loader: loader, Applier: applier, Clock: clk, Jitter: func() float64 { return 0 },
				Policy: payload.Policy{Interval: metav1.Duration{Duration: tt.interval}},
				OnResult: func(r converge.Result) {
					if r.RequeueAfter == 0 { // not the end of a pass
						return
					}
					select {
					case decided <- struct{}{}:
					case <-ctx.Done():
						return
					}
					select {
					case <-ack:
					case <-ctx.Done():
					}
				}})
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() { done <- w.Start(ctx) }()
			t.Cleanup(func() {
				cancel()
				assert.NoError(t, <-done)
			})
			hot := func() {
				mu.Lock()
				defer mu.Unlock()
				if len(passes) > 1000 {
					t.Fatalf("%d passes at %s: a hot loop", len(passes), clk.Now())
				}
			}
			// pass waits for the end of a pass, then lets the worker go on to its wait.
			pass := func() time.Time {
				deadlock := time.After(time.Minute) // a deadlock detector, not a timing
				for {
					select {
					case <-decided:
						ack <- struct{}{}
						return clk.Now()
					case <-deadlock:
						t.Fatalf("no pass at %s", clk.Now())
					default:
						hot()
						runtime.Gosched()
					}
				}
			}
			// idle waits until the worker waits on the clock.
			idle := func() {
				for clk.Waiters() != 1 {
					select {
					case <-decided:
						t.Fatalf("a pass at %s, before its interval", clk.Now())
					default:
						hot()
						runtime.Gosched()
					}
				}
			}
			w.Update(1, v1)
			last := pass()
			end := last.Add(span)
			for {
				idle()
				due := last.Add(tt.interval)
				if due.After(end) {
					break
				}
				clk.Step(due.Sub(clk.Now()) - time.Millisecond)
				idle()
				clk.Step(time.Millisecond)
				last = pass()
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Len(t, passes, tt.want)
			for i := 1; i < len(passes); i++ {
				assert.Equal(t, tt.interval, passes[i].Sub(passes[i-1]), "pass %d", i)
			}
		})
	}
}

// BenchmarkWorkerPasses runs a worker on the real clock with an applier that returns at
// once and a one-manifest payload, for two seconds per op, and reports the passes per
// second: about 1/interval.
func BenchmarkWorkerPasses(b *testing.B) {
	for _, interval := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second} {
		b.Run("interval="+interval.String(), func(b *testing.B) {
			loader := &fake.PayloadLoader{}
			loader.Add(onePayload(v1))
			var passes atomic.Int64
			applier := payload.ApplierFunc(func(context.Context, *manifest.Manifest, payload.State) error {
				passes.Add(1)
				return nil
			})
			for b.Loop() {
				w, err := payload.NewWorker(payload.Config{Loader: loader, Applier: applier,
					Policy: payload.Policy{Interval: metav1.Duration{Duration: interval}}})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), logr.Discard()), 2*time.Second)
				w.Update(1, v1)
				err = w.Start(ctx)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(passes.Load())/b.Elapsed().Seconds(), "passes/s")
		})
	}
}

// TestWorkerResumesFromThePersistedRelease: a worker started from a persisted status
// carries on with its release without waiting for Update: an interrupted apply at
// once and in its state, a reconcile when it is due; a later Update replaces it.
func TestWorkerResumesFromThePersistedRelease(t *testing.T) {
	history := []payload.UpdateHistory{{State: payload.UpdatePartial, Version: v2.Version}, {State: payload.UpdateCompleted, Version: v1.Version}}
	t.Run("an interrupted update resumes at once", func(t *testing.T) {
		h := newHarness(t, func(c *payload.Config) {
			c.Status = payload.Status{ObservedGeneration: 4, Release: v2, State: payload.StateUpdating, Interrupted: true, Done: 3, Total: 6, History: history}
		})
		d := h.next()
		assert.Equal(t, []payload.State{payload.StateUpdating}, statesOf(h.applier.Recorded()))
		assert.Equal(t, []payload.Release{v2}, h.loader.Recorded())
		assert.Equal(t, payload.StateReconciling, d.Status.State)
		assert.Equal(t, int64(4), d.Status.ObservedGeneration)
	})
	t.Run("a reconcile resumes when it is due", func(t *testing.T) {
		h := newHarness(t, func(c *payload.Config) {
			c.Status = payload.Status{Release: v1, State: payload.StateReconciling, Done: 6, Total: 6, Completed: 1,
				NextApplyTime: dueAt(time.Minute), History: history[1:]}
		})
		h.idle()
		assert.Empty(t, h.applier.Recorded(), "nothing before the interval")
		h.clk.Step(time.Minute)
		d := h.next()
		assert.Equal(t, []payload.State{payload.StateReconciling}, statesOf(h.applier.Recorded()))
		assert.Equal(t, int32(2), d.Status.Completed)
	})
	t.Run("a later Update replaces it", func(t *testing.T) {
		started := make(chan struct{}, 1)
		h := newHarness(t, func(c *payload.Config) {
			c.Status = payload.Status{Release: v1, State: payload.StateInitializing, Interrupted: true}
			applier := c.Applier.(*fake.PayloadApplier)
			applier.Push("ConfigMap/a/one", fake.PayloadOutcome{Block: true, Times: 1})
			applier.OnApply = func(call fake.PayloadApply) {
				if call.Ref == "ConfigMap/a/one" {
					select {
					case started <- struct{}{}:
					default:
					}
				}
			}
		})
		<-started
		h.worker.Update(2, v2)
		for d := h.next(); d.Status.Release != v2 || d.Status.State != payload.StateReconciling; d = h.next() {
		}
		assert.Equal(t, []payload.Release{v1, v2}, h.loader.Recorded())
	})
}
