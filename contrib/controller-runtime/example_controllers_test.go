package crconverge_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	cvfake "github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
	"github.com/converge-dev/converge/rollout"
)

// exampleClient is controller-runtime's fake client with testapi's kinds,
// their statuses as subresources, and objs.
func exampleClient(objs ...client.Object) client.WithWatch {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = testapi.AddToScheme(scheme)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(testapi.GroupVersion.WithKind("TenantRollout"), meta.RESTScopeNamespace)
	mapper.Add(testapi.GroupVersion.WithKind("Addon"), meta.RESTScopeNamespace)
	mapper.Add(testapi.GroupVersion.WithKind("Payload"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithStatusSubresource(&testapi.Rollout{}, &testapi.TenantRollout{}, &testapi.Addon{}, &testapi.Payload{}).WithObjects(objs...).Build()
}

// The rollout controller's first reconcile of a Rollout at revision 1 on
// one ready node records the node's target in the Rollout's status and
// creates its installer pod.
func ExampleNewRolloutController() {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master-0"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	etcd := &testapi.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "etcd"}, Spec: testapi.RolloutSpec{Revision: 1}}
	c := exampleClient(node, etcd)
	mgr, _ := crtest.NewManager(c, nil)

	ctrl, err := crconverge.NewRolloutController(mgr, crconverge.RolloutOptions{
		For: &testapi.Rollout{},
		Pods: kube.RolloutPodsConfig{Namespace: "etcd", Operand: "etcd", InstallerPod: func(rollout.Installer) *corev1.Pod {
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
		}},
		Engine: rollout.Config{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	_, err = ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "etcd"}})
	fmt.Println("reconcile:", err)
	_ = c.Get(ctx, client.ObjectKey{Name: "etcd"}, etcd)
	for _, n := range etcd.Status.NodeStatuses {
		fmt.Printf("node %s: current %d, target %d\n", n.NodeName, n.CurrentRevision, n.TargetRevision)
	}
	var pods corev1.PodList
	_ = c.List(ctx, &pods, client.InNamespace("etcd"))
	for _, p := range pods.Items {
		fmt.Println("pod", p.Name, "on", p.Spec.NodeName)
	}
	// Output:
	// reconcile: <nil>
	// node master-0: current 0, target 1
	// pod installer-1-master-0 on master-0
}

// The add-on controller installs an Addon's version through the driver
// (here fake's) behind its finalizer; once the driver reports it healthy,
// it runs.
func ExampleNewAddonController() {
	mesh := &testapi.Addon{ObjectMeta: metav1.ObjectMeta{Namespace: "tke", Name: "mesh", Generation: 1}, Spec: testapi.AddonSpec{Version: "1.2.0"}}
	c := exampleClient(mesh)
	mgr, _ := crtest.NewManager(c, nil)
	driver := &cvfake.AddonDriver{}

	ctrl, err := crconverge.NewAddonController(mgr, crconverge.AddonOptions{
		For:    &testapi.Addon{},
		Engine: addon.Config{Driver: driver, Owner: "controller-0"},
		Owns:   []client.Object{&corev1.ConfigMap{}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for range 3 {
		if _, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "tke", Name: "mesh"}}); err != nil {
			fmt.Println(err)
		}
	}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "tke", Name: "mesh"}, mesh)
	fmt.Println("phase:", mesh.Status.Phase, "installed:", mesh.Status.InstalledVersion)
	fmt.Println("finalizers:", mesh.Finalizers)
	for _, call := range driver.Recorded() {
		fmt.Println("driver:", call.Method, call.Name, call.To)
	}
	// Output:
	// phase: Running installed: 1.2.0
	// finalizers: [test.converge.dev/addon]
	// driver: Install tke/mesh 1.2.0
	// driver: Health tke/mesh 1.2.0
}

// The payload controller creates the missing Payload (Create), and its
// worker, running on the leader (here crtest's manager, started), applies
// the Payload's release and writes its progress to the Payload's status.
func ExampleNewPayloadController() {
	c := exampleClient()
	mgr, _ := crtest.NewManager(c, nil)
	settings := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ops", "name": "settings"},
		"data":     map[string]any{"mode": "fast"},
	}}
	loader := &cvfake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: payload.Release{Version: "4.15.0"}, Manifests: []manifest.Manifest{
		{File: "0000_10_settings.yaml", Document: 1, GVK: settings.GroupVersionKind(), Object: settings},
	}})
	cluster := &testapi.Payload{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: "cluster"}, Spec: testapi.PayloadSpec{Release: "4.15.0"}}

	ctrl, err := crconverge.NewPayloadController(mgr, crconverge.PayloadOptions{
		For: cluster, Create: true, Engine: payload.Config{Loader: loader},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	key := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cluster)}
	for range 2 { // the first creates the Payload, the second hands its release to the worker
		if _, err := ctrl.Reconcile(ctx, key); err != nil {
			fmt.Println(err)
		}
	}
	got := &testapi.Payload{}
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key.NamespacedName, got)
		return err == nil && got.Status.Completed > 0, err
	})
	cancel()
	fmt.Println("worker stopped:", <-done)
	fmt.Printf("release %s: %d of %d manifests, %s\n", got.Status.Release.Version, got.Status.Done, got.Status.Total, got.Status.History[0].State)
	cm := &corev1.ConfigMap{}
	_ = c.Get(context.Background(), client.ObjectKey{Namespace: "ops", Name: "settings"}, cm)
	fmt.Println("applied:", cm.Data["mode"])
	// Output:
	// worker stopped: <nil>
	// release 4.15.0: 1 of 1 manifests, Completed
	// applied: fast
}
