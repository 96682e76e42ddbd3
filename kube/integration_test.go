//go:build integration

package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/events"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
	"github.com/converge-dev/converge/rollout"
	"github.com/converge-dev/converge/testenv"
)

// env is the etcd and kube-apiserver every integration test of the package shares.
var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

type clients struct {
	typed   kubernetes.Interface
	dynamic dynamic.Interface
}

func connect(t *testing.T) clients {
	t.Helper()
	typed, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(env.Config)
	require.NoError(t, err)
	return clients{typed: typed, dynamic: dyn}
}

func namespace(t *testing.T, c clients, name string) {
	t.Helper()
	_, err := c.typed.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// widgetCRD installs the Widget CRD and waits until it is established.
func widgetCRD(t *testing.T, c clients) { exampleCRD(t, c, "widgets", "Widget") }

// exampleCRD installs the namespaced CRD plural.example.com of kind (status
// subresource, any fields) and waits until it is established.
func exampleCRD(t *testing.T, c clients, plural, kind string) {
	t.Helper()
	ctx := context.Background()
	name := plural + ".example.com"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	_, err := c.dynamic.Resource(crds).Apply(ctx, name, crd, metav1.ApplyOptions{FieldManager: "kube-test", Force: true})
	require.NoError(t, err)
	a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: mapper(t), FieldManager: "kube-test"})
	require.NoError(t, err)
	m := &manifest.Manifest{File: "crd.yaml", Document: 1, GVK: crd.GroupVersionKind(), Object: crd}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return a.Ready(ctx, m) == nil, nil
	}), "the CRD is established")
}

func mapper(t *testing.T) *restmapper.DeferredDiscoveryRESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	return restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
}

// The status stores pass rollout's store conformance check on a real API
// server, whose resource versions and status subresource are the real ones.
func TestStatusStoresConformOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-stores")
	widgetCRD(t, c)
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "kube-stores"},
		"spec":     map[string]any{"size": int64(3)},
		"status":   map[string]any{"other": "kept"},
	}}
	widgetsClient := c.dynamic.Resource(widgets).Namespace("kube-stores")
	_, err := widgetsClient.Create(ctx, widget, metav1.CreateOptions{})
	require.NoError(t, err)

	sub, err := NewObjectStatusStore[rollout.Status](c.dynamic, widgets, "kube-stores", "w", "status", "rollout")
	require.NoError(t, err)
	whole, err := NewObjectStatusStore[rollout.Status](c.dynamic, widgets, "kube-stores", "w")
	require.NoError(t, err)
	cm, err := NewConfigMapStatusStore[rollout.Status](c.typed.CoreV1(), "kube-stores", "rollout-status", "")
	require.NoError(t, err)
	_, err = cm.UpdateStatus(ctx, rollout.Status{}, "")
	require.NoError(t, err)

	for name, s := range map[string]rollout.StatusStore{"custom resource, status.rollout": sub, "custom resource, whole status": whole, "ConfigMap": cm} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, fake.TestRolloutStatusStore(ctx, s))
		})
	}
	got, err := widgetsClient.Get(ctx, "w", metav1.GetOptions{})
	require.NoError(t, err)
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(3), size, "a status write leaves the spec alone")
}

// LatestStatusWriter keeps the payload worker's status writer contract over
// each store on a real API server; a second writer on its own store stands
// for another replica.
func TestLatestStatusWriterConformsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-writers")
	widgetCRD(t, c)
	created, err := c.dynamic.Resource(widgets).Namespace("kube-writers").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "kube-writers"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	created.Object["status"] = map[string]any{"other": "kept"}
	_, err = c.dynamic.Resource(widgets).Namespace("kube-writers").UpdateStatus(ctx, created, metav1.UpdateOptions{})
	require.NoError(t, err)
	tests := []struct {
		name     string
		newStore func() (StatusReadWriter[payload.Status], error)
	}{
		{name: "ConfigMap, created by the first write", newStore: func() (StatusReadWriter[payload.Status], error) {
			return NewConfigMapStatusStore[payload.Status](c.typed.CoreV1(), "kube-writers", "payload-status", "")
		}},
		{name: "custom resource, status.payload", newStore: func() (StatusReadWriter[payload.Status], error) {
			return NewObjectStatusStore[payload.Status](c.dynamic, widgets, "kube-writers", "w", "status", "payload")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores := make([]StatusReadWriter[payload.Status], 3)
			for i := range stores {
				s, err := tt.newStore()
				require.NoError(t, err)
				stores[i] = s
			}
			w := LatestStatusWriter[payload.Status]{Store: stores[0]}
			foreign := LatestStatusWriter[payload.Status]{Store: stores[1]}
			require.NoError(t, fake.TestPayloadStatusWriter(ctx, w, foreign, readStatus(stores[2])))
		})
	}
	got, err := c.dynamic.Resource(widgets).Namespace("kube-writers").Get(ctx, "w", metav1.GetOptions{})
	require.NoError(t, err)
	other, _, _ := unstructured.NestedString(got.Object, "status", "other")
	assert.Equal(t, "kept", other, "a writer at status.payload leaves the rest of the status alone")
}

// The store's own 409, for a version it knows is stale, has the shape of
// the API server's 409 for the same stale write.
func TestObjectStatusStoreConflictIsTheAPIServersOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-conflict")
	widgetCRD(t, c)
	ri := c.dynamic.Resource(widgets).Namespace("kube-conflict")
	stale, err := ri.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "kube-conflict"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	fresh := stale.DeepCopy()
	fresh.Object["status"] = map[string]any{"revision": int64(1)}
	_, err = ri.UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, serverErr := ri.UpdateStatus(ctx, stale, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(serverErr), "%v", serverErr)
	s, err := NewObjectStatusStore[engineStatus](c.dynamic, widgets, "kube-conflict", "w")
	require.NoError(t, err)
	_, ownErr := s.UpdateStatus(ctx, engineStatus{Revision: 2}, stale.GetResourceVersion())
	require.True(t, apierrors.IsConflict(ownErr), "%v", ownErr)

	var server, own apierrors.APIStatus
	require.True(t, errors.As(serverErr, &server))
	require.True(t, errors.As(ownErr, &own))
	assert.Equal(t, server.Status().Details, own.Status().Details)
	assert.Equal(t, server.Status().Reason, own.Status().Reason)
	prefix := `Operation cannot be fulfilled on widgets.example.com "w": `
	assert.Contains(t, serverErr.Error(), prefix)
	assert.Contains(t, ownErr.Error(), prefix)
}

func TestApplierOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-apply")
	a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: mapper(t), FieldManager: "kube-test"})
	require.NoError(t, err)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "kube-apply"},
		"data":     map[string]any{"level": "1"},
	}}
	m := &manifest.Manifest{File: "0000_10_settings.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm}

	require.NoError(t, a.Apply(ctx, m, payload.StateUpdating))
	first, err := c.typed.CoreV1().ConfigMaps("kube-apply").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, a.Apply(ctx, m, payload.StateReconciling))
	again, err := c.typed.CoreV1().ConfigMaps("kube-apply").Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, first.ResourceVersion, again.ResourceVersion, "applying an unchanged manifest writes nothing")
	require.Len(t, again.ManagedFields, 1)
	assert.Equal(t, "kube-test", again.ManagedFields[0].Manager)

	deploy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "kube-apply"},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}},
			},
		},
	}}
	dm := &manifest.Manifest{File: "0000_20_web.yaml", Document: 1, GVK: deploy.GroupVersionKind(), Object: deploy}
	require.NoError(t, a.Apply(ctx, dm, payload.StateUpdating))
	err = a.Ready(ctx, dm)
	assert.True(t, errors.Is(err, ErrNotReady), "no controller-manager rolls it out here: %v", err)

	require.NoError(t, a.Delete(ctx, m))
	err = a.Delete(ctx, m)
	assert.True(t, apierrors.IsNotFound(err), "deleting an object already gone is the API server's NotFound, which the worker counts as no deletion: %v", err)
	_, err = c.typed.CoreV1().ConfigMaps("kube-apply").Get(ctx, "settings", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestRolloutPodsAndEventsOnTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := connect(t)
	namespace(t, c, "kube-rollout")
	factory := informers.NewSharedInformerFactoryWithOptions(c.typed, 0, informers.WithNamespace("kube-rollout"))
	pods := factory.Core().V1().Pods()
	pods.Informer()
	nodesFactory := informers.NewSharedInformerFactory(c.typed, 0)
	nodes := nodesFactory.Core().V1().Nodes()
	nodes.Informer()
	factory.Start(ctx.Done())
	nodesFactory.Start(ctx.Done())
	defer func() {
		cancel()
		factory.Shutdown()
		nodesFactory.Shutdown()
	}()
	factory.WaitForCacheSync(ctx.Done())
	nodesFactory.WaitForCacheSync(ctx.Done())

	a, err := NewRolloutPods(RolloutPodsConfig{
		Client: c.typed, Pods: pods.Lister(), Nodes: nodes.Lister(), Namespace: "kube-rollout", Operand: "etcd",
		InstallerPod: installerPodTemplate,
	})
	require.NoError(t, err)
	inst := rollout.Installer{Name: "installer-2-master-0", Node: "master-0", Revision: 2}
	require.NoError(t, a.EnsureInstaller(ctx, inst))
	require.NoError(t, a.EnsureInstaller(ctx, inst))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		st, err := a.GetInstaller(ctx, inst)
		return err == nil && st.Phase == rollout.InstallerPending, err
	}), "the installer is seen through the informer")
	require.NoError(t, a.DeleteInstaller(ctx, inst))
	require.NoError(t, a.DeleteInstaller(ctx, inst))
	_, err = c.typed.CoreV1().Pods("kube-rollout").Get(ctx, inst.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a pod deleted with no grace period is gone: %v", err)

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.typed.EventsV1()})
	require.NoError(t, broadcaster.StartRecordingToSinkWithContext(ctx))
	defer broadcaster.Shutdown()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "etcd-rollout", Namespace: "kube-rollout"}}
	owner, err = c.typed.CoreV1().ConfigMaps("kube-rollout").Create(ctx, owner, metav1.CreateOptions{})
	require.NoError(t, err)
	RecordEvents(broadcaster.NewRecorder(scheme.Scheme, "converge-kube-test"), owner, "Rollout", []converge.Event{
		{Type: "Normal", Reason: "NodeTargetRevisionChanged", Message: "Updating node \"master-0\" from revision 1 to 2"},
	})
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := c.typed.EventsV1().Events("kube-rollout").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == "NodeTargetRevisionChanged" && e.Regarding.Name == "etcd-rollout" && e.Regarding.Kind == "ConfigMap" && e.Action == "Rollout" {
				return true, nil
			}
		}
		return false, nil
	}), "the event names the regarding object")
}

func TestAddonObjectsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-addon")
	widgetCRD(t, c)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "mesh", "namespace": "kube-addon"},
		"spec":     map[string]any{"version": "v1"},
	}}
	_, err := c.dynamic.Resource(widgets).Namespace("kube-addon").Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	objects, err := NewAddonObjects(AddonObjectsConfig{Client: c.dynamic, Resource: widgets, StatusPath: []string{"status", "addon"}})
	require.NoError(t, err)

	o, err := objects.Get(ctx, "kube-addon/mesh")
	require.NoError(t, err)
	assert.Equal(t, addon.Spec{Name: "kube-addon/mesh", Generation: 1, Version: "v1"}, o.Spec)
	written, err := objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseInitializing, ObservedGeneration: 1})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseInitializing, written.Status.Phase)
	_, err = objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseRunning})
	assert.True(t, apierrors.IsConflict(err), "a write over a stale copy is the API server's 409: %v", err)
	again, err := objects.Get(ctx, "kube-addon/mesh")
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseInitializing, again.Status.Phase, "the losing write changed nothing")
	require.NoError(t, fake.TestAddonStore(ctx, objects, "kube-addon/mesh"))
}

// APIServerConfig is the integration tests' API server, for the tests of
// package kube_test.
func APIServerConfig() *rest.Config { return rest.CopyConfig(env.Config) }

// asUser returns clients that act as user, who holds only the shipped
// ClusterRole of engine (bound cluster-wide), optionally edited by trim.
func asUser(t *testing.T, c clients, engine, user string, trim func(*rbacv1.ClusterRole)) clients {
	t.Helper()
	ctx := context.Background()
	role, err := RBAC(engine)
	require.NoError(t, err)
	role.Name = "converge-test-" + user
	if trim != nil {
		trim(role)
	}
	_, err = c.typed.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.typed.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	first := role.Rules[0]
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := c.typed.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{Group: first.APIGroups[0], Resource: first.Resources[0], Verb: first.Verbs[0]},
		}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	}), "the authorizer sees the binding of %s", user)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	typed, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return clients{typed: typed, dynamic: dyn}
}

// The shipped roles are enough for the adapters on a real API server with
// RBAC, and server-side apply fails without create.
func TestRBACIsEnoughOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	admin := connect(t)
	namespace(t, admin, "kube-rbac")

	t.Run("rollout", func(t *testing.T) {
		c := asUser(t, admin, "rollout", "rollout-operator", nil)
		store, err := NewConfigMapStatusStore[rollout.Status](c.typed.CoreV1(), "kube-rbac", "rollout-status", "")
		require.NoError(t, err)
		_, rv, err := store.GetStatus(ctx)
		require.NoError(t, err)
		rv, err = store.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1}, rv)
		require.NoError(t, err)
		_, err = store.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 2}, rv)
		require.NoError(t, err)

		factory := informers.NewSharedInformerFactory(c.typed, 0)
		pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
		pods.Informer()
		nodes.Informer()
		stop := make(chan struct{})
		factory.Start(stop)
		synced := factory.WaitForCacheSync(stop)
		close(stop)
		factory.Shutdown()
		for typ, ok := range synced {
			require.True(t, ok, "listing and watching %v", typ)
		}
		a, err := NewRolloutPods(RolloutPodsConfig{Client: c.typed, Pods: pods.Lister(), Nodes: nodes.Lister(), Namespace: "kube-rbac", Operand: "etcd", InstallerPod: installerPodTemplate})
		require.NoError(t, err)
		inst := rollout.Installer{Name: "installer-1-n", Node: "n", Revision: 1}
		require.NoError(t, a.EnsureInstaller(ctx, inst))
		require.NoError(t, a.DeleteInstaller(ctx, inst))
		_, err = c.typed.EventsV1().Events("kube-rbac").Create(ctx, &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: "rollout-event"}, EventTime: metav1.NowMicro(), ReportingController: "converge.dev/test",
			ReportingInstance: "test", Action: "Rollout", Reason: "NodeTargetRevisionChanged", Type: "Normal",
			Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "kube-rbac", Name: "rollout-status"},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "events")
	})

	t.Run("payload", func(t *testing.T) {
		c := asUser(t, admin, "payload", "payload-operator", nil)
		a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: mapper(t), FieldManager: "payload-operator", Force: true})
		require.NoError(t, err)
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "rbac-settings", "namespace": "kube-rbac"},
			"data":     map[string]any{"level": "1"},
		}}
		m := &manifest.Manifest{File: "0000_10_settings.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm}
		require.NoError(t, a.Apply(ctx, m, payload.StateUpdating))
		require.NoError(t, a.Ready(ctx, m))
		require.NoError(t, a.Delete(ctx, m))
		store, err := NewConfigMapStatusStore[payload.Status](c.typed.CoreV1(), "kube-rbac", "payload-status", "")
		require.NoError(t, err)
		require.NoError(t, LatestStatusWriter[payload.Status]{Store: store}.WriteStatus(ctx, payload.Status{}))
		_, err = c.typed.CoordinationV1().Leases("kube-rbac").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "payload-operator"}}, metav1.CreateOptions{})
		require.NoError(t, err, "leader election")
	})

	t.Run("server-side apply needs create as well as patch", func(t *testing.T) {
		c := asUser(t, admin, "payload", "patch-only", func(r *rbacv1.ClusterRole) {
			for i := range r.Rules {
				r.Rules[i].Verbs = slices.DeleteFunc(r.Rules[i].Verbs, func(v string) bool { return v == "create" })
			}
		})
		a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: mapper(t), FieldManager: "patch-only"})
		require.NoError(t, err)
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "never-created", "namespace": "kube-rbac"},
		}}
		err = a.Apply(ctx, &manifest.Manifest{File: "0000_10_x.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm}, payload.StateUpdating)
		assert.True(t, apierrors.IsForbidden(err), "%v", err)
	})
}

// without returns a trim for asUser that takes verb on resource out of the
// role (and a rule left without verbs) and adds extra.
func without(resource, verb string, extra ...rbacv1.PolicyRule) func(*rbacv1.ClusterRole) {
	return func(r *rbacv1.ClusterRole) {
		for i := range r.Rules {
			if slices.Contains(r.Rules[i].Resources, resource) {
				r.Rules[i].Verbs = slices.DeleteFunc(slices.Clone(r.Rules[i].Verbs), func(v string) bool { return v == verb })
			}
		}
		r.Rules = slices.DeleteFunc(r.Rules, func(rule rbacv1.PolicyRule) bool { return len(rule.Verbs) == 0 })
		r.Rules = append(r.Rules, extra...)
	}
}

// The resources the shipped addon and rollout roles name.
var (
	exampleAddons   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "addons"}
	exampleRollouts = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "rollouts"}
)

// exampleObject creates the example.com object namespace/name of resource
// and kind with spec.version v1.
func exampleObject(t *testing.T, c clients, gvr schema.GroupVersionResource, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := c.dynamic.Resource(gvr).Namespace(namespace).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"version": "v1"},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return obj
}

// awaitOwnerMapping waits until the API server's admission maps the kind of
// owner, a custom resource of gvr just defined: until then the
// OwnerReferencesPermissionEnforcement plugin forbids blockOwnerDeletion on
// it, for up to the 30 seconds between the resets of its REST mapper, to any
// user but those who may update the finalizers of every resource (the admin).
func awaitOwnerMapping(t *testing.T, admin clients, gvr schema.GroupVersionResource, owner *unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	c := asUser(t, admin, "addon", "owner-probe-"+gvr.Resource, func(r *rbacv1.ClusterRole) {
		r.Rules = []rbacv1.PolicyRule{
			{APIGroups: []string{gvr.Group}, Resources: []string{gvr.Resource + "/finalizers"}, Verbs: []string{"update"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}},
		}
	})
	probes := c.typed.CoreV1().ConfigMaps(owner.GetNamespace())
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := probes.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: "owner-mapping-probe", OwnerReferences: []metav1.OwnerReference{blockingOwnerOf(owner)},
		}}, metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, probes.Delete(ctx, "owner-mapping-probe", metav1.DeleteOptions{})
	}), "blockOwnerDeletion on a %s", owner.GetKind())
}

// exampleOwner defines the example.com resource gvr of kind, and creates
// the namespace ns and the object ns/name in it, once blockOwnerDeletion on
// it is admitted.
func exampleOwner(t *testing.T, admin clients, gvr schema.GroupVersionResource, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	namespace(t, admin, ns)
	exampleCRD(t, admin, gvr.Resource, kind)
	owner := exampleObject(t, admin, gvr, kind, ns, name)
	awaitOwnerMapping(t, admin, gvr, owner)
	return owner
}

// blockingOwnerOf is a controller owner reference to obj that blocks its
// deletion.
func blockingOwnerOf(obj *unstructured.Unstructured) metav1.OwnerReference {
	return *metav1.NewControllerRef(obj, obj.GroupVersionKind())
}

// The shipped rollout role is enough for RolloutPods, a ConfigMap status
// store and events, including installer pods that block the deletion of
// their owner (RolloutPodsConfig.Owner), which the
// OwnerReferencesPermissionEnforcement admission plugin allows only with
// update on the owner's finalizers; and each rule the adapters use is
// needed: without it, the actions that need it are forbidden while every
// other one still works.
func TestRBACOfTheRolloutRoleOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	admin := connect(t)
	const ns = "kube-rbac-rollout"
	owner := exampleOwner(t, admin, exampleRollouts, "Rollout", ns, "etcd")
	ref := blockingOwnerOf(owner)
	rolloutPods := func(t *testing.T, c clients, owner *metav1.OwnerReference) *RolloutPods {
		factory := informers.NewSharedInformerFactory(c.typed, 0)
		a, err := NewRolloutPods(RolloutPodsConfig{Client: c.typed, Pods: factory.Core().V1().Pods().Lister(), Nodes: factory.Core().V1().Nodes().Lister(),
			Namespace: ns, Operand: "etcd", InstallerPod: installerPodTemplate, Owner: owner})
		require.NoError(t, err)
		return a
	}

	owned := []struct {
		name          string
		trim          func(*rbacv1.ClusterRole)
		wantForbidden bool
	}{
		{name: "an installer pod blocks its owner's deletion with the shipped role", trim: nil},
		{name: "without update on the owner's finalizers blockOwnerDeletion is forbidden", trim: without("rollouts/finalizers", "update"), wantForbidden: true},
	}
	for i, tt := range owned {
		t.Run(tt.name, func(t *testing.T) {
			c := asUser(t, admin, "rollout", fmt.Sprintf("rollout-owner-%d", i), tt.trim)
			a := rolloutPods(t, c, &ref)
			inst := rollout.Installer{Name: fmt.Sprintf("installer-%d-owned", i+1), Node: "n", Revision: int32(i + 1)}
			err := a.EnsureInstaller(ctx, inst)
			if tt.wantForbidden {
				assert.True(t, apierrors.IsForbidden(err), "%v", err)
				assert.ErrorContains(t, err, "can't set finalizers on")
				return
			}
			require.NoError(t, err)
			pod, err := admin.typed.CoreV1().Pods(ns).Get(ctx, inst.Name, metav1.GetOptions{})
			require.NoError(t, err)
			require.Len(t, pod.OwnerReferences, 1)
			assert.Equal(t, owner.GetUID(), pod.OwnerReferences[0].UID)
			assert.True(t, *pod.OwnerReferences[0].BlockOwnerDeletion)
			require.NoError(t, a.DeleteInstaller(ctx, inst))
		})
	}

	regarding := corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "Rollout", Namespace: ns, Name: "etcd"}
	statusOf := func(t *testing.T, c clients, name string) *ConfigMapStatusStore[rollout.Status] {
		s, err := NewConfigMapStatusStore[rollout.Status](c.typed.CoreV1(), ns, name, "")
		require.NoError(t, err)
		return s
	}
	installer := func(user string) rollout.Installer {
		return rollout.Installer{Name: "installer-" + user, Node: "n", Revision: 1}
	}
	actions := []roleAction{
		{needs: []rule{{"nodes", "list"}}, act: func(t *testing.T, c clients, _ string) error {
			_, err := c.typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			return err
		}},
		{needs: []rule{{"nodes", "watch"}}, act: func(t *testing.T, c clients, _ string) error {
			w, err := c.typed.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{needs: []rule{{"pods", "list"}}, act: func(t *testing.T, c clients, _ string) error {
			_, err := c.typed.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{needs: []rule{{"pods", "watch"}}, act: func(t *testing.T, c clients, _ string) error {
			w, err := c.typed.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{needs: []rule{{"pods", "create"}}, act: func(t *testing.T, c clients, user string) error {
			return rolloutPods(t, c, nil).EnsureInstaller(ctx, installer(user))
		}},
		{needs: []rule{{"pods", "delete"}}, act: func(t *testing.T, c clients, user string) error {
			return rolloutPods(t, c, nil).DeleteInstaller(ctx, installer(user))
		}},
		{needs: []rule{{"pods", "create"}, {"rollouts/finalizers", "update"}}, act: func(t *testing.T, c clients, user string) error {
			err := rolloutPods(t, c, &ref).EnsureInstaller(ctx, installer(user+"-owned"))
			if err == nil {
				err = rolloutPods(t, admin, nil).DeleteInstaller(ctx, installer(user+"-owned"))
			}
			return err
		}},
		{needs: []rule{{"configmaps", "get"}}, act: func(t *testing.T, c clients, user string) error {
			_, _, err := statusOf(t, c, "status-of-"+user).GetStatus(ctx)
			return err
		}},
		{needs: []rule{{"configmaps", "create"}}, act: func(t *testing.T, c clients, user string) error {
			_, err := statusOf(t, c, "created-by-"+user).UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1}, "")
			return err
		}},
		{needs: []rule{{"configmaps", "get"}, {"configmaps", "update"}}, act: func(t *testing.T, c clients, user string) error {
			rv, err := statusOf(t, admin, "updated-by-"+user).UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1}, "")
			require.NoError(t, err)
			_, err = statusOf(t, c, "updated-by-"+user).UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 2}, rv)
			return err
		}},
	}
	actions = append(actions, eventActions(ctx, admin, regarding)...)
	checkEachRuleIsNeeded(t, admin, "rollout", nil, actions)

	t.Run("RolloutPods reads pods and nodes through listers: get on them is not used", func(t *testing.T) {
		user := "rollout-without-get-on-pods-and-nodes"
		c := asUser(t, admin, "rollout", user, func(r *rbacv1.ClusterRole) {
			without("pods", "get")(r)
			without("nodes", "get")(r)
		})
		for _, a := range actions {
			assert.NoError(t, a.act(t, c, user), "needing %v", a.needs)
		}
	})
}

// rule is one verb on one resource of a role.
type rule struct{ resource, verb string }

// roleAction is something an adapter does with the rules it needs.
type roleAction struct {
	needs []rule
	act   func(t *testing.T, c clients, user string) error
}

// checkEachRuleIsNeeded runs, for each rule the actions need, every action
// as a user of the shipped role of engine (plus extra) without that rule:
// exactly the actions that need it are forbidden, the others succeed.
func checkEachRuleIsNeeded(t *testing.T, admin clients, engine string, extra []rbacv1.PolicyRule, actions []roleAction) {
	t.Helper()
	var rules []rule
	for _, a := range actions {
		for _, r := range a.needs {
			if !slices.Contains(rules, r) {
				rules = append(rules, r)
			}
		}
	}
	for _, missing := range rules {
		t.Run(fmt.Sprintf("without %s on %s", missing.verb, missing.resource), func(t *testing.T) {
			user := fmt.Sprintf("%s-without-%s-%s", engine, missing.verb, strings.ReplaceAll(missing.resource, "/", "-"))
			c := asUser(t, admin, engine, user, without(missing.resource, missing.verb, extra...))
			for _, a := range actions {
				err := a.act(t, c, user)
				if slices.Contains(a.needs, missing) {
					assert.True(t, apierrors.IsForbidden(err), "needing %v: %v", a.needs, err)
				} else {
					assert.NoError(t, err, "needing %v", a.needs)
				}
			}
		})
	}
}

// The shipped addon role is enough for AddonObjects under an addon.Machine,
// a finalizer, events and a driver's objects owned by the add-on; and each
// of its rules is needed: without it, the action that needs it is
// forbidden while every other one still works.
func TestRBACOfTheAddonRoleOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	admin := connect(t)
	const ns = "kube-rbac-addon"
	mesh := exampleOwner(t, admin, exampleAddons, "Addon", ns, "mesh")
	// The driver's own RBAC, for the objects it owns by the add-on.
	driver := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}
	objectsOf := func(t *testing.T, c clients) *AddonObjects {
		objects, err := NewAddonObjects(AddonObjectsConfig{Client: c.dynamic, Resource: exampleAddons})
		require.NoError(t, err)
		return objects
	}
	actions := []roleAction{
		{needs: []rule{{"addons", "get"}}, act: func(t *testing.T, c clients, _ string) error {
			_, err := objectsOf(t, c).Get(ctx, ns+"/mesh")
			return err
		}},
		{needs: []rule{{"addons", "list"}}, act: func(t *testing.T, c clients, _ string) error {
			_, err := c.dynamic.Resource(exampleAddons).Namespace(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{needs: []rule{{"addons", "watch"}}, act: func(t *testing.T, c clients, _ string) error {
			w, err := c.dynamic.Resource(exampleAddons).Namespace(ns).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		{needs: []rule{{"addons", "update"}}, act: func(t *testing.T, c clients, user string) error {
			obj, err := admin.dynamic.Resource(exampleAddons).Namespace(ns).Get(ctx, "mesh", metav1.GetOptions{})
			require.NoError(t, err)
			obj.SetFinalizers(append(obj.GetFinalizers(), "example.com/"+user))
			_, err = c.dynamic.Resource(exampleAddons).Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{})
			return err
		}},
		{needs: []rule{{"addons/status", "update"}}, act: func(t *testing.T, c clients, user string) error {
			o, err := objectsOf(t, admin).Get(ctx, ns+"/mesh")
			require.NoError(t, err)
			_, err = objectsOf(t, c).UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseInitializing, InstalledVersion: user})
			return err
		}},
		{needs: []rule{{"addons/finalizers", "update"}}, act: func(t *testing.T, c clients, user string) error {
			_, err := c.typed.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: "owned-by-" + user, OwnerReferences: []metav1.OwnerReference{blockingOwnerOf(mesh)},
			}}, metav1.CreateOptions{})
			return err
		}},
	}
	actions = append(actions, eventActions(ctx, admin, corev1.ObjectReference{APIVersion: "example.com/v1", Kind: "Addon", Namespace: ns, Name: "mesh"})...)

	t.Run("the shipped role is enough", func(t *testing.T) {
		c := asUser(t, admin, "addon", "addon-operator", func(r *rbacv1.ClusterRole) { r.Rules = append(r.Rules, driver) })
		for _, a := range actions {
			assert.NoError(t, a.act(t, c, "addon-operator"), "needing %v", a.needs)
		}

		exampleObject(t, admin, exampleAddons, "Addon", ns, "machine")
		objects := objectsOf(t, c)
		m, err := addon.NewMachine(addon.Config{Driver: &fake.AddonDriver{}, Store: objects})
		require.NoError(t, err)
		for range 5 {
			o, err := objects.Get(ctx, ns+"/machine")
			require.NoError(t, err)
			if o.Status.Phase == addon.PhaseRunning {
				break
			}
			_, err = m.Reconcile(ctx, o)
			require.NoError(t, err)
		}
		o, err := objects.Get(ctx, ns+"/machine")
		require.NoError(t, err)
		assert.Equal(t, addon.PhaseRunning, o.Status.Phase, "the Machine installs the add-on through AddonObjects")
		assert.Equal(t, "v1", o.Status.InstalledVersion)
	})

	checkEachRuleIsNeeded(t, admin, "addon", []rbacv1.PolicyRule{driver}, actions)
}

// eventActions record an event about regarding and patch an event, as an
// events/v1 recorder does.
func eventActions(ctx context.Context, admin clients, regarding corev1.ObjectReference) []roleAction {
	eventAbout := func(user string) *eventsv1.Event {
		return &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: regarding.Name + "-" + user}, EventTime: metav1.NowMicro(), ReportingController: "converge.dev/test",
			ReportingInstance: user, Action: "Test", Reason: "Tested", Type: "Normal", Regarding: regarding,
		}
	}
	events := func(c clients) eventsv1client.EventInterface { return c.typed.EventsV1().Events(regarding.Namespace) }
	return []roleAction{
		{needs: []rule{{"events", "create"}}, act: func(t *testing.T, c clients, user string) error {
			_, err := events(c).Create(ctx, eventAbout(user), metav1.CreateOptions{})
			return err
		}},
		{needs: []rule{{"events", "patch"}}, act: func(t *testing.T, c clients, user string) error {
			patched, err := events(admin).Create(ctx, eventAbout("patched-for-"+user), metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = events(c).Patch(ctx, patched.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"seen-by":"`+user+`"}}}`), metav1.PatchOptions{})
			return err
		}},
	}
}

// The shipped payload role: each of its rules that kube.Applier, a
// ConfigMap status store and leader election use is needed. Without it,
// exactly the actions that need it are forbidden, while every other one
// still works (server-side apply of a new object needs create and patch;
// of an existing one, patch; a Job is looked at before it is applied).
func TestRBACOfThePayloadRoleOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	admin := connect(t)
	const ns = "kube-rbac-payload"
	namespace(t, admin, ns)
	restMapper := mapper(t)
	applierOf := func(t *testing.T, c clients, user string) *Applier {
		a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: restMapper, FieldManager: user, Force: true})
		require.NoError(t, err)
		return a
	}
	configMap := func(name string) *manifest.Manifest {
		return manifestOf(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns}, "data": map[string]any{"k": "v"},
		}})
	}
	podSpec := map[string]any{"restartPolicy": "Never", "containers": []any{map[string]any{"name": "c", "image": "busybox"}}}
	deployment := func(name string) *manifest.Manifest {
		labels := map[string]any{"app": name}
		return manifestOf(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"selector": map[string]any{"matchLabels": labels}, "template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": podSpec["containers"]},
			}},
		}})
	}
	job := func(name string) *manifest.Manifest {
		return manifestOf(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"template": map[string]any{"spec": podSpec}},
		}})
	}
	// byAdmin applies m as the admin first, so that the action meets an
	// existing object.
	byAdmin := func(t *testing.T, m *manifest.Manifest) *manifest.Manifest {
		require.NoError(t, applierOf(t, admin, "admin").Apply(ctx, m, payload.StateUpdating))
		return m
	}
	statusOf := func(t *testing.T, c clients, name string) *ConfigMapStatusStore[payload.Status] {
		s, err := NewConfigMapStatusStore[payload.Status](c.typed.CoreV1(), ns, name, "")
		require.NoError(t, err)
		return s
	}
	leases := func(c clients) coordinationv1client.LeaseInterface { return c.typed.CoordinationV1().Leases(ns) }
	lease := func(name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	actions := []roleAction{
		{needs: []rule{{"configmaps", "create"}, {"configmaps", "patch"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Apply(ctx, configMap("new-by-"+user), payload.StateUpdating)
		}},
		{needs: []rule{{"configmaps", "patch"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Apply(ctx, byAdmin(t, configMap("patched-by-"+user)), payload.StateUpdating)
		}},
		{needs: []rule{{"configmaps", "get"}, {"configmaps", "delete"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Delete(ctx, byAdmin(t, configMap("deleted-by-"+user)))
		}},
		{needs: []rule{{"configmaps", "get"}}, act: func(t *testing.T, c clients, user string) error {
			_, _, err := statusOf(t, c, "status-read-by-"+user).GetStatus(ctx)
			return err
		}},
		{needs: []rule{{"configmaps", "get"}, {"configmaps", "update"}}, act: func(t *testing.T, c clients, user string) error {
			require.NoError(t, LatestStatusWriter[payload.Status]{Store: statusOf(t, admin, "status-of-"+user)}.WriteStatus(ctx, payload.Status{}))
			return LatestStatusWriter[payload.Status]{Store: statusOf(t, c, "status-of-"+user)}.WriteStatus(ctx, payload.Status{ObservedGeneration: 1})
		}},
		{needs: []rule{{"deployments", "create"}, {"deployments", "patch"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Apply(ctx, deployment("new-by-"+user), payload.StateUpdating)
		}},
		{needs: []rule{{"deployments", "patch"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Apply(ctx, byAdmin(t, deployment("patched-by-"+user)), payload.StateUpdating)
		}},
		{needs: []rule{{"deployments", "get"}}, act: func(t *testing.T, c clients, user string) error {
			err := applierOf(t, c, user).Ready(ctx, byAdmin(t, deployment("read-by-"+user)))
			if errors.Is(err, ErrNotReady) {
				return nil // read, and no controller rolls it out here
			}
			return err
		}},
		{needs: []rule{{"deployments", "get"}, {"deployments", "delete"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Delete(ctx, byAdmin(t, deployment("deleted-by-"+user)))
		}},
		{needs: []rule{{"jobs", "get"}, {"jobs", "create"}, {"jobs", "patch"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Apply(ctx, job("new-by-"+user), payload.StateUpdating)
		}},
		{needs: []rule{{"jobs", "get"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Apply(ctx, byAdmin(t, job("kept-by-"+user)), payload.StateUpdating)
		}},
		{needs: []rule{{"jobs", "get"}, {"jobs", "delete"}}, act: func(t *testing.T, c clients, user string) error {
			return applierOf(t, c, user).Delete(ctx, byAdmin(t, job("deleted-by-"+user)))
		}},
		{needs: []rule{{"leases", "create"}}, act: func(t *testing.T, c clients, user string) error {
			_, err := leases(c).Create(ctx, lease("new-by-"+user), metav1.CreateOptions{})
			return err
		}},
		{needs: []rule{{"leases", "get"}}, act: func(t *testing.T, c clients, user string) error {
			created, err := leases(admin).Create(ctx, lease("read-by-"+user), metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = leases(c).Get(ctx, created.Name, metav1.GetOptions{})
			return err
		}},
		{needs: []rule{{"leases", "update"}}, act: func(t *testing.T, c clients, user string) error {
			created, err := leases(admin).Create(ctx, lease("renewed-by-"+user), metav1.CreateOptions{})
			require.NoError(t, err)
			_, err = leases(c).Update(ctx, created, metav1.UpdateOptions{})
			return err
		}},
	}
	regarding := corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "payload-status"}
	actions = append(actions, eventActions(ctx, admin, regarding)...)
	checkEachRuleIsNeeded(t, admin, "payload", nil, actions)
}
