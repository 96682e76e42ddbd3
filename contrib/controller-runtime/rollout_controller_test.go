package crconverge

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// rolloutOptions are the options of the rollout tests: installers and
// operands in "operand", operands named etcd-<node>.
func rolloutOptions() RolloutOptions {
	return RolloutOptions{
		For:    &testapi.Rollout{},
		Pods:   kube.RolloutPodsConfig{Namespace: "operand", Operand: "etcd", InstallerPod: installerTemplate},
		Engine: rollout.Config{Clock: clocktesting.NewFakePassiveClock(t0)},
	}
}

func testRollout(name string, revision int32) *testapi.Rollout {
	return &testapi.Rollout{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: testapi.RolloutSpec{Revision: revision}}
}

// reconcileKey runs one reconcile of key through the controller
// NewRolloutController builds on mgr.
func reconcileRollout(t *testing.T, mgr manager.Manager, key client.ObjectKey) (reconcile.Result, error) {
	t.Helper()
	c, err := NewRolloutController(mgr, rolloutOptions())
	require.NoError(t, err)
	return c.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
}

func TestRolloutControllerReconciles(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Name: "etcd"}
	get := func(t *testing.T, c client.Client) *testapi.Rollout {
		t.Helper()
		ro := &testapi.Rollout{}
		require.NoError(t, c.Get(ctx, key, ro))
		return ro
	}
	installers := func(t *testing.T, c client.Client) []string {
		t.Helper()
		var pods corev1.PodList
		require.NoError(t, c.List(ctx, &pods, client.InNamespace("operand")))
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name)
		}
		return names
	}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{name: "a pass writes its decision on the resource's status, then acts on it", run: func(t *testing.T) {
			c := newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), testRollout("etcd", 1))
			before := get(t, c).ResourceVersion
			mgr, _ := testManager(t, c, nil)
			_, err := reconcileRollout(t, mgr, key)
			require.NoError(t, err)
			ro := get(t, c)
			assert.NotEqual(t, before, ro.ResourceVersion, "the status is written")
			assert.Equal(t, int32(1), ro.Status.LatestAvailableRevision, "the spec's revision is the latest available")
			require.Len(t, ro.Status.NodeStatuses, 1)
			assert.Equal(t, int32(1), ro.Status.NodeStatuses[0].TargetRevision)
			assert.Equal(t, []string{"installer-1-a"}, installers(t, c))
		}},
		{name: "a conflict reads the resource afresh, past a lagging cache, and decides again", run: func(t *testing.T) {
			c := newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), testRollout("etcd", 1))
			cache := laggingCache(t, c, testRollout("etcd", 0))
			ro := get(t, c)
			ro.Spec.Revision = 2 // another writer, which the cache has not seen yet
			require.NoError(t, c.Update(ctx, ro))
			mgr, _ := testManager(t, c, cache)
			_, err := reconcileRollout(t, mgr, key)
			require.NoError(t, err)
			ro = get(t, c)
			assert.Equal(t, int32(2), ro.Status.LatestAvailableRevision, "decided on the resource as it is")
			require.Len(t, ro.Status.NodeStatuses, 1)
			assert.Equal(t, int32(2), ro.Status.NodeStatuses[0].TargetRevision)
			assert.Equal(t, []string{"installer-2-a"}, installers(t, c), "nothing of the lost decision was done")
		}},
		{name: "the engine's events are recorded about the resource", run: func(t *testing.T) {
			c := newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), testRollout("etcd", 1))
			mgr, events := testManager(t, c, nil)
			_, err := reconcileRollout(t, mgr, key)
			require.NoError(t, err)
			assert.Contains(t, events.reasons(key), rollout.ReasonNodeTargetRevisionChanged)
			for _, e := range events.recorded() {
				assert.Equal(t, "Rollout", e.Action)
				assert.Equal(t, "*testapi.Rollout", e.Kind)
			}
		}},
		{name: "the latest revision never goes down", run: func(t *testing.T) {
			ro := testRollout("etcd", 1)
			ro.Status.LatestAvailableRevision = 3
			c := newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), ro)
			mgr, _ := testManager(t, c, nil)
			_, err := reconcileRollout(t, mgr, key)
			require.NoError(t, err)
			assert.Equal(t, int32(3), get(t, c).Status.LatestAvailableRevision)
			assert.Equal(t, []string{"installer-3-a"}, installers(t, c))
		}},
		{name: "an invalid policy is a terminal error, and nothing is written or done", run: func(t *testing.T) {
			ro := testRollout("etcd", 1)
			ro.Spec.Policy.MaxUnavailable = -1
			c := newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), ro)
			before := get(t, c).ResourceVersion
			mgr, _ := testManager(t, c, nil)
			_, err := reconcileRollout(t, mgr, key)
			assert.ErrorIs(t, err, reconcile.TerminalError(nil))
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.Equal(t, before, get(t, c).ResourceVersion)
			assert.Empty(t, installers(t, c))
		}},
		{name: "a status conflict left after the engine's retries requeues without an error", run: func(t *testing.T) {
			c := newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), testRollout("etcd", 1))
			mgr, _ := testManager(t, conflictingStatus(c), nil)
			res, err := reconcileRollout(t, mgr, key)
			require.NoError(t, err)
			assert.Equal(t, ConflictRequeueAfter, res.RequeueAfter)
		}},
		{name: "a missing resource is nothing to do", run: func(t *testing.T) {
			mgr, _ := testManager(t, newTestClient(t), nil)
			res, err := reconcileRollout(t, mgr, key)
			assert.NoError(t, err)
			assert.Zero(t, res)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

// conflictingStatus is c with every status write lost to another writer.
func conflictingStatus(c client.WithWatch) client.WithWatch {
	return interceptStatus(c, func(obj client.Object) error {
		return apierrors.NewConflict(testapi.GroupVersion.WithResource("rollouts").GroupResource(), obj.GetName(), errors.New("another writer"))
	})
}

func TestRolloutControllerWatches(t *testing.T) {
	c := newTestClient(t, testRollout("etcd", 1), testRollout("apiserver", 1))
	mgr, _ := testManager(t, c, nil)
	_, b, err := newRolloutReconciler(mgr, rolloutOptions())
	require.NoError(t, err)
	every := []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "apiserver"}}, {NamespacedName: client.ObjectKey{Name: "etcd"}}}
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-a"}}
	}
	tests := []struct {
		name string
		obj  client.Object
		want []reconcile.Request
	}{
		{name: "a node's change reconciles every rollout", obj: readyNode("a", corev1.ConditionTrue, nil), want: every},
		{name: "a pod's change in the rollouts' namespace reconciles every rollout", obj: pod("operand"), want: every},
		{name: "a pod elsewhere reconciles none", obj: pod("default")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ElementsMatch(t, tt.want, enqueued(t, watchOf(t, b, tt.obj), tt.obj))
		})
	}
	assert.IsType(t, &testapi.Rollout{}, b.forObject, "it reconciles its kind")
	assert.Equal(t, "rollout", b.name, "named after its kind by default")
}

// nilSelector is a labels.Selector that a nil pointer can hold.
type nilSelector struct{ labels.Selector }

// strayRollout is a RolloutObject that no scheme knows.
type strayRollout struct{ testapi.Rollout }

func (s *strayRollout) DeepCopyObject() runtime.Object {
	return &strayRollout{*s.Rollout.DeepCopyObject().(*testapi.Rollout)}
}

// nilStatusRollout is a Rollout whose status accessor returns nil.
type nilStatusRollout struct{ testapi.Rollout }

func (*nilStatusRollout) RolloutStatus() *rollout.Status { return nil }

func (n *nilStatusRollout) DeepCopyObject() runtime.Object {
	return &nilStatusRollout{*n.Rollout.DeepCopyObject().(*testapi.Rollout)}
}

func TestNewRolloutControllerRejectsBadOptions(t *testing.T) {
	c := newTestClient(t)
	mgr, _ := testManager(t, c, nil)
	withoutList := runtime.NewScheme()
	withoutList.AddKnownTypes(testapi.GroupVersion, &testapi.Rollout{})
	listless, err := crtest.NewManager(fake.NewClientBuilder().WithScheme(withoutList).Build(), nil)
	require.NoError(t, err)
	tests := []struct {
		name   string
		mgr    manager.Manager
		change func(*RolloutOptions)
		want   string
	}{
		{name: "a nil manager", change: func(*RolloutOptions) {}, want: "nil manager"},
		{name: "a typed nil manager", mgr: (*nilManager)(nil), change: func(*RolloutOptions) {}, want: "nil manager"},
		{name: "a nil For", mgr: mgr, change: func(o *RolloutOptions) { o.For = nil }, want: "nil For"},
		{name: "a typed nil For", mgr: mgr, change: func(o *RolloutOptions) { o.For = (*testapi.Rollout)(nil) }, want: "nil For"},
		{name: "a kind the scheme does not know", mgr: mgr, change: func(o *RolloutOptions) { o.For = &strayRollout{} }, want: "does not know"},
		{name: "a kind without its list", mgr: listless, change: func(*RolloutOptions) {}, want: "RolloutList"},
		{name: "a Pods config without a namespace", mgr: mgr, change: func(o *RolloutOptions) { o.Pods.Namespace = "" }, want: "Pods: "},
		{name: "the engine's status", mgr: mgr, change: func(o *RolloutOptions) { o.Engine.Status = &rolloutStatus{} }, want: "Status"},
		{name: "the engine's operands", mgr: mgr, change: func(o *RolloutOptions) {
			o.Engine.Operands = rollout.OperandReaderFunc(nil)
		}, want: "Operands"},
		{name: "the engine's policy", mgr: mgr, change: func(o *RolloutOptions) { o.Engine.Policy.MaxUnavailable = 2 }, want: "Engine.Policy is the resource's"},
		{name: "the engine's generation", mgr: mgr, change: func(o *RolloutOptions) { o.Engine.Generation = 1 }, want: "Engine.Generation is the resource's"},
		{name: "an invalid default policy", mgr: mgr, change: func(o *RolloutOptions) { o.Policy.MaxUnavailable = -1 }, want: "Policy: "},
		{name: "a typed nil selector", mgr: mgr, change: func(o *RolloutOptions) { o.Selector = (*nilSelector)(nil) }, want: "Selector holds a nil"},
		{name: "an empty namespace", mgr: mgr, change: func(o *RolloutOptions) { *o = tenantOptions(); o.Namespaces = []string{"a", ""} }, want: `Namespaces holds ""`},
		{name: "namespaces of a cluster-scoped kind", mgr: mgr, change: func(o *RolloutOptions) { o.Namespaces = []string{"a"} }, want: "cluster-scoped"},
		{name: "a typed nil clock", mgr: mgr, change: func(o *RolloutOptions) { o.Engine.Clock = (*clocktesting.FakePassiveClock)(nil) }, want: "Engine: "},
		{name: "negative conflict retries", mgr: mgr, change: func(o *RolloutOptions) { o.Engine.ConflictRetries = -1 }, want: "Engine: "},
		{name: "a typed nil recorder", mgr: mgr, change: func(o *RolloutOptions) { o.Recorder = (*eventLog)(nil) }, want: "Recorder holds a nil"},
		{name: "a reconciler of its own", mgr: mgr, change: func(o *RolloutOptions) {
			o.Options.Reconciler = reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil })
		}, want: "Options.Reconciler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := rolloutOptions()
			tt.change(&opts)
			_, err := NewRolloutController(tt.mgr, opts)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorContains(t, err, "crconverge: invalid RolloutOptions")
		})
	}
}

// A status accessor that returns nil is refused, not dereferenced.
func TestRolloutControllerRefusesANilStatusField(t *testing.T) {
	scheme := testScheme(t)
	scheme.AddKnownTypeWithName(testapi.GroupVersion.WithKind("NilStatusRollout"), &nilStatusRollout{})
	scheme.AddKnownTypeWithName(testapi.GroupVersion.WithKind("NilStatusRolloutList"), &testapi.RolloutList{})
	obj := &nilStatusRollout{Rollout: *testRollout("etcd", 1)}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(obj).WithStatusSubresource(obj).Build()
	mgr, err := crtest.NewManager(c, nil)
	require.NoError(t, err)
	opts := rolloutOptions()
	opts.For = &nilStatusRollout{}
	ctrl, err := NewRolloutController(mgr, opts)
	require.NoError(t, err)
	_, err = ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "etcd"}})
	assert.ErrorIs(t, err, reconcile.TerminalError(nil))
	assert.ErrorContains(t, err, "status accessor")
}

// TestRolloutControllerPolicyAndGeneration: the controller's default
// policy lies under the resource's, and the status observes the
// resource's generation.
func TestRolloutControllerPolicyAndGeneration(t *testing.T) {
	ctx := context.Background()
	key := client.ObjectKey{Name: "etcd"}
	tests := []struct {
		name       string
		own        rollout.Policy
		def        rollout.Policy
		wantPaused bool
	}{
		{name: "a default pause holds a resource that sets none", def: rollout.Policy{Paused: true}, wantPaused: true},
		{name: "a resource's pause holds under a default without one", own: rollout.Policy{Paused: true}, wantPaused: true},
		{name: "no pause on either side rolls out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ro := testRollout("etcd", 1)
			ro.Spec.Policy = tt.own
			c := crtest.WithGenerations(newTestClient(t, readyNode("a", corev1.ConditionTrue, nil)), &testapi.Rollout{})
			require.NoError(t, c.Create(ctx, ro))
			ro.Spec.Revision = 2
			require.NoError(t, c.Update(ctx, ro)) // generation 2
			mgr, _ := testManager(t, c, nil)
			opts := rolloutOptions()
			opts.Policy = tt.def
			ctrl, err := NewRolloutController(mgr, opts)
			require.NoError(t, err)
			_, err = ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: key})
			require.NoError(t, err)
			got := &testapi.Rollout{}
			require.NoError(t, c.Get(ctx, key, got))
			assert.Equal(t, int64(2), got.Status.ObservedGeneration)
			var holds []string
			for _, h := range got.Status.Holds {
				holds = append(holds, h.Reason)
			}
			var pods corev1.PodList
			require.NoError(t, c.List(ctx, &pods))
			if tt.wantPaused {
				assert.Equal(t, []string{rollout.HoldPaused}, holds)
				assert.Empty(t, pods.Items, "no installer while paused")
			} else {
				assert.Empty(t, holds)
				assert.Len(t, pods.Items, 1)
			}
		})
	}
}
