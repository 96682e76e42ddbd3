package crconverge_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
	"github.com/converge-dev/converge/rollout"
)

// What a Reconciler returns for what an engine returned.
func ExampleResult() {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w", errors.New("stale"))
	for _, c := range []struct {
		requeueAfter time.Duration
		err          error
	}{
		{30 * time.Second, nil},
		{0, nil},
		{time.Minute, conflict},
		{time.Minute, errors.New("install failed")},
	} {
		res, err := crconverge.Result(c.requeueAfter, c.err)
		fmt.Printf("requeueAfter=%v err=%v\n", res.RequeueAfter, err)
	}
	// Output:
	// requeueAfter=30s err=<nil>
	// requeueAfter=0s err=<nil>
	// requeueAfter=1s err=<nil>
	// requeueAfter=0s err=install failed
}

// An engine's status kept in a ConfigMap through a controller-runtime client
// (here the fake one).
func ExampleNewConfigMapStatusStore() {
	type status struct {
		Revision int64 `json:"revision"`
	}
	c := fake.NewClientBuilder().Build()
	store, err := crconverge.NewConfigMapStatusStore[status](c, client.ObjectKey{Namespace: "ops", Name: "rollout-status"}, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	st, rv, _ := store.GetStatus(ctx)
	fmt.Printf("read %+v at %q\n", st, rv)
	rv, err = store.UpdateStatus(ctx, status{Revision: 2}, rv)
	fmt.Println("created:", err == nil)
	_, err = store.UpdateStatus(ctx, status{Revision: 3}, "stale")
	fmt.Println("stale write is a conflict:", converge.IsConflict(err))

	cm := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ops", Name: "rollout-status"}, cm)
	fmt.Println(cm.Data["status.json"])
	// Output:
	// read {Revision:0} at ""
	// created: true
	// stale write is a conflict: true
	// {"revision":2}
}

// A long-lived worker runs while the manager leads, and stops cleanly with
// the manager: mgr.Add(crconverge.LeaderElected(worker.Start)).
func ExampleLeaderElected() {
	worker := crconverge.LeaderElected(func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(worker.NeedLeaderElection(), worker.Start(ctx))
	// Output:
	// true <nil>
}

// rollout's installers run as pods, and its operands and nodes are read,
// through a controller-runtime client (here the fake one).
func ExampleNewRolloutPods() {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "master-0", UID: "6f1c"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	c := fake.NewClientBuilder().WithObjects(node).Build()
	pods, err := crconverge.NewRolloutPods(c, kube.RolloutPodsConfig{
		Namespace: "etcd", Operand: "etcd",
		InstallerPod: func(rollout.Installer) *corev1.Pod {
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	nodes, _ := pods.ListNodes(ctx)
	fmt.Printf("nodes: %+v\n", nodes)
	inst := rollout.Installer{Name: "installer-2-master-0", Node: "master-0", Revision: 2}
	fmt.Println("ensure:", pods.EnsureInstaller(ctx, inst))
	st, _ := pods.GetInstaller(ctx, inst)
	fmt.Println("installer:", st.Phase)
	ops := make([]rollout.OperandState, 1)
	fmt.Println("operands:", pods.GetOperands(ctx, []string{"master-0"}, ops), ops[0].Phase)
	// Output:
	// nodes: [{Name:master-0 UID:6f1c Unreachable:false}]
	// ensure: <nil>
	// installer: Pending
	// operands: <nil> NotFound
}

// An add-on custom resource as the add-on engine's Store, through a
// controller-runtime client (here the fake one, with the kind's status as
// a subresource).
func ExampleNewAddonObjects() {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Addon"}
	mesh := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": "1.2.0"}}}
	mesh.SetGroupVersionKind(gvk)
	mesh.SetNamespace("tke")
	mesh.SetName("mesh")
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithRESTMapper(mapper).WithObjects(mesh).WithStatusSubresource(mesh).Build()
	objects, err := crconverge.NewAddonObjects(c, gvk, kube.AddonObjectsConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	o, _ := objects.Get(ctx, "tke/mesh")
	fmt.Printf("%s wants %s\n", o.Spec.Name, o.Spec.Version)
	o, err = objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseInitializing})
	fmt.Println("status written:", err == nil, o.Status.Phase)
	// Output:
	// tke/mesh wants 1.2.0
	// status written: true Initializing
}

// A payload's manifests applied with server-side apply through a
// controller-runtime client (here the fake one).
func ExampleNewApplier() {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithRESTMapper(mapper).Build()
	applier, err := crconverge.NewApplier(c, "my-operator", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ops", "name": "settings"},
		"data":     map[string]any{"mode": "fast"},
	}}
	m := &manifest.Manifest{File: "0000_10_settings.yaml", GVK: cm.GroupVersionKind(), Object: cm}
	ctx := context.Background()
	fmt.Println("apply:", applier.Apply(ctx, m, payload.StateReconciling))
	fmt.Println("ready:", applier.Ready(ctx, m))
	got := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ops", Name: "settings"}, got)
	fmt.Println("applied:", got.Data["mode"])
	fmt.Println("delete:", applier.Delete(ctx, m))
	// Output:
	// apply: <nil>
	// ready: <nil>
	// applied: fast
	// delete: <nil>
}
