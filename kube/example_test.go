package kube_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// A rollout adopted with kube: the status in a ConfigMap, installer and
// operand pods and nodes from informers, events through events/v1.
func ExampleRolloutPods() {
	ctx := context.Background()
	client := k8sfake.NewClientset()
	fake.EnforceResourceVersions(client) // the fake clientset keeps no resource versions of its own
	for _, name := range []string{"master-0", "master-1", "master-2"} {
		_, _ = client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}, metav1.CreateOptions{})
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	pods.Informer()
	nodes.Informer()
	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	seed, _ := kube.NewConfigMapStatusStore[rollout.Status](client.CoreV1(), "etcd", "etcd-rollout", "")
	_, _ = seed.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1}, "") // your revision controller's
	recorder := events.NewFakeRecorder(10)

	res, err := adoptRollout(ctx, client, pods.Lister(), nodes.Lister(), recorder, nil)
	fmt.Println("sync error:", err, "requeue after:", res.RequeueAfter)
	for len(recorder.Events) > 0 {
		fmt.Println("event:", <-recorder.Events)
	}
	installers, _ := client.CoreV1().Pods("etcd").List(ctx, metav1.ListOptions{})
	for _, p := range installers.Items {
		fmt.Println("installer:", p.Name, "on", p.Spec.NodeName)
	}
	// Output:
	// sync error: <nil> requeue after: 0s
	// event: Normal NodeTargetRevisionChanged Updating node "master-0" from revision 0 to 1 because starting revision 1
	// installer: installer-1-master-0 on master-0
}

// adoptRollout is a rollout adopted with kube, as the README shows it: one
// Sync, called from the host's work queue, its events recorded about
// regarding.
func adoptRollout(ctx context.Context, client kubernetes.Interface, pods corelisters.PodLister, nodes corelisters.NodeLister,
	recorder events.EventRecorder, regarding runtime.Object) (converge.Result, error) {
	status, err := kube.NewConfigMapStatusStore[rollout.Status](client.CoreV1(), "etcd", "etcd-rollout", "")
	if err != nil {
		return converge.Result{}, err
	}
	hosts, err := kube.NewRolloutPods(kube.RolloutPodsConfig{
		Client: client, Pods: pods, Nodes: nodes, Namespace: "etcd", Operand: "etcd",
		InstallerPod: func(inst rollout.Installer) *corev1.Pod {
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
		},
	})
	if err != nil {
		return converge.Result{}, err
	}
	ctrl, err := rollout.NewController(rollout.Config{Status: status, Installers: hosts, Operands: hosts, Nodes: hosts})
	if err != nil {
		return converge.Result{}, err
	}
	res, err := ctrl.Sync(ctx) // requeue after res.RequeueAfter
	kube.RecordEvents(recorder, regarding, "Rollout", res.Events)
	return res, err
}

// addons is the add-on custom resource of the examples.
var addons = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "addons"}

// An add-on adopted with kube: its Spec and Status on a custom resource,
// read and written with the dynamic client, reconciled until it runs.
func ExampleAddonObjects() {
	ctx := context.Background()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{addons: "AddonList"})
	fake.EnforceResourceVersions(client)
	_, _ = client.Resource(addons).Namespace("tke").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Addon",
		"metadata": map[string]any{"name": "mesh", "namespace": "tke", "generation": int64(1)},
		"spec":     map[string]any{"version": "v1"},
	}}, metav1.CreateOptions{})
	recorder := events.NewFakeRecorder(10)

	for range 3 {
		mesh, _ := client.Resource(addons).Namespace("tke").Get(ctx, "mesh", metav1.GetOptions{})
		if _, err := adoptAddon(ctx, client, &fake.AddonDriver{}, mesh, recorder); err != nil {
			fmt.Println(err)
			return
		}
	}
	for len(recorder.Events) > 0 {
		fmt.Println("event:", <-recorder.Events)
	}
	mesh, _ := client.Resource(addons).Namespace("tke").Get(ctx, "mesh", metav1.GetOptions{})
	phase, _, _ := unstructured.NestedString(mesh.Object, "status", "phase")
	installed, _, _ := unstructured.NestedString(mesh.Object, "status", "installedVersion")
	fmt.Println("phase:", phase, "installed:", installed, "finalizers:", mesh.GetFinalizers())
	// Output:
	// event: Normal Created -> Initializing: installing v1
	// event: Normal InstallSucceeded Initializing -> Checking: install of v1 succeeded; next: CheckHealth
	// event: Normal Healthy Checking -> Running: v1 is healthy; next: CheckHealth
	// phase: Running installed: v1 finalizers: [example.com/uninstall]
}

// adoptAddon is an add-on adopted with kube, as the README links it: one
// reconcile of the add-on obj, read from the host's informer for a key of
// its work queue, behind the finalizer that uninstalls it on deletion.
func adoptAddon(ctx context.Context, dynamicClient dynamic.Interface, driver addon.Driver, obj *unstructured.Unstructured,
	recorder events.EventRecorder) (addon.Result, error) {
	objects, err := kube.NewAddonObjects(kube.AddonObjectsConfig{Client: dynamicClient, Resource: addons, Finalizer: "example.com/uninstall"})
	if err != nil {
		return addon.Result{}, err
	}
	m, err := addon.NewMachine(addon.Config{Driver: driver, Store: objects, Owner: "controller-0"})
	if err != nil {
		return addon.Result{}, err
	}
	res, err := objects.WithFinalizer(ctx, obj, m.Reconcile) // requeue after res.RequeueAfter
	kube.RecordEvents(recorder, obj, "Reconcile", res.Events)
	return res, err
}

// WithFinalizer runs a Machine's Reconcile behind a finalizer: added before
// the install, dropped once a deleted add-on is uninstalled.
func ExampleAddonObjects_WithFinalizer() {
	ctx := context.Background()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{addons: "AddonList"})
	fake.EnforceResourceVersions(client)
	mesh := client.Resource(addons).Namespace("tke")
	_, _ = mesh.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Addon",
		"metadata": map[string]any{"name": "mesh", "namespace": "tke", "generation": int64(1)},
		"spec":     map[string]any{"version": "v1"},
	}}, metav1.CreateOptions{})
	objects, err := kube.NewAddonObjects(kube.AddonObjectsConfig{Client: client, Resource: addons, Finalizer: "example.com/uninstall"})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := addon.NewMachine(addon.Config{Driver: &fake.AddonDriver{}, Store: objects, Owner: "controller-0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	reconcile := func() addon.Result {
		obj, _ := mesh.Get(ctx, "mesh", metav1.GetOptions{}) // from your informer
		res, err := objects.WithFinalizer(ctx, obj, m.Reconcile)
		if err != nil {
			fmt.Println(err)
		}
		return res
	}
	reconcile()
	obj, _ := mesh.Get(ctx, "mesh", metav1.GetOptions{})
	fmt.Println("installed, finalizers:", obj.GetFinalizers())

	now := metav1.Now() // the API server marks the object deleted and keeps it for the finalizer
	obj.SetDeletionTimestamp(&now)
	_, _ = mesh.Update(ctx, obj, metav1.UpdateOptions{})
	for range 3 {
		if reconcile().Deleted {
			break
		}
	}
	obj, _ = mesh.Get(ctx, "mesh", metav1.GetOptions{})
	fmt.Println("uninstalled, finalizers:", obj.GetFinalizers())
	// Output:
	// installed, finalizers: [example.com/uninstall]
	// uninstalled, finalizers: []
}

// ObjectReady judges any object by its status: a Deployment that still
// rolls out waits, a custom resource whose controller reports Stalled has
// failed, and one that reports Ready is ready.
func ExampleObjectReady() {
	objects := []string{
		`{"apiVersion": "apps/v1", "kind": "Deployment",
		  "metadata": {"name": "web", "namespace": "shop", "generation": 2},
		  "spec": {"replicas": 3},
		  "status": {"observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 1, "availableReplicas": 1}}`,
		`{"apiVersion": "example.com/v1", "kind": "Widget",
		  "metadata": {"name": "blue", "namespace": "shop", "generation": 4},
		  "status": {"observedGeneration": 4, "conditions": [{"type": "Stalled", "status": "True", "reason": "InvalidSpec", "message": "size must be positive"}]}}`,
		`{"apiVersion": "example.com/v1", "kind": "Widget",
		  "metadata": {"name": "green", "namespace": "shop", "generation": 1},
		  "status": {"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True"}]}}`,
	}
	for _, doc := range objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON([]byte(doc)); err != nil {
			fmt.Println(err)
			return
		}
		err := kube.ObjectReady(obj)
		switch {
		case err == nil:
			fmt.Println(obj.GetName(), "is ready")
		case errors.Is(err, kube.ErrObjectFailed):
			fmt.Println("stop waiting:", err)
		case errors.Is(err, kube.ErrNotReady):
			fmt.Println("wait:", err)
		}
	}
	// Output:
	// wait: kube: Deployment shop/web is not ready: LessAvailable: Available: 1/3
	// stop waiting: kube: Widget shop/blue failed: InvalidSpec: size must be positive
	// green is ready
}

// A PodDisruptionBudget covering the operand's guard pods holds a node
// whose disruption it does not allow.
func ExampleNewPDBGate() {
	guard := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-guard-a", Namespace: "etcd", Labels: map[string]string{"app": "guard"}},
		Spec: corev1.PodSpec{NodeName: "a"}}
	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "etcd-guard-pdb", Namespace: "etcd"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guard"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
	factory := informers.NewSharedInformerFactory(k8sfake.NewClientset(guard, budget), 0)
	pods, pdbs := factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets()
	_ = pods.Informer().GetIndexer().Add(guard) // an informer's cache, filled by hand
	_ = pdbs.Informer().GetIndexer().Add(budget)
	gate, err := kube.NewPDBGate(kube.PDBGateConfig{Pods: pods.Lister(), PDBs: pdbs.Lister(), Namespace: "etcd", Operand: "etcd"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(gate.Admit(context.Background(), rollout.Disruption{Installer: rollout.Installer{Name: "installer-2-a", Node: "a", Revision: 2}}))
	// Output: blocked by PodDisruptionBudget etcd/etcd-guard-pdb: it allows 0 disruptions and the node runs 1 of its pods
}
