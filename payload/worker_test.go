package payload_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
)

var (
	v1 = payload.Release{Version: "1.0.0", Image: "example.com/payload:1"}
	v2 = payload.Release{Version: "2.0.0", Image: "example.com/payload:2"}
)

func manifest(file, kind, namespace, name string) payload.Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("v1")
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return payload.Manifest{File: file, Document: 1, GVK: schema.GroupVersionKind{Version: "v1", Kind: kind}, Object: obj}
}

// samplePayload has six manifests over three run levels and three components.
func samplePayload(release payload.Release) *payload.Payload {
	return &payload.Payload{Release: release, Manifests: []payload.Manifest{
		manifest("0000_10_a_00_ns.yaml", "Namespace", "", "a"),
		manifest("0000_10_a_01_cm.yaml", "ConfigMap", "a", "one"),
		manifest("0000_10_b_00_ns.yaml", "Namespace", "", "b"),
		manifest("0000_20_a_02_cm.yaml", "ConfigMap", "a", "two"),
		manifest("0000_20_b_01_cm.yaml", "ConfigMap", "b", "two"),
		manifest("0000_30_c_00_cm.yaml", "ConfigMap", "default", "three"),
	}}
}

type harness struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	applier *fake.PayloadApplier
	loader  *fake.PayloadLoader
	worker  *payload.Worker
	results chan payload.ApplyResult
	events  chan string
}

func newHarness(t *testing.T, configure func(*payload.WorkerConfig)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		applier: &fake.PayloadApplier{},
		loader:  &fake.PayloadLoader{},
		results: make(chan payload.ApplyResult, 100),
		events:  make(chan string, 100),
	}
	h.loader.Add(samplePayload(v1))
	h.loader.Add(samplePayload(v2))
	cfg := payload.WorkerConfig{
		Loader:     h.loader,
		Applier:    h.applier,
		Clock:      h.clk,
		Interval:   16 * time.Minute,
		Backoff:    wait.Backoff{Steps: 1},
		Jitter:     func(d time.Duration) time.Duration { return d },
		AfterApply: func(r payload.ApplyResult) { h.results <- r },
		Events:     payload.EventRecorderFunc(func(_, reason, _ string) { h.events <- reason }),
	}
	if configure != nil {
		configure(&cfg)
	}
	w, err := payload.NewWorker(cfg)
	require.NoError(t, err)
	h.worker = w
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return h
}

// next waits for the next finished apply.
func (h *harness) next() payload.ApplyResult {
	h.t.Helper()
	select {
	case r := <-h.results:
		return r
	case <-time.After(10 * time.Second):
		require.FailNow(h.t, "no apply finished")
	}
	return payload.ApplyResult{}
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

func TestWorkerInitializesThenReconciles(t *testing.T) {
	h := newHarness(t, nil)
	assert.Equal(t, payload.Status{}, h.worker.Update(1, v1), "Update returns the status before any work")

	r := h.next()
	assert.Equal(t, payload.ApplyResult{Release: v1, State: payload.StateInitializing, RetryAfter: 16 * time.Minute}, r)
	s := h.worker.Status()
	assert.Equal(t, int64(1), s.Generation)
	assert.Equal(t, 6, s.Done)
	assert.Equal(t, 6, s.Total)
	assert.Equal(t, 1, s.Completed)
	assert.True(t, s.Reconciling)
	assert.False(t, s.Initial)
	assert.Nil(t, s.Failure)
	assert.Equal(t, v1, s.Actual)
	assert.Equal(t, h.clk.Now().Truncate(time.Second), s.LastProgress.Time)
	assert.Equal(t, []payload.State{payload.StateInitializing}, statesOf(h.applier.Recorded()))

	h.clk.Step(16 * time.Minute)
	r = h.next()
	assert.Equal(t, payload.StateReconciling, r.State)
	require.NoError(t, r.Err)
	assert.Equal(t, 2, h.worker.Status().Completed)
	calls := h.applier.Recorded()
	assert.Len(t, calls, 12, "the payload is applied again in full")
	assert.Equal(t, []payload.State{payload.StateInitializing, payload.StateReconciling}, statesOf(calls))
	assert.LessOrEqual(t, h.applier.Concurrency(), 6)
	assert.Equal(t, []payload.Release{v1}, h.loader.Recorded(), "the payload is loaded once")
	assert.Equal(t, "PayloadLoaded", <-h.events)
	assert.Equal(t, "PayloadApplied", <-h.events)
}

func TestWorkerUpdateCancelsTheApplyInFlight(t *testing.T) {
	h := newHarness(t, nil)
	blocked := samplePayload(v1)
	blocked.Manifests = append(blocked.Manifests, manifest("0000_40_d_00_cm.yaml", "ConfigMap", "d", "stuck"))
	h.loader.Add(blocked)
	h.applier.BlockUntilCancelled("ConfigMap/d/stuck")
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

	r := h.next()
	assert.Equal(t, v2, r.Release, "the v1 apply was superseded, not finished")
	assert.Equal(t, payload.StateUpdating, r.State)
	require.NoError(t, r.Err)
	s := h.worker.Status()
	assert.Equal(t, v2, s.Actual)
	assert.Equal(t, int64(2), s.Generation)
	assert.True(t, s.Reconciling)
	assert.Equal(t, 6, s.Total)
	assert.Equal(t, 1, h.applier.Count("ConfigMap/d/stuck"))
	assert.Equal(t, []payload.Release{v1, v2}, h.loader.Recorded())
}

func TestWorkerBackoffGrowsThenResetsAfterSuccess(t *testing.T) {
	h := newHarness(t, nil)
	boom := errors.New("boom")
	h.applier.FailTimes("ConfigMap/b/two", 3, boom)
	h.worker.Update(1, v1)

	steps := []struct {
		state payload.State
		fail  bool
		wait  time.Duration
	}{
		{payload.StateInitializing, true, 2 * time.Minute},
		{payload.StateInitializing, true, 4 * time.Minute},
		{payload.StateInitializing, true, 8 * time.Minute},
		{payload.StateInitializing, false, 16 * time.Minute},
		{payload.StateReconciling, true, 2 * time.Minute}, // reset: the cluster-version operator would wait 16m
		{payload.StateReconciling, false, 16 * time.Minute},
	}
	for i, step := range steps {
		if i == 4 {
			h.applier.FailTimes("ConfigMap/b/two", 1, boom)
		}
		r := h.next()
		assert.Equal(t, step.state, r.State, "apply %d", i)
		assert.Equal(t, step.fail, r.Err != nil, "apply %d: %v", i, r.Err)
		assert.Equal(t, step.wait, r.RetryAfter, "apply %d", i)
		if step.fail {
			s := h.worker.Status()
			require.NotNil(t, s.Failure)
			assert.Equal(t, "UpdatePayloadFailed", s.Failure.Reason)
			assert.Contains(t, s.Failure.Message, `Could not update configmap "b/two"`)
		}
		h.clk.Step(r.RetryAfter)
	}
	h.next()
}

func TestWorkerApplyTimeout(t *testing.T) {
	h := newHarness(t, func(c *payload.WorkerConfig) { c.ApplyTimeout = 5 * time.Minute })
	h.applier.BlockUntilCancelled("ConfigMap/default/three")
	started := make(chan struct{}, 10)
	h.applier.OnApply = func(c fake.PayloadApply) {
		if c.Ref == "ConfigMap/default/three" {
			started <- struct{}{}
		}
	}
	h.worker.Update(1, v1)
	<-started
	h.clk.Step(5 * time.Minute)
	r := h.next()
	require.ErrorIs(t, r.Err, payload.ErrApplyTimeout)
	s := h.worker.Status()
	require.NotNil(t, s.Failure)
	assert.Equal(t, "UpdatePayloadTimedOut", s.Failure.Reason)
	assert.Contains(t, s.Failure.Message, "timed out after 5m0s with ")
	assert.Contains(t, s.Failure.Message, " of 6 manifests applied")
	assert.Equal(t, payload.EffectFail, s.Failure.Effect)
}

func TestWorkerLoadFailureBacksOff(t *testing.T) {
	h := newHarness(t, nil)
	h.loader.FailNext(v1, errors.New("registry unavailable"))
	h.worker.Update(1, v1)
	r := h.next()
	require.Error(t, r.Err)
	assert.Equal(t, 2*time.Minute, r.RetryAfter)
	s := h.worker.Status()
	require.NotNil(t, s.Failure)
	assert.Equal(t, "UpdatePayloadRetrievalFailed", s.Failure.Reason)
	assert.Contains(t, s.Failure.Message, "registry unavailable")
	assert.Empty(t, h.applier.Recorded())

	h.clk.Step(r.RetryAfter)
	r = h.next()
	require.NoError(t, r.Err)
	assert.Nil(t, h.worker.Status().Failure)
}

func TestWorkerRestartsFromPersistedStatus(t *testing.T) {
	tests := []struct {
		name      string
		persisted payload.Status
		want      payload.State
	}{
		{name: "fresh", persisted: payload.Status{}, want: payload.StateInitializing},
		{name: "reconciling the same release", persisted: payload.Status{Actual: v1, Reconciling: true, Completed: 3}, want: payload.StateReconciling},
		{name: "initializing the same release", persisted: payload.Status{Actual: v1, Initial: true}, want: payload.StateInitializing},
		{name: "another release", persisted: payload.Status{Actual: v2, Reconciling: true}, want: payload.StateUpdating},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *payload.WorkerConfig) { c.Status = tt.persisted })
			h.worker.Update(4, v1)
			r := h.next()
			assert.Equal(t, tt.want, r.State)
			if tt.want == payload.StateReconciling {
				assert.Equal(t, 4, h.worker.Status().Completed, "the completed count continues")
			}
		})
	}
}

func TestWorkerUpdatingFollowsRunLevels(t *testing.T) {
	h := newHarness(t, func(c *payload.WorkerConfig) {
		c.Workers = 1
		c.Status = payload.Status{Actual: v2, Reconciling: true}
	})
	h.worker.Update(1, v1)
	r := h.next()
	require.Equal(t, payload.StateUpdating, r.State)
	var files []string
	for _, c := range h.applier.Recorded() {
		files = append(files, c.File)
	}
	assert.Equal(t, []string{
		"0000_10_a_00_ns.yaml", "0000_10_a_01_cm.yaml", "0000_10_b_00_ns.yaml",
		"0000_20_a_02_cm.yaml", "0000_20_b_01_cm.yaml", "0000_30_c_00_cm.yaml",
	}, files)
	assert.Equal(t, 1, h.applier.Concurrency())
}

func TestWorkerReportEffectDoesNotFail(t *testing.T) {
	h := newHarness(t, nil)
	slow := func(name string) error {
		return &payload.UpdateError{Reason: "SlowOperator", Message: "operator " + name + " is slow", Effect: payload.EffectReport}
	}
	// Initializing runs the three components in parallel: both reports are collected concurrently.
	h.applier.FailForever("Namespace/a", slow("a"))
	h.applier.FailForever("Namespace/b", slow("b"))
	h.worker.Update(1, v1)
	r := h.next()
	require.NoError(t, r.Err)
	s := h.worker.Status()
	assert.True(t, s.Reconciling)
	assert.Equal(t, 6, s.Done)
	require.NotNil(t, s.Failure)
	assert.Equal(t, payload.EffectReport, s.Failure.Effect)
	assert.Equal(t, payload.ReasonMultipleErrors, s.Failure.Reason)
	assert.Equal(t, "Multiple errors are preventing progress:\n* operator a is slow\n* operator b is slow", s.Failure.Message)
	assert.Equal(t, 1, h.applier.Count("ConfigMap/a/one"), "the manifest after the reported one still ran")
}

func TestWorkerNotifiesStatus(t *testing.T) {
	got := make(chan payload.Status, 100)
	h := newHarness(t, func(c *payload.WorkerConfig) { c.OnStatus = func(s payload.Status) { got <- s } })
	h.worker.Update(1, v1)
	h.next()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case s := <-got:
			if s.Reconciling {
				assert.Equal(t, 1, s.Completed)
				return
			}
		case <-deadline:
			require.FailNow(t, "the reconciling edge was not notified")
		}
	}
}

func TestNewWorkerRejectsBadConfig(t *testing.T) {
	applier, loader := &fake.PayloadApplier{}, &fake.PayloadLoader{}
	tests := []struct {
		name string
		cfg  payload.WorkerConfig
	}{
		{name: "no loader", cfg: payload.WorkerConfig{Applier: applier}},
		{name: "no applier", cfg: payload.WorkerConfig{Loader: loader}},
		{name: "negative interval", cfg: payload.WorkerConfig{Loader: loader, Applier: applier, Interval: -time.Second}},
		{name: "negative workers", cfg: payload.WorkerConfig{Loader: loader, Applier: applier, Workers: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := payload.NewWorker(tt.cfg)
			require.ErrorIs(t, err, payload.ErrInvalid)
		})
	}
}

func TestWorkerStartsOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.worker.Update(1, v1)
	h.next()
	require.Error(t, h.worker.Start(context.Background()))
	assert.Equal(t, h.worker.Status(), h.worker.Update(1, payload.Release{}), "an empty release is ignored")
}

func TestRetryDelay(t *testing.T) {
	tests := []struct {
		errors int
		want   time.Duration
	}{{0, 16 * time.Minute}, {1, 2 * time.Minute}, {2, 4 * time.Minute}, {3, 8 * time.Minute}, {4, 16 * time.Minute}, {9, 16 * time.Minute}}
	for _, tt := range tests {
		assert.Equal(t, tt.want, payload.RetryDelay(16*time.Minute, tt.errors), "errors=%d", tt.errors)
	}
}

func TestWorkerInitializingRunsEveryNodeAtOnce(t *testing.T) {
	h := newHarness(t, func(c *payload.WorkerConfig) { c.Workers = 1 })
	// The sample payload flattens into five nodes: (10,a) (10,b) (20,a) (20,b) (30,c).
	var mu sync.Mutex
	started := 0
	all := make(chan struct{})
	h.applier.OnApply = func(fake.PayloadApply) {
		mu.Lock()
		started++
		if started == 5 {
			close(all)
		}
		mu.Unlock()
		select { // hold every call until five run at once
		case <-all:
		case <-time.After(5 * time.Second):
		}
	}
	h.worker.Update(1, v1)
	require.NoError(t, h.next().Err)
	assert.Equal(t, 5, h.applier.Concurrency())
}

func TestWorkerReconcilesInSeededPermutation(t *testing.T) {
	h := newHarness(t, func(c *payload.WorkerConfig) {
		c.ReconcileWorkers = 1
		c.Status = payload.Status{Actual: v1, Reconciling: true}
	})
	h.worker.Update(1, v1)
	r := h.next()
	require.Equal(t, payload.StateReconciling, r.State)

	// Attempt 0: epoch 0, no shift.
	order := payload.ShiftOrder(payload.PermuteOrder(payload.FlattenByNumberAndComponent, rand.New(rand.NewPCG(0, 0))), 0, 8)
	graph, err := payload.BuildGraph(payload.NewTasks(samplePayload(v1).Manifests, wait.Backoff{Steps: 1}), order)
	require.NoError(t, err)
	var want []string
	payload.RunGraph(context.Background(), graph, 1, func(_ context.Context, tasks []*payload.Task) error {
		for _, task := range tasks {
			want = append(want, task.Manifest.File)
		}
		return nil
	})
	var got []string
	for _, c := range h.applier.Recorded() {
		got = append(got, c.File)
	}
	assert.Equal(t, want, got)
	assert.NotEqual(t, []string{
		"0000_10_a_00_ns.yaml", "0000_10_a_01_cm.yaml", "0000_10_b_00_ns.yaml",
		"0000_20_a_02_cm.yaml", "0000_20_b_01_cm.yaml", "0000_30_c_00_cm.yaml",
	}, got, "reconciling does not follow the payload order")
}

func TestWorkerSwitchBackDuringAnApplyAppliesAgain(t *testing.T) {
	tests := []struct {
		name      string
		persisted payload.Status
		state     payload.State
	}{
		{name: "reconciling", persisted: payload.Status{Actual: v1, Reconciling: true}, state: payload.StateReconciling},
		{name: "initializing", persisted: payload.Status{}, state: payload.StateInitializing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *payload.WorkerConfig) { c.Status = tt.persisted })
			const stuck = "ConfigMap/default/three"
			h.applier.Push(stuck, fake.PayloadOutcome{Block: true, Times: 1})
			started, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			h.applier.OnApply = func(c fake.PayloadApply) {
				if c.Ref == stuck {
					once.Do(func() {
						close(started)
						<-release // both updates land before the superseded apply returns
					})
				}
			}

			h.worker.Update(1, v1)
			<-started
			h.worker.Update(2, v2)
			h.worker.Update(3, v1)
			close(release)

			r := h.next()
			assert.Equal(t, v1, r.Release, "v2 was never picked up")
			assert.Equal(t, tt.state, r.State)
			require.NoError(t, r.Err)
			assert.Equal(t, 2, h.applier.Count(stuck), "the superseded apply is done again, without waiting for the clock")
			s := h.worker.Status()
			assert.Equal(t, int64(3), s.Generation)
			assert.True(t, s.Reconciling)
			assert.Nil(t, s.Failure)
			assert.Equal(t, []payload.Release{v1}, h.loader.Recorded())
		})
	}
}
