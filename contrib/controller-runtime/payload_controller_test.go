package crconverge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

var clusterKey = client.ObjectKey{Namespace: "ns", Name: "cluster"}

func testPayload(release string, generation int64) *testapi.Payload {
	return &testapi.Payload{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterKey.Namespace, Name: clusterKey.Name, Generation: generation},
		Spec:       testapi.PayloadSpec{Release: release},
	}
}

// releases loads releases "1.0" and "1.1", each a ConfigMap "settings"
// holding its version.
func releases() *fake.PayloadLoader {
	l := &fake.PayloadLoader{}
	for _, v := range []string{"1.0", "1.1"} {
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "ns", "name": "settings"},
			"data":     map[string]any{"version": v},
		}}
		l.Add(&payload.Payload{Release: payload.Release{Version: v}, Manifests: []manifest.Manifest{
			{File: "0000_10_settings.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm},
		}})
	}
	return l
}

// payloadHarness runs a payload controller's reconciler and its worker on
// the fake client, with the status writes it makes in writes.
type payloadHarness struct {
	t      *testing.T
	c      client.WithWatch
	mgr    manager.Manager
	events *eventLog
	r      *payloadReconciler
	b      blueprint
	writes chan payload.Status
}

// newPayloadHarness returns the harness of a fake client holding objs, with
// change applied to the options, and starts its worker until the test ends.
// beforeWrite, when set, runs before every status write.
func newPayloadHarness(t *testing.T, change func(*PayloadOptions), beforeWrite func(client.Object), objs ...client.Object) *payloadHarness {
	t.Helper()
	h := &payloadHarness{t: t, writes: make(chan payload.Status, 1000)}
	h.c = interceptor.NewClient(newTestClient(t, objs...), interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if beforeWrite != nil {
				beforeWrite(obj)
			}
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			if p := asPayload(obj); p != nil {
				h.writes <- *p.Status.DeepCopy()
			}
			return nil
		},
	})
	h.mgr, h.events = testManager(t, h.c, nil)
	opts := PayloadOptions{For: testPayload("", 0), Engine: payload.Config{Loader: releases(), Clock: clocktesting.NewFakeClock(t0)}}
	if change != nil {
		change(&opts)
	}
	var err error
	h.r, h.b, err = newPayloadReconciler(h.mgr, opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- LeaderElected(h.r.worker.run).Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "the worker stops cleanly")
	})
	return h
}

// asPayload returns obj as a Payload (the configured controllers write
// statuses as unstructured objects), or nil for any other kind.
func asPayload(obj client.Object) *testapi.Payload {
	switch o := obj.(type) {
	case *testapi.Payload:
		return o
	case *unstructured.Unstructured:
		p := &testapi.Payload{}
		if o.GetKind() == "Payload" && runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, p) == nil {
			return p
		}
	}
	return nil
}

// reconcile runs one reconcile of the Payload.
func (h *payloadHarness) reconcile() error {
	h.t.Helper()
	_, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: clusterKey})
	return err
}

// await waits for a status write that done accepts, and returns it.
func (h *payloadHarness) await(what string, done func(payload.Status) bool) payload.Status {
	h.t.Helper()
	deadline := time.After(time.Minute) // a bound on a wait for an event that comes, never a pace
	for {
		select {
		case st := <-h.writes:
			if done(st) {
				return st
			}
		case <-deadline:
			h.t.Fatalf("no status write: %s", what)
		}
	}
}

// get reads the Payload.
func (h *payloadHarness) get() *testapi.Payload {
	h.t.Helper()
	p := &testapi.Payload{}
	require.NoError(h.t, h.c.Get(context.Background(), clusterKey, p))
	return p
}

// update changes the Payload's spec and moves its generation, as the API
// server does.
func (h *payloadHarness) update(change func(*testapi.Payload)) {
	h.t.Helper()
	p := h.get()
	change(p)
	p.Generation++
	require.NoError(h.t, h.c.Update(context.Background(), p))
}

// applied reports a status of release, completed.
func applied(release string) func(payload.Status) bool {
	return func(st payload.Status) bool {
		return st.Release.Version == release && st.Total == 1 && st.Done == 1 && st.Completed >= 1 &&
			len(st.History) > 0 && st.History[0].State == payload.UpdateCompleted
	}
}

func TestPayloadControllerAppliesTheResourcesRelease(t *testing.T) {
	h := newPayloadHarness(t, nil, nil, testPayload("1.0", 1))
	require.NoError(t, h.reconcile())
	h.await("release 1.0 applied", applied("1.0"))
	cm := &corev1.ConfigMap{}
	require.NoError(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "settings"}, cm))
	assert.Equal(t, "1.0", cm.Data["version"])
	assert.Contains(t, h.events.reasons(clusterKey), "PayloadApplied", "the worker's events are about the resource")
	for _, e := range h.events.recorded() {
		assert.Equal(t, "Apply", e.Action)
	}

	h.update(func(p *testapi.Payload) { p.Spec.Release = "1.1" })
	require.NoError(t, h.reconcile())
	st := h.await("release 1.1 applied", applied("1.1"))
	assert.Equal(t, int64(2), st.ObservedGeneration)
	require.NoError(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "settings"}, cm))
	assert.Equal(t, "1.1", cm.Data["version"])
}

func TestPayloadControllerCarriesOnFromThePersistedStatus(t *testing.T) {
	started := metav1.NewTime(t0.Add(-time.Hour))
	p := testPayload("1.0", 1)
	p.Status = payload.Status{
		ObservedGeneration: 1, Release: payload.Release{Version: "1.0"}, State: payload.StateReconciling,
		Done: 1, Total: 1, Completed: 5,
		History: []payload.UpdateHistory{{State: payload.UpdateCompleted, StartedTime: started, CompletionTime: &started, Version: "1.0"}},
	}
	h := newPayloadHarness(t, nil, nil, p)
	require.NoError(t, h.reconcile())
	st := h.await("the persisted release reconciled", func(st payload.Status) bool { return st.Completed > 5 })
	require.Len(t, st.History, 1, "the same release: no new history")
	assert.True(t, started.Equal(&st.History[0].StartedTime), "the history is the persisted one")
}

// TestPayloadControllerAppliesOnlyTheResourcesRelease: a worker started from a
// persisted status whose release the resource no longer names (the operator was
// down while its release went back) applies nothing of that release: it is made with
// the resource's.
func TestPayloadControllerAppliesOnlyTheResourcesRelease(t *testing.T) {
	p := testPayload("1.0", 2)
	p.Status = payload.Status{ObservedGeneration: 1, Release: payload.Release{Version: "1.1"}, State: payload.StateUpdating,
		Interrupted: true, Total: 1, History: []payload.UpdateHistory{{State: payload.UpdatePartial, Version: "1.1"}}}
	applied := make(chan string, 100)
	h := newPayloadHarness(t, func(o *PayloadOptions) {
		o.Engine.Applier = payload.ApplierFunc(func(_ context.Context, m *manifest.Manifest, _ payload.State) error {
			version, _, _ := unstructured.NestedString(m.Object.Object, "data", "version")
			applied <- version
			return nil
		})
	}, nil, p)
	require.NoError(t, h.reconcile())
	h.await("the resource's release applied", func(st payload.Status) bool { return st.Release.Version == "1.0" && st.Completed > 0 })
	for {
		select {
		case version := <-applied:
			assert.Equal(t, "1.0", version, "a manifest of a release the resource no longer names was applied")
		default:
			return
		}
	}
}

func TestPayloadControllerRestartsTheWorkerOnANewPolicy(t *testing.T) {
	h := newPayloadHarness(t, nil, nil, testPayload("1.0", 1))
	require.NoError(t, h.reconcile())
	before := h.await("release 1.0 applied", applied("1.0"))
	h.r.worker.mu.Lock()
	first := h.r.worker.running
	h.r.worker.mu.Unlock()

	interval := metav1.Duration{Duration: 10 * time.Minute}
	h.update(func(p *testapi.Payload) { p.Spec.Policy.Interval = interval })
	require.NoError(t, h.reconcile())
	st := h.await("the new generation written", func(st payload.Status) bool { return st.ObservedGeneration == 2 })
	assert.Equal(t, before.History, st.History, "the new worker carries on from the stopped one's status")
	assert.GreaterOrEqual(t, st.Completed, before.Completed)
	h.r.worker.mu.Lock()
	defer h.r.worker.mu.Unlock()
	assert.NotSame(t, first, h.r.worker.running, "another worker runs")
	assert.Equal(t, interval, h.r.worker.policy.Interval)
}

func TestPayloadControllerRefusesAnInvalidPolicy(t *testing.T) {
	h := newPayloadHarness(t, nil, nil, testPayload("1.0", 1))
	require.NoError(t, h.reconcile())
	h.await("release 1.0 applied", applied("1.0"))
	h.update(func(p *testapi.Payload) { p.Spec.Policy.Workers = -1 })
	err := h.reconcile()
	assert.ErrorIs(t, err, reconcile.TerminalError(nil))
	assert.ErrorIs(t, err, converge.ErrInvalid)
	h.r.worker.mu.Lock()
	defer h.r.worker.mu.Unlock()
	assert.NotNil(t, h.r.worker.running, "the worker keeps running")
	assert.Zero(t, h.r.worker.policy.Workers, "with its policy")
}

func TestPayloadControllerIgnoresAnOlderCopy(t *testing.T) {
	h := newPayloadHarness(t, nil, nil, testPayload("1.1", 2))
	require.NoError(t, h.reconcile())
	h.await("release 1.1 applied", applied("1.1"))
	desired := func() (int64, string) {
		h.r.worker.mu.Lock()
		defer h.r.worker.mu.Unlock()
		return h.r.worker.generation, h.r.worker.release.Version
	}
	require.NoError(t, h.r.worker.want(context.Background(), testPayload("1.0", 1)), "a cache not caught up yet")
	gen, release := desired()
	assert.Equal(t, int64(2), gen)
	assert.Equal(t, "1.1", release)

	recreated := testPayload("1.0", 1)
	recreated.UID = "another"
	require.NoError(t, h.r.worker.want(context.Background(), recreated), "a resource deleted and created again")
	gen, release = desired()
	assert.Equal(t, int64(1), gen, "starts its generations again")
	assert.Equal(t, "1.0", release)
}

func TestPayloadControllerCreatesAMissingResourceOnlyWhenAsked(t *testing.T) {
	t.Run("with Create, the resource is created as given and its release applied", func(t *testing.T) {
		h := newPayloadHarness(t, func(o *PayloadOptions) { o.For, o.Create = testPayload("1.0", 0), true }, nil)
		require.NoError(t, h.reconcile())
		assert.Equal(t, "1.0", h.get().Spec.Release)
		require.NoError(t, h.reconcile())
		h.await("release 1.0 applied", applied("1.0"))
	})
	t.Run("without, the worker waits for the resource", func(t *testing.T) {
		h := newPayloadHarness(t, func(o *PayloadOptions) { o.For = testPayload("1.0", 0) }, nil)
		require.NoError(t, h.reconcile())
		err := h.c.Get(context.Background(), clusterKey, &testapi.Payload{})
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "not created: %v", err)
		h.r.worker.mu.Lock()
		defer h.r.worker.mu.Unlock()
		assert.Nil(t, h.r.worker.running)
		assert.Nil(t, h.r.worker.next)
	})
}

// A status write that lost a race to another writer is read afresh and
// written again, keeping the other writer's change.
func TestPayloadControllerWritesAgainAfterAConflict(t *testing.T) {
	var h *payloadHarness
	raced := false
	h = newPayloadHarness(t, nil, func(obj client.Object) {
		if raced {
			return
		}
		raced = true
		p := h.get()
		p.Annotations = map[string]string{"other": "writer"}
		require.NoError(t, h.c.Update(context.Background(), p))
	}, testPayload("1.0", 1))
	require.NoError(t, h.reconcile())
	h.await("release 1.0 applied", applied("1.0"))
	assert.True(t, raced)
	assert.Equal(t, "writer", h.get().Annotations["other"])
}

func TestPayloadControllerWatchesItsResourceOnly(t *testing.T) {
	h := newPayloadHarness(t, nil, nil)
	other := testPayload("1.0", 1)
	other.Name = "other"
	accepts := func(o client.Object) bool {
		for _, p := range h.b.forPredicates {
			if !p.Create(event.CreateEvent{Object: o}) {
				return false
			}
		}
		return true
	}
	assert.True(t, accepts(testPayload("1.0", 1)))
	assert.False(t, accepts(other))

	q := &controllertest.TypedQueue[reconcile.Request]{TypedInterface: workqueue.NewTyped[reconcile.Request]()}
	defer q.ShutDown()
	require.Len(t, h.b.sources, 1)
	require.NoError(t, h.b.sources[0].Start(context.Background(), q))
	require.Equal(t, 1, q.Len())
	req, _ := q.Get()
	assert.Equal(t, clusterKey, req.NamespacedName, "the resource is reconciled once at start, missing or not")
}

func TestNewPayloadControllerRejectsBadOptions(t *testing.T) {
	mgr, _ := testManager(t, newTestClient(t), nil)
	tests := []struct {
		name   string
		mgr    manager.Manager
		change func(*PayloadOptions)
		want   string
	}{
		{name: "a nil manager", change: func(*PayloadOptions) {}, want: "nil manager"},
		{name: "a typed nil manager", mgr: (*nilManager)(nil), change: func(*PayloadOptions) {}, want: "nil manager"},
		{name: "a typed nil For", mgr: mgr, change: func(o *PayloadOptions) { o.For = (*testapi.Payload)(nil) }, want: "nil For"},
		{name: "a For without a name", mgr: mgr, change: func(o *PayloadOptions) { o.For = &testapi.Payload{} }, want: "For has no name"},
		{name: "no loader", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.Loader = nil }, want: "Engine: "},
		{name: "a typed nil loader", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.Loader = (*fake.PayloadLoader)(nil) }, want: "Engine: "},
		{name: "the engine's policy", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.Policy.Workers = 3 }, want: "Policy, Status, Desired and Generation"},
		{name: "the engine's desired release", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.Desired = payload.Release{Version: "9"} }, want: "Policy, Status, Desired and Generation"},
		{name: "the engine's status", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.Status.Done = 3 }, want: "Policy, Status, Desired and Generation"},
		{name: "the engine's status writer", mgr: mgr, change: func(o *PayloadOptions) {
			o.Engine.StatusWriter = &fake.PayloadStatusStore{}
		}, want: "StatusWriter and OnResult"},
		{name: "the engine's OnResult", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.OnResult = func(converge.Result) {} }, want: "StatusWriter and OnResult"},
		{name: "a negative notify interval", mgr: mgr, change: func(o *PayloadOptions) { o.Engine.NotifyInterval = -time.Second }, want: "Engine: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := PayloadOptions{For: testPayload("", 0), Engine: payload.Config{Loader: releases()}}
			tt.change(&opts)
			_, err := NewPayloadController(tt.mgr, opts)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorContains(t, err, "crconverge: invalid PayloadOptions")
		})
	}
}

// A worker about to start starts with the latest policy, still carrying on
// from the status read for it.
func TestPayloadControllerStartsTheLatestPolicy(t *testing.T) {
	p := testPayload("1.0", 1)
	p.Status.Completed = 7
	c := newTestClient(t, p)
	mgr, _ := testManager(t, c, nil)
	r, _, err := newPayloadReconciler(mgr, PayloadOptions{For: testPayload("", 0), Engine: payload.Config{Loader: releases()}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, r.worker.want(ctx, p))
	next := p.DeepCopyObject().(*testapi.Payload)
	next.Generation, next.Spec.Policy.Workers = 2, 3
	require.NoError(t, r.worker.want(ctx, next))
	require.NotNil(t, r.worker.next, "no loop runs: the worker is still to start")
	assert.Equal(t, int32(3), r.worker.next.policy.Workers)
	require.NotNil(t, r.worker.next.status)
	assert.Equal(t, int32(7), r.worker.next.status.Completed, "the persisted status")
	assert.Equal(t, int64(2), r.worker.generation)
}
