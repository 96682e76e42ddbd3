package payload_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

var (
	v1 = payload.Release{Version: "1.0.0", Image: "example.com/payload:1"}
	v2 = payload.Release{Version: "2.0.0", Image: "example.com/payload:2"}
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

func newManifest(file, kind, namespace, name string, deps ...string) manifest.Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return manifest.Manifest{File: file, Document: 1, GVK: schema.GroupVersionKind{Version: "v1", Kind: kind}, Object: obj, DependsOn: deps}
}

// samplePayload has six manifests over three run levels and three components.
func samplePayload(release payload.Release) *payload.Payload {
	return &payload.Payload{Release: release, Manifests: []manifest.Manifest{
		newManifest("0000_10_a_00_ns.yaml", "Namespace", "", "a"),
		newManifest("0000_10_a_01_cm.yaml", "ConfigMap", "a", "one"),
		newManifest("0000_10_b_00_ns.yaml", "Namespace", "", "b"),
		newManifest("0000_20_a_02_cm.yaml", "ConfigMap", "a", "two"),
		newManifest("0000_20_b_01_cm.yaml", "ConfigMap", "b", "two"),
		newManifest("0000_30_c_00_cm.yaml", "ConfigMap", "default", "three"),
	}}
}

// runLevelOrder is the order one worker applies samplePayload in while updating.
var runLevelOrder = []string{
	"0000_10_a_00_ns.yaml", "0000_10_a_01_cm.yaml", "0000_10_b_00_ns.yaml",
	"0000_20_a_02_cm.yaml", "0000_20_b_01_cm.yaml", "0000_30_c_00_cm.yaml",
}

// decided is one decision the worker reported, with the status it made.
type decided struct {
	converge.Result
	Status payload.Status
}

// finished reports whether the decision followed the end of an apply.
func (d decided) finished() bool { return d.RequeueAfter > 0 || d.Status.Interrupted }

type harness struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	applier *fake.PayloadApplier
	loader  *fake.PayloadLoader
	cfg     payload.Config
	worker  *payload.Worker
	results chan decided
	stop    func()
}

// policy paces the tests: reconcile every 16 minutes, retry after 2, 4, 8, 16 minutes,
// try each manifest once.
var policy = payload.Policy{
	Interval:         metav1.Duration{Duration: 16 * time.Minute},
	ManifestAttempts: 1,
}

func newHarness(t *testing.T, configure func(*payload.Config)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     clocktesting.NewFakeClock(t0),
		applier: &fake.PayloadApplier{},
		loader:  &fake.PayloadLoader{},
		results: make(chan decided, 1000),
	}
	h.loader.Add(samplePayload(v1))
	h.loader.Add(samplePayload(v2))
	h.cfg = payload.Config{
		Loader:  h.loader,
		Applier: h.applier,
		Deleter: h.applier,
		Clock:   h.clk,
		Policy:  policy,
		Jitter:  func() float64 { return 0 },
	}
	if configure != nil {
		configure(&h.cfg)
	}
	h.start(h.newWorker(h.cfg))
	return h
}

func (h *harness) newWorker(cfg payload.Config) *payload.Worker {
	h.t.Helper()
	var w *payload.Worker
	cfg.OnResult = func(r converge.Result) { h.results <- decided{Result: r, Status: w.Status()} }
	w, err := payload.NewWorker(cfg)
	require.NoError(h.t, err)
	return w
}

// start runs w until the test ends or stop is called.
func (h *harness) start(w *payload.Worker) {
	h.worker = w
	_, ctx := ktesting.NewTestContext(h.t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(h.t, <-done)
		})
	}
	h.t.Cleanup(h.stop)
}

// next waits for the next decision that followed an apply.
func (h *harness) next() decided {
	h.t.Helper()
	for {
		select {
		case d := <-h.results:
			if d.finished() {
				return d
			}
		case <-time.After(time.Minute): // a deadlock detector, not a timing
			require.FailNow(h.t, "no apply finished")
		}
	}
}

// idle waits until the worker waits on the clock.
func (h *harness) idle() {
	h.t.Helper()
	h.waiters(1)
}

// waiters waits until n timers wait on the clock.
func (h *harness) waiters(n int) {
	h.t.Helper()
	for h.clk.Waiters() != n {
		runtime.Gosched()
	}
}

// blockOn makes every apply of ref wait until its context ends, and tells when one starts.
func (h *harness) blockOn(ref string) <-chan struct{} {
	h.applier.Push(ref, fake.PayloadOutcome{Block: true})
	started := make(chan struct{}, 100)
	h.applier.OnApply = func(c fake.PayloadApply) {
		if c.Ref == ref {
			started <- struct{}{}
		}
	}
	return started
}

func filesOf(calls []fake.PayloadApply) []string {
	var files []string
	for _, c := range calls {
		files = append(files, c.File)
	}
	return files
}

func statesOf(calls []fake.PayloadApply) []payload.State {
	var states []payload.State
	for _, c := range calls {
		if !slices.Contains(states, c.State) {
			states = append(states, c.State)
		}
	}
	return states
}

func reasons(events []converge.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

func TestWorkerInitializesThenReconciles(t *testing.T) {
	h := newHarness(t, nil)
	assert.Equal(t, payload.Status{}, h.worker.Update(1, v1), "Update returns the status before any work")

	d := h.next()
	assert.Equal(t, 16*time.Minute, d.RequeueAfter)
	assert.Equal(t, []string{"PayloadApplied"}, reasons(d.Events))
	s := d.Status
	assert.Equal(t, int64(1), s.ObservedGeneration)
	assert.Equal(t, payload.StateReconciling, s.State)
	assert.Equal(t, int32(6), s.Done)
	assert.Equal(t, int32(6), s.Total)
	assert.Equal(t, int32(1), s.Completed)
	assert.Nil(t, s.Failure)
	assert.Equal(t, v1, s.Release)
	assert.Equal(t, []payload.State{payload.StateInitializing}, statesOf(h.applier.Recorded()))
	require.Len(t, s.History, 1)
	assert.Equal(t, payload.UpdateCompleted, s.History[0].State)

	h.clk.Step(16 * time.Minute)
	d = h.next()
	assert.Empty(t, d.Events, "a reconcile that succeeds is quiet")
	assert.Equal(t, int32(2), d.Status.Completed)
	calls := h.applier.Recorded()
	assert.Len(t, calls, 12, "the payload is applied again in full")
	assert.Equal(t, []payload.State{payload.StateInitializing, payload.StateReconciling}, statesOf(calls))
	assert.Equal(t, []payload.Release{v1}, h.loader.Recorded(), "the payload is loaded once")
}

func TestWorkerUpdateCancelsTheApplyInFlight(t *testing.T) {
	h := newHarness(t, nil)
	blocked := samplePayload(v1)
	blocked.Manifests = append(blocked.Manifests, newManifest("0000_40_d_00_cm.yaml", "ConfigMap", "d", "stuck"))
	h.loader.Add(blocked)
	h.applier.Push("ConfigMap/d/stuck", fake.PayloadOutcome{Block: true})
	started := make(chan struct{})
	var once sync.Once
	h.applier.OnApply = func(c fake.PayloadApply) {
		if c.Ref == "ConfigMap/d/stuck" {
			once.Do(func() { close(started) })
		}
	}

	h.worker.Update(1, v1)
	<-started
	h.worker.Update(2, v2)

	d := h.next()
	assert.Equal(t, v2, d.Status.Release)
	assert.Equal(t, payload.StateReconciling, d.Status.State)
	assert.Equal(t, int64(2), d.Status.ObservedGeneration)
	assert.Equal(t, 1, h.applier.Count("ConfigMap/d/stuck"))
	assert.Equal(t, []payload.Release{v1, v2}, h.loader.Recorded())
	assert.Equal(t, int32(0), d.Status.Failures, "the v1 apply was interrupted, not failed")
	require.Len(t, d.Status.History, 2)
	assert.Equal(t, payload.UpdatePartial, d.Status.History[1].State, "the release left behind stays partial")
	assert.NotNil(t, d.Status.History[1].CompletionTime)
}

// TestWorkerPausedLetsTheApplyInFlightFinish: while paused, a new desired release
// cancels nothing: the reconcile in flight finishes, and the worker holds, applying
// nothing of the new release.
func TestWorkerPausedLetsTheApplyInFlightFinish(t *testing.T) {
	h := newHarness(t, func(cfg *payload.Config) {
		cfg.Policy.Paused = true
		cfg.Status = payload.Status{Release: v1, State: payload.StateReconciling, Done: 6, Total: 6, Completed: 1}
	})
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.applier.OnApply = func(c fake.PayloadApply) {
		if c.Ref == "ConfigMap/default/three" {
			once.Do(func() { close(started) })
			<-release
		}
	}
	h.worker.Update(1, v1)
	<-started
	h.worker.Update(2, v2)
	close(release)

	d := h.next()
	assert.False(t, d.Status.Interrupted, "the reconcile in flight was not cancelled")
	assert.Equal(t, int32(2), d.Status.Completed, "it completed")
	assert.Equal(t, v1, d.Status.Release)
	assert.Equal(t, []converge.Hold{converge.PausedHold("no update to 2.0.0 starts")}, d.Status.Holds)
	assert.Equal(t, []payload.Release{v1}, h.loader.Recorded(), "nothing of v2 is even loaded")
	assert.Equal(t, 6, len(h.applier.Recorded()))
}

// TestWorkerBackoffGrowsThenResetsAfterSuccess scripts every failure before it advances
// the clock, so the worker never races the script.
func TestWorkerBackoffGrowsThenResetsAfterSuccess(t *testing.T) {
	h := newHarness(t, nil)
	boom := errors.New("boom")
	h.applier.Push("ConfigMap/b/two", fake.PayloadOutcome{Err: boom, Times: 3})
	h.worker.Update(1, v1)

	steps := []struct {
		state payload.State // the state the apply ran in
		fail  bool
		wait  time.Duration
	}{
		{payload.StateInitializing, true, 2 * time.Minute},
		{payload.StateInitializing, true, 4 * time.Minute},
		{payload.StateInitializing, true, 8 * time.Minute},
		{payload.StateInitializing, false, 16 * time.Minute},
		{payload.StateReconciling, true, 2 * time.Minute}, // reset by the success
		{payload.StateReconciling, false, 16 * time.Minute},
	}
	for i, step := range steps {
		d := h.next()
		last := h.applier.Recorded()
		assert.Equal(t, step.state, last[len(last)-1].State, "apply %d", i)
		assert.Equal(t, step.fail, d.Status.Failure != nil, "apply %d", i)
		assert.Equal(t, step.wait, d.RequeueAfter, "apply %d", i)
		if step.fail {
			assert.Equal(t, "UpdatePayloadFailed", d.Status.Failure.Reason)
			assert.Equal(t, `Could not update configmap "b/two" (5 of 6): boom`, d.Status.Failure.Message)
		}
		if i == 3 {
			h.applier.Push("ConfigMap/b/two", fake.PayloadOutcome{Err: boom, Times: 1}) // before the clock moves
		}
		h.clk.Step(d.RequeueAfter)
	}
	h.next()
}

func TestWorkerApplyTimeout(t *testing.T) {
	h := newHarness(t, func(c *payload.Config) { c.Policy.ApplyTimeout = metav1.Duration{Duration: 5 * time.Minute} })
	started := h.blockOn("ConfigMap/default/three")
	h.worker.Update(1, v1)
	<-started
	h.clk.Step(5 * time.Minute)
	d := h.next()
	require.NotNil(t, d.Status.Failure)
	assert.Equal(t, "UpdatePayloadTimedOut", d.Status.Failure.Reason)
	assert.Contains(t, d.Status.Failure.Message, "timed out after 5m0s with ")
	assert.Contains(t, d.Status.Failure.Message, " of 6 manifests applied")
	assert.Equal(t, payload.EffectFail, d.Status.Failure.Effect)
}

func TestWorkerLoadFailureBacksOff(t *testing.T) {
	h := newHarness(t, nil)
	h.loader.FailNext(v1, errors.New("registry unavailable"))
	h.worker.Update(1, v1)
	d := h.next()
	assert.Equal(t, 2*time.Minute, d.RequeueAfter)
	require.NotNil(t, d.Status.Failure)
	assert.Equal(t, "UpdatePayloadRetrievalFailed", d.Status.Failure.Reason)
	assert.Contains(t, d.Status.Failure.Message, "registry unavailable")
	assert.Equal(t, []converge.Event{{Type: converge.EventTypeWarning, Reason: "UpdatePayloadRetrievalFailed", Message: d.Status.Failure.Message}}, d.Events[len(d.Events)-1:])
	assert.Empty(t, h.applier.Recorded())

	h.clk.Step(d.RequeueAfter)
	d = h.next()
	assert.Nil(t, d.Status.Failure)
}

// TestWorkerStartAgainCarriesOn protects "start again, carry on": a worker stopped and
// started again, the same one or a new one given the persisted status, reconciles at
// the interval (not at once, not never), and the next release is an update in
// run-level order.
func TestWorkerStartAgainCarriesOn(t *testing.T) {
	for _, restart := range []string{"same worker", "new worker from the persisted status"} {
		t.Run(restart, func(t *testing.T) {
			h := newHarness(t, func(c *payload.Config) { c.Policy.Workers = 1 })
			h.worker.Update(1, v1)
			d := h.next()
			require.Equal(t, payload.StateReconciling, d.Status.State)
			h.stop()

			h.clk.Step(10 * time.Minute)
			w := h.worker
			if restart != "same worker" {
				cfg := h.cfg
				cfg.Status = w.Status()
				w = h.newWorker(cfg)
				w.Update(1, v1)
			}
			applied := len(h.applier.Recorded())
			h.start(w)
			h.idle()
			assert.Len(t, h.applier.Recorded(), applied, "nothing is applied before the interval is over")

			h.clk.Step(6 * time.Minute)
			d = h.next()
			assert.Equal(t, int32(2), d.Status.Completed, "it reconciled at the interval")
			calls := h.applier.Recorded()[applied:]
			assert.Equal(t, []payload.State{payload.StateReconciling}, statesOf(calls))

			applied = len(h.applier.Recorded())
			h.worker.Update(2, v2)
			d = h.next()
			assert.Equal(t, v2, d.Status.Release)
			calls = h.applier.Recorded()[applied:]
			assert.Equal(t, []payload.State{payload.StateUpdating}, statesOf(calls), "the next release is an update")
			assert.Equal(t, runLevelOrder, filesOf(calls), "in run-level order")
		})
	}
}

// TestWorkerCleanStopIsNotAFailure protects "a clean stop is not a failure": stopping
// the worker mid-apply publishes no failure and no warning; the status says the apply
// was interrupted, and a restart resumes it in the same state.
func TestWorkerCleanStopIsNotAFailure(t *testing.T) {
	h := newHarness(t, func(c *payload.Config) {
		c.Status = payload.Status{Release: v2, State: payload.StateReconciling, NextApplyTime: dueAt(time.Hour)}
	})
	started := make(chan struct{})
	var once sync.Once
	h.applier.Push("ConfigMap/b/two", fake.PayloadOutcome{Block: true, Times: 1})
	h.applier.OnApply = func(c fake.PayloadApply) {
		if c.Ref == "ConfigMap/b/two" {
			once.Do(func() { close(started) })
		}
	}
	h.worker.Update(1, v1)
	<-started
	h.stop()

	s := h.worker.Status()
	assert.True(t, s.Interrupted)
	assert.Nil(t, s.Failure)
	assert.Equal(t, payload.StateUpdating, s.State)
	assert.Equal(t, int32(0), s.Failures)
	for len(h.results) > 0 {
		d := <-h.results
		for _, e := range d.Events {
			assert.NotEqual(t, converge.EventTypeWarning, e.Type, "a stop emits no warning: %v", e)
		}
		assert.Nil(t, d.Status.Failure)
	}

	cfg := h.cfg
	cfg.Status = s
	w := h.newWorker(cfg)
	w.Update(1, v1)
	applied := len(h.applier.Recorded())
	h.start(w)
	d := h.next()
	assert.Equal(t, payload.StateReconciling, d.Status.State, "the restart resumed and completed the update")
	assert.Equal(t, []payload.State{payload.StateUpdating}, statesOf(h.applier.Recorded()[applied:]))
	assert.False(t, d.Status.Interrupted)
}

// TestWorkerValidIsValidInEveryState protects one verdict for every state: a
// dependency on a later run level is refused whether the payload is installed,
// updated to or reconciled, and a payload that installs can be updated to.
func TestWorkerValidIsValidInEveryState(t *testing.T) {
	backwards := samplePayload(v1)
	backwards.Manifests[0].DependsOn = []string{"ConfigMap/default/three"} // level 10 needs level 30
	forwards := samplePayload(v1)
	forwards.Manifests[5].DependsOn = []string{"Namespace/a"}
	persisted := map[payload.State]payload.Status{
		payload.StateInitializing: {},
		payload.StateUpdating: {Release: v2, State: payload.StateReconciling, NextApplyTime: dueAt(time.Hour),
			History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: "2.0.0"}}},
		payload.StateReconciling: {Release: v1, State: payload.StateReconciling, NextApplyTime: ptr.To(converge.NewMicroTime(t0))},
	}
	for _, p := range []struct {
		name    string
		payload *payload.Payload
		valid   bool
	}{{"dependency on a later run level", backwards, false}, {"dependency on an earlier run level", forwards, true}} {
		var verdicts []string
		for _, state := range []payload.State{payload.StateInitializing, payload.StateUpdating, payload.StateReconciling} {
			t.Run(p.name+"/"+string(state), func(t *testing.T) {
				h := newHarness(t, func(c *payload.Config) { c.Status = persisted[state] })
				h.loader.Add(p.payload)
				h.worker.Update(1, v1)
				d := h.next()
				if p.valid {
					assert.Nil(t, d.Status.Failure)
					assert.Equal(t, state, h.applier.Recorded()[0].State)
					return
				}
				assert.Equal(t, state, d.Status.State)
				assert.Empty(t, h.applier.Recorded(), "nothing of an invalid payload is applied")
				require.NotNil(t, d.Status.Failure)
				assert.Equal(t, "UpdatePayloadIntegrity", d.Status.Failure.Reason)
				verdicts = append(verdicts, d.Status.Failure.Message)
			})
		}
		if !p.valid {
			require.Len(t, verdicts, 3)
			assert.Equal(t, verdicts[0], verdicts[1])
			assert.Equal(t, verdicts[0], verdicts[2])
		}
	}
}

// TestWorkerInitializingIsBounded protects "bounded in every state": a payload of
// 10,000 manifests without run-level prefixes is initialized by the bounded pool, not a
// goroutine per manifest.
func TestWorkerInitializingIsBounded(t *testing.T) {
	big := &payload.Payload{Release: v1}
	for i := range 10000 {
		big.Manifests = append(big.Manifests, newManifest(fmt.Sprintf("cm-%05d.yaml", i), "ConfigMap", "ns", fmt.Sprintf("cm-%05d", i)))
	}
	var peak atomic.Int64
	h := newHarness(t, nil)
	h.loader.Add(big)
	h.applier.OnApply = func(fake.PayloadApply) {
		n := int64(runtime.NumGoroutine())
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
	}
	before := runtime.NumGoroutine()
	h.worker.Update(1, v1)
	d := h.next()
	assert.Equal(t, int32(10000), d.Status.Done)
	assert.Equal(t, []payload.State{payload.StateInitializing}, statesOf(h.applier.Recorded()[:1]))
	assert.LessOrEqual(t, h.applier.Concurrency(), 16, "the default pool while initializing")
	assert.Less(t, peak.Load(), int64(before+16+20), "goroutines while initializing")
}

// TestWorkerFailureSaysWhy protects "failures say why": the status message of a failed
// apply names the manifest and carries the cause.
func TestWorkerFailureSaysWhy(t *testing.T) {
	h := newHarness(t, nil)
	h.loader.Add(&payload.Payload{Release: v1, Manifests: []manifest.Manifest{newManifest("a.yaml", "ConfigMap", "ns", "a")}})
	h.applier.Push("ConfigMap/ns/a", fake.PayloadOutcome{Err: errors.New("admission webhook denied the request")})
	h.worker.Update(1, v1)
	d := h.next()
	require.NotNil(t, d.Status.Failure)
	assert.Equal(t, `Could not update configmap "ns/a" (1 of 1): admission webhook denied the request`, d.Status.Failure.Message)
	failing, ok := conditionOf(d.Status, conditions.TypeFailing)
	require.True(t, ok)
	assert.Equal(t, metav1.ConditionTrue, failing.Status)
	assert.Equal(t, d.Status.Failure.Message, failing.Message)
}

func conditionOf(s payload.Status, condType string) (metav1.Condition, bool) {
	for _, c := range s.Conditions {
		if c.Type == condType {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// TestWorkerSurvivesCrashingHostCode protects "nothing crashes the host": a panic or a
// runtime.Goexit (what t.FailNow does) in any host hook fails what it was doing, and the
// worker carries on. A crash in a manifest's host code fails that manifest and names
// it, also when it is not the first of its node.
func TestWorkerSurvivesCrashingHostCode(t *testing.T) {
	tests := []struct {
		name      string
		configure func(c *payload.Config, crash func())
		want      string
	}{
		{name: "applier", configure: func(c *payload.Config, crash func()) {
			c.Applier = payload.ApplierFunc(func(context.Context, *manifest.Manifest, payload.State) error { crash(); return nil })
		}, want: `Could not apply namespace "a" (1 of 6): payload: applying a manifest`},
		{name: "applier of the second manifest of a node", configure: func(c *payload.Config, crash func()) {
			c.Applier = payload.ApplierFunc(func(_ context.Context, m *manifest.Manifest, _ payload.State) error {
				if m.Ref() == "ConfigMap/a/one" {
					crash()
				}
				return nil
			})
		}, want: `Could not apply configmap "a/one" (2 of 6): payload: applying a manifest`},
		{name: "loader", configure: func(c *payload.Config, crash func()) {
			loader := c.Loader
			c.Loader = payload.LoaderFunc(func(ctx context.Context, r payload.Release) (*payload.Payload, error) {
				crash()
				return loader.Load(ctx, r)
			})
		}, want: "payload: loading the payload"},
		{name: "include", configure: func(c *payload.Config, crash func()) {
			c.Include = func(*manifest.Manifest) error { crash(); return nil }
		}, want: "payload: deciding which manifests to include"},
		{name: "readiness", configure: func(c *payload.Config, crash func()) {
			c.Readiness = payload.ReadinessFunc(func(context.Context, *manifest.Manifest) error { crash(); return nil })
		}, want: `Could not apply namespace "a" (1 of 6): payload: applying a manifest`},
		{name: "preconditions", configure: func(c *payload.Config, crash func()) {
			c.Status = payload.Status{Release: v2, State: payload.StateReconciling, NextApplyTime: dueAt(time.Hour)}
			c.Preconditions = payload.PreconditionsFunc(func(context.Context, payload.Release, payload.Release) error { crash(); return nil })
		}, want: "payload: checking the preconditions"},
	}
	crashes := map[string]func(){"panic": func() { panic("kaboom") }, "Goexit": runtime.Goexit}
	for _, tt := range tests {
		for how, crash := range crashes {
			t.Run(tt.name+"/"+how, func(t *testing.T) {
				crashing := atomic.Bool{}
				crashing.Store(true)
				h := newHarness(t, func(c *payload.Config) {
					tt.configure(c, func() {
						if crashing.Load() {
							crash()
						}
					})
				})
				h.worker.Update(1, v1)
				d := h.next()
				require.NotNil(t, d.Status.Failure, "the crash is a failure")
				assert.Contains(t, d.Status.Failure.Message, tt.want)
				crashing.Store(false)
				h.clk.Step(d.RequeueAfter)
				d = h.next()
				assert.Nil(t, d.Status.Failure, "the worker carries on")
				assert.Equal(t, payload.StateReconciling, d.Status.State)
			})
		}
	}
}

func TestNewWorkerRejectsBadConfig(t *testing.T) {
	loader := &fake.PayloadLoader{}
	applier := &fake.PayloadApplier{}
	var nilLoader *fake.PayloadLoader
	var nilApplier *fake.PayloadApplier
	var nilFunc payload.ApplierFunc
	var nilDeleter *fake.PayloadApplier
	tests := []struct {
		name string
		cfg  payload.Config
	}{
		{"no loader", payload.Config{Applier: applier}},
		{"no applier", payload.Config{Loader: loader}},
		{"typed-nil loader", payload.Config{Loader: nilLoader, Applier: applier}},
		{"typed-nil applier", payload.Config{Loader: loader, Applier: nilApplier}},
		{"nil applier func", payload.Config{Loader: loader, Applier: nilFunc}},
		{"typed-nil deleter", payload.Config{Loader: loader, Applier: applier, Deleter: nilDeleter}},
		{"negative interval", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{Interval: metav1.Duration{Duration: -1}}}},
		{"negative workers", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{InitializingWorkers: -1}}},
		{"factor below 100", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{Backoff: converge.Backoff{FactorPercent: 50}}}},
		{"jitter over 100", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{ManifestBackoff: converge.Backoff{JitterPercent: ptr.To[int32](101)}}}},
		{"unknown readiness effect", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{ReadinessEffect: "Sometimes"}}},
		{"a persisted status no worker writes", payload.Config{Loader: loader, Applier: applier, Status: payload.Status{Release: v1, State: "Paused"}}},
		{"negative notify interval", payload.Config{Loader: loader, Applier: applier, NotifyInterval: -time.Second}},
		{"negative flush timeout", payload.Config{Loader: loader, Applier: applier, FlushTimeout: -time.Second}},
		{"a window that never starts", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{Windows: []converge.Window{
			{Kind: converge.WindowAllow, Schedule: "0 0 30 2 *", Duration: metav1.Duration{Duration: time.Hour}}}}}},
		{"a window's zone that does not load", payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{Windows: []converge.Window{
			{Kind: converge.WindowAllow, Schedule: "0 22 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Mars/Olympus_Mons"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := payload.NewWorker(tt.cfg)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Regexp(t, "^payload: invalid config: ", err.Error())
		})
	}
	t.Run("every problem is named, in the one wording of every engine", func(t *testing.T) {
		_, err := payload.NewWorker(payload.Config{Deleter: nilDeleter, Policy: payload.Policy{Workers: -1}, Status: payload.Status{Done: 1}, NotifyInterval: -time.Second})
		assert.EqualError(t, err, "payload: invalid config: Loader is required; Applier is required; Deleter holds a nil *fake.PayloadApplier; "+
			"NotifyInterval -1s is negative; Policy: workers -1 is negative; Status: done 1 is above total 0")
	})
}

func TestWorkerStartRejectsANilContextAndASecondStart(t *testing.T) {
	h := newHarness(t, nil)
	//nolint:staticcheck // a nil context is what the test is about
	require.ErrorIs(t, h.worker.Start(nil), converge.ErrInvalid)
	h.worker.Update(1, v1)
	h.next()
	require.Error(t, h.worker.Start(context.Background()), "a second Start while the first runs")
}

// TestWorkerOnAClockAtTheZeroTimeStopsWithAnError: Decide refuses a zero Now, so a
// worker whose clock reads the zero time returns that error from Start instead of
// deciding at a time that every time it persisted lies after.
func TestWorkerOnAClockAtTheZeroTimeStopsWithAnError(t *testing.T) {
	w, err := payload.NewWorker(payload.Config{Loader: &fake.PayloadLoader{}, Applier: &fake.PayloadApplier{}, Clock: clocktesting.NewFakeClock(time.Time{})})
	require.NoError(t, err)
	w.Update(1, v1)
	err = w.Start(context.Background())
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, "Now is zero")
}

// TestWorkerRemovesManifestsMarkedForDeletion: deletions run in graph order, an object
// already gone is success, and the objects removed are reported.
func TestWorkerRemovesManifestsMarkedForDeletion(t *testing.T) {
	h := newHarness(t, func(c *payload.Config) {
		c.Policy.Workers = 1
		c.Status = payload.Status{Release: v1, State: payload.StateReconciling, NextApplyTime: dueAt(time.Hour)}
	})
	p := samplePayload(v2)
	old := newManifest("0000_20_a_03_old.yaml", "ConfigMap", "a", "old")
	old.Delete = true
	gone := newManifest("0000_20_b_02_gone.yaml", "ConfigMap", "b", "gone")
	gone.Delete = true
	p.Manifests = slices.Insert(p.Manifests, 4, old)
	p.Manifests = slices.Insert(p.Manifests, 6, gone)
	h.loader.Add(p)
	h.applier.Push("ConfigMap/b/gone", fake.PayloadOutcome{Err: apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "gone")})

	h.worker.Update(2, v2)
	d := h.next()
	require.Nil(t, d.Status.Failure)
	calls := h.applier.Recorded()
	assert.Equal(t, []string{
		"0000_10_a_00_ns.yaml", "0000_10_a_01_cm.yaml", "0000_10_b_00_ns.yaml",
		"0000_20_a_02_cm.yaml", "0000_20_a_03_old.yaml", "0000_20_b_01_cm.yaml", "0000_20_b_02_gone.yaml", "0000_30_c_00_cm.yaml",
	}, filesOf(calls), "deletions run in graph order")
	assert.True(t, calls[4].Delete)
	assert.True(t, calls[6].Delete)
	assert.Contains(t, d.Events, converge.Event{Type: converge.EventTypeNormal, Reason: "ManifestsDeleted", Message: `Deleted 1 object of 2.0.0: configmap "a/old"`},
		"the object already gone is success and not reported as deleted")
	assert.Equal(t, int32(8), d.Status.Done)
}

// TestWorkerWaitsForReadinessWhileUpdating: an update waits for every manifest of a run
// level to be ready before the next level, a manifest not ready in time fails with the
// policy's effect, and reconciling does not wait.
func TestWorkerWaitsForReadinessWhileUpdating(t *testing.T) {
	readiness := &fake.PayloadReadiness{}
	h := newHarness(t, func(c *payload.Config) {
		c.Policy.Workers = 1
		c.Policy.ReadinessPoll = metav1.Duration{Duration: 10 * time.Second}
		c.Policy.ReadinessTimeout = metav1.Duration{Duration: time.Minute}
		c.Readiness = readiness
		c.Status = payload.Status{Release: v2, State: payload.StateReconciling, NextApplyTime: dueAt(time.Hour)}
	})
	readiness.NotReadyFor("ConfigMap/b/two", 2)
	var order []string
	var mu sync.Mutex
	h.applier.OnApply = func(c fake.PayloadApply) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, c.Ref)
	}
	h.worker.Update(1, v1)
	for range 2 { // two polls of the level-20 ConfigMap before level 30 starts
		h.waiters(3) // the apply's timeout, the readiness timeout and its poll
		mu.Lock()
		assert.NotContains(t, order, "ConfigMap/default/three", "the next run level waits")
		mu.Unlock()
		h.clk.Step(10 * time.Second)
	}
	d := h.next()
	require.Nil(t, d.Status.Failure)
	assert.Contains(t, order, "ConfigMap/default/three")

	t.Run("reconciling does not wait", func(t *testing.T) {
		checks := len(readiness.Recorded())
		readiness.NotReadyFor("ConfigMap/a/one", 100)
		h.clk.Step(d.RequeueAfter)
		d = h.next()
		assert.Nil(t, d.Status.Failure)
		assert.Len(t, readiness.Recorded(), checks, "no readiness check while reconciling")
	})

	t.Run("not ready in time", func(t *testing.T) {
		h.worker.Update(2, v2)
		for range 6 {
			h.waiters(3)
			h.clk.Step(10 * time.Second)
		}
		d = h.next()
		require.NotNil(t, d.Status.Failure)
		assert.Equal(t, "ManifestNotReady", d.Status.Failure.Reason)
		assert.Equal(t, payload.EffectFailAfterInterval, d.Status.Failure.Effect)
		assert.Equal(t, `Timed out after 1m0s waiting for configmap "a/one" (2 of 6) to be ready: fake: ConfigMap/a/one is not ready yet`, d.Status.Failure.Message)
		progressing, _ := conditionOf(d.Status, conditions.TypeProgressing)
		assert.Contains(t, progressing.Message, "waiting on: Timed out", "FailAfterInterval only waits at first")
		failing, _ := conditionOf(d.Status, conditions.TypeFailing)
		assert.Equal(t, metav1.ConditionFalse, failing.Status)
	})
}

// TestWorkerPreconditionsBlockAnUpdateUnlessForced: a failing precondition blocks an
// update (and only an update); forcing the desired release skips it.
func TestWorkerPreconditionsBlockAnUpdateUnlessForced(t *testing.T) {
	var checks []string
	h := newHarness(t, func(c *payload.Config) {
		c.Status = payload.Status{Release: v1, State: payload.StateReconciling, NextApplyTime: ptr.To(converge.NewMicroTime(t0.Add(time.Hour))),
			History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: "1.0.0", Image: v1.Image}}}
		c.Preconditions = payload.PreconditionsFunc(func(_ context.Context, from, to payload.Release) error {
			checks = append(checks, from.Version+"->"+to.Version)
			return errors.New("ClusterOperator network is not upgradeable")
		})
	})
	h.worker.Update(2, v2)
	d := h.next()
	require.NotNil(t, d.Status.Failure)
	assert.Equal(t, "UpgradePreconditionCheckFailed", d.Status.Failure.Reason)
	assert.Equal(t, "Preconditions failed for the update to 2.0.0: ClusterOperator network is not upgradeable", d.Status.Failure.Message)
	assert.Empty(t, h.applier.Recorded(), "nothing is applied")
	assert.Equal(t, []string{"1.0.0->2.0.0"}, checks)

	forced := v2
	forced.Force = true
	h.worker.Update(3, forced)
	h.clk.Step(d.RequeueAfter)
	d = h.next()
	assert.Nil(t, d.Status.Failure, "a forced release skips the preconditions")
	assert.Equal(t, []string{"1.0.0->2.0.0"}, checks)
	assert.Equal(t, []payload.State{payload.StateUpdating}, statesOf(h.applier.Recorded()))
}

// TestWorkerSameDigestThroughAMirrorStartsNoUpdate: the same release pulled by digest
// through a mirror registry is no new release.
func TestWorkerSameDigestThroughAMirrorStartsNoUpdate(t *testing.T) {
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	upstream := payload.Release{Version: "4.15.1", Image: "quay.io/openshift/release" + digest}
	mirrored := payload.Release{Image: "mirror.local:5000/openshift/release" + digest}
	h := newHarness(t, nil)
	h.loader.Add(samplePayload(upstream))
	mirroredPayload := samplePayload(mirrored)
	mirroredPayload.Release.Version = "4.15.1"
	h.loader.Add(mirroredPayload)
	h.worker.Update(1, upstream)
	d := h.next()
	require.Equal(t, payload.StateReconciling, d.Status.State)

	h.worker.Update(2, mirrored)
	h.clk.Step(d.RequeueAfter)
	d = h.next()
	s := d.Status
	assert.Equal(t, payload.StateReconciling, s.State, "no update started")
	assert.Empty(t, d.Events)
	assert.Len(t, s.History, 1)
	assert.Equal(t, mirrored.Image, s.Release.Image, "the reconcile pulled from the mirror")
	assert.Equal(t, "4.15.1", s.Release.Version)
	assert.Equal(t, []payload.State{payload.StateInitializing, payload.StateReconciling}, statesOf(h.applier.Recorded()))
	assert.Equal(t, mirrored.Image, h.loader.Recorded()[1].Image)
}

// TestWorkerHistoryAndConditions: the history keeps a bounded list of releases with
// their state and times, and the conditions say what the cluster-version operator says.
func TestWorkerHistoryAndConditions(t *testing.T) {
	h := newHarness(t, func(c *payload.Config) { c.Policy.MaxHistory = 2 })
	h.applier.Push("ConfigMap/default/three", fake.PayloadOutcome{Err: errors.New("boom"), Times: 1})
	h.worker.Update(1, v1)
	d := h.next()
	progressing, _ := conditionOf(d.Status, conditions.TypeProgressing)
	assert.Equal(t, metav1.ConditionTrue, progressing.Status)
	assert.Equal(t, `Unable to apply 1.0.0: Could not update configmap "default/three" (6 of 6): boom`, progressing.Message)
	available, _ := conditionOf(d.Status, conditions.TypeAvailable)
	assert.Equal(t, metav1.ConditionFalse, available.Status)

	h.clk.Step(d.RequeueAfter)
	d = h.next()
	for _, want := range []metav1.Condition{
		{Type: conditions.TypeAvailable, Status: metav1.ConditionTrue, Message: "Done applying 1.0.0"},
		{Type: conditions.TypeProgressing, Status: metav1.ConditionFalse, Message: "Cluster version is 1.0.0"},
		{Type: conditions.TypeFailing, Status: metav1.ConditionFalse},
	} {
		got, ok := conditionOf(d.Status, want.Type)
		require.True(t, ok, want.Type)
		assert.Equal(t, want.Status, got.Status, want.Type)
		assert.Equal(t, want.Message, got.Message, want.Type)
	}
	v3 := payload.Release{Version: "3.0.0", Image: "example.com/payload:3"}
	h.loader.Add(samplePayload(v3))
	for i, r := range []payload.Release{v2, v3} {
		h.worker.Update(int64(i+2), r)
		d = h.next()
	}
	require.Len(t, d.Status.History, 2, "bounded by MaxHistory")
	assert.Equal(t, "3.0.0", d.Status.History[0].Version)
	assert.Equal(t, payload.UpdateCompleted, d.Status.History[0].State)
	assert.Equal(t, "2.0.0", d.Status.History[1].Version)
	assert.NotNil(t, d.Status.History[1].CompletionTime)
}

func TestWorkerWritesStatusThroughConflicts(t *testing.T) {
	store := &fake.PayloadStatusStore{Errs: []error{converge.ErrConflict}}
	h := newHarness(t, func(c *payload.Config) { c.StatusWriter = store })
	h.worker.Update(1, v1)
	h.next()
	h.stop()
	s := store.Current()
	assert.Equal(t, h.worker.Status(), s, "the last status is written, conflicts or not")
	assert.Equal(t, payload.StateReconciling, s.State)
}

func TestWorkerReportEffectDoesNotFail(t *testing.T) {
	h := newHarness(t, nil)
	slow := func(name string) error {
		return &payload.UpdateError{Reason: "SlowOperator", Message: "operator " + name + " is slow", Effect: payload.EffectReport}
	}
	h.applier.Push("Namespace/a", fake.PayloadOutcome{Err: slow("a")})
	h.applier.Push("Namespace/b", fake.PayloadOutcome{Err: slow("b")})
	h.worker.Update(1, v1)
	d := h.next()
	s := d.Status
	assert.Equal(t, payload.StateReconciling, s.State)
	assert.Equal(t, int32(6), s.Done)
	require.NotNil(t, s.Failure)
	assert.Equal(t, payload.EffectReport, s.Failure.Effect)
	assert.Equal(t, payload.ReasonMultipleErrors, s.Failure.Reason)
	assert.Equal(t, "Multiple errors are preventing progress:\n* operator a is slow\n* operator b is slow", s.Failure.Message)
	assert.Equal(t, 1, h.applier.Count("ConfigMap/a/one"), "the manifest after the reported one still ran")
}

func TestWorkerSwitchBackDuringAnApplyAppliesAgain(t *testing.T) {
	h := newHarness(t, nil)
	started := h.blockOn("ConfigMap/default/three")
	h.worker.Update(1, v1)
	<-started
	h.worker.Update(2, v2) // cancels v1
	h.worker.Update(3, v1) // and back: v1 again at once
	d := h.next()
	assert.True(t, d.Status.Interrupted)
	<-started
	assert.Equal(t, v1, h.worker.Status().Release)
	assert.NotContains(t, h.loader.Recorded(), v2, "v2 was never applied")
}

func TestWorkerReconcilesInSeededPermutation(t *testing.T) {
	h := newHarness(t, func(c *payload.Config) { c.Policy.ReconcileWorkers = 1 })
	h.worker.Update(1, v1)
	d := h.next()
	var orders [][]string
	for range 3 {
		applied := len(h.applier.Recorded())
		h.clk.Step(d.RequeueAfter)
		d = h.next()
		orders = append(orders, filesOf(h.applier.Recorded()[applied:]))
	}
	for _, o := range orders {
		assert.ElementsMatch(t, runLevelOrder, o)
	}
	assert.NotEqual(t, orders[0], orders[1], "each pass starts elsewhere")
}

// TestWorkerAwaitsReadinessAfterAReportedError was found by TestSimPayload: an apply
// error of EffectReport skipped the readiness wait, so the next run level started on
// an object that was not ready.
func TestWorkerAwaitsReadinessAfterAReportedError(t *testing.T) {
	readiness := &fake.PayloadReadiness{}
	h := newHarness(t, func(c *payload.Config) {
		c.Policy.Workers = 1
		c.Policy.ReadinessPoll = metav1.Duration{Duration: 10 * time.Second}
		c.Readiness = readiness
		c.Status = payload.Status{Release: v2, State: payload.StateReconciling, NextApplyTime: dueAt(time.Hour)}
	})
	h.applier.Push("ConfigMap/b/two", fake.PayloadOutcome{Err: &payload.UpdateError{Reason: "Slow", Message: "slow", Effect: payload.EffectReport}, Times: 1})
	readiness.NotReadyFor("ConfigMap/b/two", 1)
	h.worker.Update(1, v1)
	h.waiters(3) // the apply's timeout, the readiness timeout and its poll
	assert.NotContains(t, filesOf(h.applier.Recorded()), "0000_30_c_00_cm.yaml", "the next run level waits")
	h.clk.Step(10 * time.Second)
	d := h.next()
	assert.Equal(t, runLevelOrder, filesOf(h.applier.Recorded()))
	assert.Equal(t, payload.EffectReport, d.Status.Failure.Effect)
}

func TestAWorkerNotMadeByNewWorkerIsAnErrorNotAPanic(t *testing.T) {
	var nilWorker *payload.Worker
	require.ErrorIs(t, nilWorker.Start(context.Background()), converge.ErrInvalid)
	assert.Zero(t, nilWorker.Update(1, v1))
	assert.Zero(t, nilWorker.Status())
	require.ErrorIs(t, new(payload.Worker).Start(context.Background()), converge.ErrInvalid)
	assert.EqualError(t, new(payload.Worker).Start(context.Background()), "payload: invalid Worker: not made by NewWorker")
}
