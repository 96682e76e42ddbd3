package crconverge

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
)

// hostDriver is fake's scripted driver that also keeps the host of every
// install it got.
type hostDriver struct {
	*fake.AddonDriver
	mu    sync.Mutex
	hosts []any
}

func (d *hostDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	d.mu.Lock()
	d.hosts = append(d.hosts, req.Host)
	d.mu.Unlock()
	return d.AddonDriver.Install(ctx, req)
}

// testFinalizer is the finalizer of the controller on testapi's Addon by
// default: its group and the controller's name.
const testFinalizer = "test.converge.dev/addon"

var meshKey = client.ObjectKey{Namespace: "ns", Name: "mesh"}

func testAddon(version string, finalizers ...string) *testapi.Addon {
	return &testapi.Addon{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mesh", Generation: 1, Finalizers: finalizers},
		Spec:       testapi.AddonSpec{Version: version},
	}
}

func addonOptions(driver addon.Driver) AddonOptions {
	return AddonOptions{For: &testapi.Addon{}, Engine: addon.Config{Driver: driver, Owner: "test"}}
}

// reconcileAddon runs n reconciles of the Addon ns/mesh through the
// controller NewAddonController builds on mgr, and returns the last's
// result.
func reconcileAddon(t *testing.T, mgr manager.Manager, opts AddonOptions, n int) (reconcile.Result, error) {
	t.Helper()
	c, err := NewAddonController(mgr, opts)
	require.NoError(t, err)
	var res reconcile.Result
	for range n {
		if res, err = c.Reconcile(context.Background(), reconcile.Request{NamespacedName: meshKey}); err != nil {
			break
		}
	}
	return res, err
}

func TestAddonControllerReconciles(t *testing.T) {
	ctx := context.Background()
	get := func(t *testing.T, c client.Client) *testapi.Addon {
		t.Helper()
		a := &testapi.Addon{}
		require.NoError(t, c.Get(ctx, meshKey, a))
		return a
	}
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{name: "a new add-on is installed until it runs, kept by the finalizer, its object handed to the driver", run: func(t *testing.T) {
			c := newTestClient(t, testAddon("v1"))
			mgr, _ := testManager(t, c, nil)
			driver := &hostDriver{AddonDriver: &fake.AddonDriver{}}
			_, err := reconcileAddon(t, mgr, addonOptions(driver), 4)
			require.NoError(t, err)
			a := get(t, c)
			assert.Equal(t, addon.PhaseRunning, a.Status.Phase)
			assert.Equal(t, "v1", a.Status.InstalledVersion)
			assert.Equal(t, []string{testFinalizer}, a.Finalizers)
			require.Len(t, driver.hosts, 1)
			host, ok := driver.hosts[0].(*testapi.Addon)
			require.True(t, ok, "the driver gets the typed object, %T", driver.hosts[0])
			assert.Equal(t, "mesh", host.Name)
		}},
		{name: "a conflict reads the resource afresh, past a lagging cache, and decides again", run: func(t *testing.T) {
			c := newTestClient(t, testAddon("v1", testFinalizer))
			cache := laggingCache(t, c, testAddon(""))
			a := get(t, c)
			a.Spec.Version, a.Generation = "v2", 2 // another writer, which the cache has not seen yet
			require.NoError(t, c.Update(ctx, a))
			mgr, _ := testManager(t, c, cache)
			driver := &fake.AddonDriver{}
			_, err := reconcileAddon(t, mgr, addonOptions(driver), 1)
			require.NoError(t, err)
			calls := driver.Recorded()
			require.NotEmpty(t, calls)
			for _, call := range calls {
				assert.Equal(t, "v2", call.To, "no action of the stale copy ran: %+v", call)
			}
			assert.Equal(t, int64(2), get(t, c).Status.ObservedGeneration)
		}},
		{name: "the finalizer is dropped only once the engine says the add-on is deleted", run: func(t *testing.T) {
			c := newTestClient(t, testAddon("v1"))
			mgr, _ := testManager(t, c, nil)
			clk := clocktesting.NewFakeClock(t0)
			opts := addonOptions(&fake.AddonDriver{})
			opts.Engine.Clock = clk
			driver := opts.Engine.Driver.(*fake.AddonDriver)
			_, err := reconcileAddon(t, mgr, opts, 4)
			require.NoError(t, err)
			require.NoError(t, c.Delete(ctx, get(t, c)))
			driver.Push(fake.AddonUninstall, fake.AddonOutcome{Err: errors.New("webhook down")})
			res, err := reconcileAddon(t, mgr, opts, 1)
			require.NoError(t, err, "a failed uninstall is the engine's to retry")
			a := get(t, c)
			assert.Equal(t, []string{testFinalizer}, a.Finalizers, "kept while the add-on is installed")
			assert.NotEqual(t, addon.PhaseDeleted, a.Status.Phase)
			for range 4 {
				clk.Step(res.RequeueAfter)
				if res, err = reconcileAddon(t, mgr, opts, 1); err != nil ||
					apierrors.IsNotFound(c.Get(ctx, meshKey, &testapi.Addon{})) {
					break
				}
			}
			require.NoError(t, err)
			assert.Equal(t, 2, driver.Count(fake.AddonUninstall))
			assert.True(t, apierrors.IsNotFound(c.Get(ctx, meshKey, &testapi.Addon{})), "the finalizer went once the engine said Deleted")
		}},
		{name: "the engine's events are recorded about the resource", run: func(t *testing.T) {
			c := newTestClient(t, testAddon("v1"))
			mgr, events := testManager(t, c, nil)
			_, err := reconcileAddon(t, mgr, addonOptions(&fake.AddonDriver{}), 4)
			require.NoError(t, err)
			require.NotEmpty(t, events.reasons(meshKey))
			for _, e := range events.recorded() {
				assert.Equal(t, meshKey, e.Regarding)
				assert.Equal(t, "*testapi.Addon", e.Kind)
				assert.Equal(t, "Reconcile", e.Action)
			}
		}},
		{name: "an invalid policy is a terminal error, and no finalizer is added", run: func(t *testing.T) {
			a := testAddon("v1")
			a.Spec.Policy.MaxRetries = ptr.To[int32](-2)
			c := newTestClient(t, a)
			mgr, _ := testManager(t, c, nil)
			driver := &fake.AddonDriver{}
			_, err := reconcileAddon(t, mgr, addonOptions(driver), 1)
			assert.ErrorIs(t, err, reconcile.TerminalError(nil))
			assert.Empty(t, get(t, c).Finalizers)
			assert.Empty(t, driver.Recorded())
		}},
		{name: "a finalizer another controller added meanwhile is kept: the patch is a conflict and requeues", run: func(t *testing.T) {
			c := newTestClient(t, testAddon("v1"))
			cache := laggingCache(t, c, testAddon(""))
			a := get(t, c)
			a.Finalizers = []string{"other.example.com/keep"}
			require.NoError(t, c.Update(ctx, a))
			mgr, _ := testManager(t, c, cache)
			driver := &fake.AddonDriver{}
			res, err := reconcileAddon(t, mgr, addonOptions(driver), 1)
			require.NoError(t, err)
			assert.Equal(t, ConflictRequeueAfter, res.RequeueAfter)
			assert.Equal(t, []string{"other.example.com/keep"}, get(t, c).Finalizers)
			assert.Empty(t, driver.Recorded(), "the engine waits for the finalizer")
		}},
		{name: "a paused add-on starts no install", run: func(t *testing.T) {
			a := testAddon("v1")
			a.Spec.Policy.Paused = true
			c := newTestClient(t, a)
			mgr, _ := testManager(t, c, nil)
			driver := &fake.AddonDriver{}
			_, err := reconcileAddon(t, mgr, addonOptions(driver), 3)
			require.NoError(t, err)
			assert.Empty(t, driver.Recorded())
			assert.Equal(t, []converge.Hold{converge.PausedHold("no install, upgrade or test is started")}, get(t, c).Status.Holds)
		}},
		{name: "a missing resource is nothing to do", run: func(t *testing.T) {
			mgr, _ := testManager(t, newTestClient(t), nil)
			res, err := reconcileAddon(t, mgr, addonOptions(&fake.AddonDriver{}), 1)
			assert.NoError(t, err)
			assert.Zero(t, res)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}

func TestAddonSpecReadsTheObject(t *testing.T) {
	now := metav1.Now()
	a := testAddon("v3")
	a.Generation = 7
	a.DeletionTimestamp = &now
	a.Annotations = map[string]string{kube.AnnotationResetAt: "r1", kube.AnnotationForceAt: "f1"}
	assert.Equal(t, addon.Spec{Name: "ns/mesh", Generation: 7, Version: "v3", Deleting: true,
		ResetToken: "r1", ForceToken: "f1"}, addonSpec(a))

	cluster := testAddon("v1")
	cluster.Namespace = ""
	assert.Equal(t, addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}, addonSpec(cluster),
		"a cluster-scoped add-on is named by its name")
}

func TestAddonControllerWatches(t *testing.T) {
	deployments := appsv1.SchemeGroupVersion.WithKind("Deployment")
	helmRelease := func(_ context.Context, o client.Object) []reconcile.Request {
		ns, name := o.GetAnnotations()["meta.helm.sh/release-namespace"], o.GetAnnotations()["meta.helm.sh/release-name"]
		if ns == "" || name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
	}
	mgr, _ := testManager(t, newTestClient(t), nil)
	opts := addonOptions(&fake.AddonDriver{})
	opts.Owns = []client.Object{&corev1.ConfigMap{}}
	opts.Watches, opts.MapWatched = []schema.GroupVersionKind{deployments}, helmRelease
	_, b, err := newAddonReconciler(mgr, opts)
	require.NoError(t, err)

	ownedBy := func(kind string, controller bool) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "addon-mesh", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: testapi.GroupVersion.String(), Kind: kind, Name: "mesh", UID: "u1", Controller: ptr.To(controller),
		}}}}
	}
	released := func(annotations map[string]string) *metav1.PartialObjectMetadata {
		o := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mesh-web", Annotations: annotations}}
		o.SetGroupVersionKind(deployments)
		return o
	}
	mesh := []reconcile.Request{{NamespacedName: meshKey}}
	tests := []struct {
		name string
		obj  client.Object
		want []reconcile.Request
	}{
		{name: "an owned object reconciles its controller owner", obj: ownedBy("Addon", true), want: mesh},
		{name: "an owner that is not the controller reconciles nothing", obj: ownedBy("Addon", false)},
		{name: "a controller of another kind reconciles nothing", obj: ownedBy("Rollout", true)},
		{name: "an unowned object of a watched kind maps through MapWatched", obj: released(map[string]string{
			"meta.helm.sh/release-namespace": "ns", "meta.helm.sh/release-name": "mesh"}), want: mesh},
		{name: "one MapWatched maps to nothing reconciles nothing", obj: released(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, enqueued(t, watchOf(t, b, tt.obj), tt.obj))
		})
	}
}

func TestNewAddonControllerRejectsBadOptions(t *testing.T) {
	mgr, _ := testManager(t, newTestClient(t), nil)
	mapAll := func(context.Context, client.Object) []reconcile.Request { return nil }
	tests := []struct {
		name   string
		mgr    manager.Manager
		change func(*AddonOptions)
		want   string
	}{
		{name: "a nil manager", change: func(*AddonOptions) {}, want: "nil manager"},
		{name: "a typed nil manager", mgr: (*nilManager)(nil), change: func(*AddonOptions) {}, want: "nil manager"},
		{name: "a typed nil For", mgr: mgr, change: func(o *AddonOptions) { o.For = (*testapi.Addon)(nil) }, want: "nil For"},
		{name: "no driver", mgr: mgr, change: func(o *AddonOptions) { o.Engine.Driver = nil }, want: "Engine: Driver is required"},
		{name: "a typed nil driver", mgr: mgr, change: func(o *AddonOptions) { o.Engine.Driver = (*fake.AddonDriver)(nil) }, want: "Engine: Driver holds a nil *fake.AddonDriver"},
		{name: "the engine's store", mgr: mgr, change: func(o *AddonOptions) { o.Engine.Store = &fake.AddonStore{} }, want: "Engine.Store"},
		{name: "the engine's policy", mgr: mgr, change: func(o *AddonOptions) { o.Engine.Policy.MaxRetries = ptr.To[int32](1) }, want: "Engine.Policy"},
		{name: "Watches without MapWatched", mgr: mgr, change: func(o *AddonOptions) {
			o.Watches = []schema.GroupVersionKind{appsv1.SchemeGroupVersion.WithKind("Deployment")}
		}, want: "Watches without MapWatched"},
		{name: "MapWatched without Watches", mgr: mgr, change: func(o *AddonOptions) { o.MapWatched = mapAll }, want: "MapWatched without Watches"},
		{name: "a watched kind without a version", mgr: mgr, change: func(o *AddonOptions) {
			o.Watches, o.MapWatched = []schema.GroupVersionKind{{Group: "apps", Kind: "Deployment"}}, mapAll
		}, want: "Watches[0]"},
		{name: "a nil owned kind", mgr: mgr, change: func(o *AddonOptions) { o.Owns = []client.Object{(*corev1.ConfigMap)(nil)} }, want: "Owns[0] is nil"},
		{name: "an owned kind the scheme does not know", mgr: mgr, change: func(o *AddonOptions) {
			o.Owns = []client.Object{&strayRollout{}}
		}, want: "Owns[0]: the manager's scheme does not know"},
		{name: "a finalizer that is no qualified name", mgr: mgr, change: func(o *AddonOptions) { o.Finalizer = "keep me" }, want: "Finalizer"},
		{name: "a typed nil clock", mgr: mgr, change: func(o *AddonOptions) { o.Engine.Clock = (*clocktesting.FakePassiveClock)(nil) }, want: "Engine: Clock holds a nil *testing.FakePassiveClock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := addonOptions(&fake.AddonDriver{})
			tt.change(&opts)
			_, err := NewAddonController(tt.mgr, opts)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorContains(t, err, "crconverge: invalid AddonOptions")
		})
	}
}

func TestAddonControllerDefaultFinalizerIsGroupAndName(t *testing.T) {
	mgr, _ := testManager(t, newTestClient(t), nil)
	for name, want := range map[string]string{"": testFinalizer, "mesh-addons": "test.converge.dev/mesh-addons"} {
		opts := addonOptions(&fake.AddonDriver{})
		opts.Name = name
		r, _, err := newAddonReconciler(mgr, opts)
		require.NoError(t, err)
		assert.Equal(t, want, r.finalizer)
	}
}
