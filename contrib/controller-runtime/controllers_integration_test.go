//go:build integration

package crconverge

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// typedClient returns a client of the test apiserver that knows testapi's
// kinds, without a cache, and a new namespace of its own.
func typedClient(t *testing.T) (client.Client, string) {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: testScheme(t)})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crconverge-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	return c, ns.Name
}

// runManager runs a manager on the test apiserver, with the controllers
// setup registers, until the test ends.
func runManager(t *testing.T, setup func(manager.Manager) error) {
	t.Helper()
	mgr, err := manager.New(env.Config, manager.Options{
		Scheme:                 testScheme(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// eventually polls cond every 100ms until it holds, for at most a minute
// (far beyond what the manager needs).
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, cond), what)
}

// eventAbout reports whether an event of reason about the object named
// name, reported by controller, reached the API server.
func eventAbout(c client.Client, controller, name, reason string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Name == name && e.ReportingController == controller && e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	}
}

// readyNodes creates two ready nodes labelled rollout=ns, deleted when the
// test ends.
func readyNodes(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	for _, suffix := range []string{"a", "b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + suffix, Labels: map[string]string{"rollout": ns}}}
		require.NoError(t, c.Create(ctx, n))
		t.Cleanup(func() { require.NoError(t, c.Delete(ctx, n)) })
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		require.NoError(t, c.Status().Update(ctx, n))
	}
}

// TestRolloutControllerOnTheAPIServer rolls revision 1 out to two nodes
// through NewRolloutController under a manager, with the test as the
// kubelet, and records the engine's events about the Rollout.
func TestRolloutControllerOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := typedClient(t)
	readyNodes(t, c, ns)
	runManager(t, func(mgr manager.Manager) error {
		_, err := NewRolloutController(mgr, RolloutOptions{For: &testapi.Rollout{}, Pods: kube.RolloutPodsConfig{
			Namespace: ns, Operand: "etcd", InstallerPod: installerTemplate, NodeSelector: labels.SelectorFromSet(labels.Set{"rollout": ns}),
		}})
		return err
	})
	ro := testRollout(ns, 1)
	require.NoError(t, c.Create(ctx, ro))
	t.Cleanup(func() { require.NoError(t, c.Delete(context.Background(), ro)) })

	seen := map[string][]types.UID{}
	eventually(t, "both nodes run revision 1", func(ctx context.Context) (bool, error) {
		installerOwners(t, c, ns, seen)
		testKubelet(t, c, ns, time.Now())
		got := &testapi.Rollout{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ro), got); err != nil {
			return false, err
		}
		done := len(got.Status.NodeStatuses) == 2
		for _, n := range got.Status.NodeStatuses {
			done = done && n.CurrentRevision == 1 && n.TargetRevision == 0
		}
		return done, nil
	})
	eventually(t, "the engine's events are about the Rollout", eventAbout(c, "rollout-controller", ns, "NodeCurrentRevisionChanged"))
	assertOwnedBy(t, seen, ro.UID)
}

// installerOwners records the owners' UIDs of each installer pod of ns
// (the engine deletes an installer once its attempt ended: the test looks
// while they run).
func installerOwners(t *testing.T, c client.Client, ns string, seen map[string][]types.UID) {
	t.Helper()
	var installers corev1.PodList
	require.NoError(t, c.List(context.Background(), &installers, client.InNamespace(ns), client.MatchingLabels{kube.LabelApp: "installer"}))
	for _, p := range installers.Items {
		seen[p.Name] = nil
		for _, o := range p.OwnerReferences {
			seen[p.Name] = append(seen[p.Name], o.UID)
		}
	}
}

// assertOwnedBy checks that each installer seen has the one owner uid.
func assertOwnedBy(t *testing.T, seen map[string][]types.UID, uid types.UID) {
	t.Helper()
	require.NotEmpty(t, seen, "installers seen")
	for name, owners := range seen {
		assert.Equal(t, []types.UID{uid}, owners, "%s is owned by its rollout", name)
	}
}

// TestRolloutControllerActsOnlyOnWhatItOwnsOnTheAPIServer: a controller of
// one namespace and the label team=core rolls the TenantRollout it owns
// out to its two nodes, with installers in the rollout's namespace owned by
// it, and leaves alone a labelled rollout of another namespace and an
// unlabelled one of its own: no status, no installer, no event.
func TestRolloutControllerActsOnlyOnWhatItOwnsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := typedClient(t)
	_, otherNS := typedClient(t)
	readyNodes(t, c, ns)
	tenant := func(namespace, name string, lbls map[string]string) *testapi.TenantRollout {
		ro := &testapi.TenantRollout{Rollout: *testRollout(name, 1)}
		ro.Namespace, ro.Labels = namespace, lbls
		ro.Spec.Operand, ro.Spec.NodeSelector = "etcd", map[string]string{"rollout": ns}
		require.NoError(t, c.Create(ctx, ro))
		return ro
	}
	core := map[string]string{"team": "core"}
	runManager(t, func(mgr manager.Manager) error {
		_, err := NewRolloutController(mgr, RolloutOptions{For: &testapi.TenantRollout{}, Pods: kube.RolloutPodsConfig{InstallerPod: installerTemplate},
			Namespaces: []string{ns}, Selector: labels.SelectorFromSet(core)})
		return err
	})
	elsewhere, unlabelled := tenant(otherNS, "etcd", core), tenant(ns, "stray", nil)
	owned := tenant(ns, "etcd", core)

	seen := map[string][]types.UID{}
	eventually(t, "both nodes of the owned rollout run revision 1", func(ctx context.Context) (bool, error) {
		installerOwners(t, c, ns, seen)
		testKubelet(t, c, ns, time.Now())
		got := &testapi.TenantRollout{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(owned), got); err != nil {
			return false, err
		}
		done := len(got.Status.NodeStatuses) == 2 && got.Status.ObservedGeneration == got.Generation
		for _, n := range got.Status.NodeStatuses {
			done = done && n.CurrentRevision == 1 && n.TargetRevision == 0
		}
		return done, nil
	})
	eventually(t, "the events are about the owned rollout", eventAbout(c, "tenantrollout-controller", "etcd", "NodeCurrentRevisionChanged"))
	assertOwnedBy(t, seen, owned.UID)
	for _, ro := range []*testapi.TenantRollout{elsewhere, unlabelled} {
		got := &testapi.TenantRollout{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(ro), got))
		assert.Equal(t, ro.ResourceVersion, got.ResourceVersion, "%s is not written", client.ObjectKeyFromObject(ro))
		assert.Zero(t, got.Status.ObservedGeneration)
	}
	var pods corev1.PodList
	require.NoError(t, c.List(ctx, &pods, client.InNamespace(otherNS)))
	assert.Empty(t, pods.Items, "no installer of the rollout in another namespace")
	var evs eventsv1.EventList
	require.NoError(t, c.List(ctx, &evs))
	for _, e := range evs.Items {
		assert.False(t, e.Regarding.Namespace == otherNS || e.Regarding.Name == "stray", "an event about %s/%s", e.Regarding.Namespace, e.Regarding.Name)
	}
}

// configMapDriver installs an add-on as a ConfigMap "addon-<name>" owned by
// the add-on's object, holding its version; it reports the add-on healthy
// while the ConfigMap holds it.
type configMapDriver struct {
	client client.Client
}

func (d *configMapDriver) key(req addon.Request) (*testapi.Addon, client.ObjectKey) {
	a := req.Host.(*testapi.Addon)
	return a, client.ObjectKey{Namespace: a.Namespace, Name: "addon-" + a.Name}
}

func (d *configMapDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	return "", d.apply(ctx, req)
}

func (d *configMapDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	return "", d.apply(ctx, req)
}

func (d *configMapDriver) apply(ctx context.Context, req addon.Request) error {
	a, key := d.key(req)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, d.client, cm, func() error {
		cm.Data = map[string]string{"version": req.To}
		return controllerutil.SetControllerReference(a, cm, d.client.Scheme())
	})
	return err
}

func (d *configMapDriver) Uninstall(ctx context.Context, req addon.Request) error {
	_, key := d.key(req)
	return client.IgnoreNotFound(d.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}))
}

func (d *configMapDriver) Health(ctx context.Context, req addon.Request) (addon.Health, error) {
	_, key := d.key(req)
	cm := &corev1.ConfigMap{}
	if err := d.client.Get(ctx, key, cm); apierrors.IsNotFound(err) {
		return addon.HealthUnhealthy, nil
	} else if err != nil {
		return addon.HealthUnknown, err
	}
	if cm.Data["version"] != req.To {
		return addon.HealthUnhealthy, nil
	}
	return addon.HealthHealthy, nil
}

// TestAddonControllerOnTheAPIServer installs, upgrades and uninstalls an
// add-on through NewAddonController under a manager: the finalizer keeps
// the object until the add-on is gone, an owned object's change reconciles
// its add-on, and an unowned object of a watched kind is mapped by
// MapWatched.
func TestAddonControllerOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := typedClient(t)
	key := client.ObjectKey{Namespace: ns, Name: "mesh"}
	driver := &configMapDriver{client: c}
	mapped := make(chan client.ObjectKey, 100)
	var reconciling atomic.Bool // the add-on is reconciled: the controller builds a logger for each request
	logFor := func(req *reconcile.Request) logr.Logger {
		if req != nil && req.NamespacedName == key {
			reconciling.Store(true)
		}
		return logr.Discard()
	}
	runManager(t, func(mgr manager.Manager) error {
		_, err := NewAddonController(mgr, AddonOptions{
			For:     &testapi.Addon{},
			Engine:  addon.Config{Driver: driver, Owner: "test"},
			Options: controller.Options{LogConstructor: logFor},
			Owns:    []client.Object{&corev1.ConfigMap{}},
			Watches: []schema.GroupVersionKind{corev1.SchemeGroupVersion.WithKind("Secret")},
			MapWatched: func(_ context.Context, o client.Object) []reconcile.Request {
				if o.GetNamespace() == ns && o.GetAnnotations()["addon"] != "" {
					mapped <- client.ObjectKeyFromObject(o)
				}
				return nil
			},
		})
		return err
	})
	a := testAddon("v1")
	a.Namespace = ns
	require.NoError(t, c.Create(ctx, a))
	running := func(version string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got := &testapi.Addon{}
			if err := c.Get(ctx, key, got); err != nil {
				return false, err
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon-mesh"}, cm); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return got.Status.Phase == addon.PhaseRunning && got.Status.InstalledVersion == version && cm.Data["version"] == version &&
				controllerutil.ContainsFinalizer(got, testFinalizer), nil
		}
	}
	eventually(t, "v1 runs, behind the finalizer", running("v1"))
	eventually(t, "the engine's events are about the Addon", eventAbout(c, "addon-controller", "mesh", "Created"))

	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon-mesh"}, cm))
	reconciling.Store(false)
	cm.Annotations = map[string]string{"poked": "yes"}
	require.NoError(t, c.Update(ctx, cm))
	eventually(t, "a change of the owned ConfigMap reconciles the Addon (long before its running interval)", func(context.Context) (bool, error) {
		return reconciling.Load(), nil
	})

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mesh-credentials", Annotations: map[string]string{"addon": "mesh"}}}
	require.NoError(t, c.Create(ctx, secret))
	select {
	case got := <-mapped:
		assert.Equal(t, client.ObjectKeyFromObject(secret), got, "the watched kind's object reaches MapWatched")
	case <-time.After(time.Minute):
		t.Fatal("MapWatched never saw the Secret")
	}

	require.NoError(t, c.Get(ctx, key, a))
	a.Spec.Version = "v2"
	require.NoError(t, c.Update(ctx, a))
	eventually(t, "v2 runs", running("v2"))

	require.NoError(t, c.Delete(ctx, a))
	eventually(t, "the add-on is uninstalled, then the Addon goes", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, &testapi.Addon{}); !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon-mesh"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// TestPayloadControllerOnTheAPIServer runs NewPayloadController under a
// manager that elects itself leader: the controller creates the missing
// Payload, the worker applies its release and then the next one, writing
// the status to the Payload and recording its events about it.
func TestPayloadControllerOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := typedClient(t)
	loader := &fake.PayloadLoader{}
	for _, v := range []string{"1.0", "1.1"} {
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": ns, "name": "settings"},
			"data":     map[string]any{"version": v},
		}}
		loader.Add(&payload.Payload{Release: payload.Release{Version: v}, Manifests: []manifest.Manifest{
			{File: "0000_10_settings.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm},
		}})
	}
	prototype := &testapi.Payload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"}, Spec: testapi.PayloadSpec{Release: "1.0"}}
	key := client.ObjectKeyFromObject(prototype)
	runManager(t, func(mgr manager.Manager) error {
		_, err := NewPayloadController(mgr, PayloadOptions{For: prototype, Create: true, Engine: payload.Config{Loader: loader}})
		return err
	})
	appliedOnServer := func(version string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got := &testapi.Payload{}
			if err := c.Get(ctx, key, got); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "settings"}, cm); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return applied(version)(got.Status) && got.Status.ObservedGeneration == got.Generation && cm.Data["version"] == version, nil
		}
	}
	eventually(t, "the Payload is created and its release 1.0 applied", appliedOnServer("1.0"))
	eventually(t, "the worker's events are about the Payload", eventAbout(c, "payload-controller", "cluster", "PayloadApplied"))

	p := &testapi.Payload{}
	require.NoError(t, c.Get(ctx, key, p))
	p.Spec.Release = "1.1"
	require.NoError(t, c.Update(ctx, p))
	eventually(t, "release 1.1 is applied over 1.0", appliedOnServer("1.1"))
}
