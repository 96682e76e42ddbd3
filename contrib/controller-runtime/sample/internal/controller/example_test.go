package controller_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/internal/controller"
)

// The rollout controller's first reconcile of a Rollout at revision 1
// starts the first node: it records the decision in the Rollout's status
// and creates that node's installer pod.
func ExampleRolloutOptions() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "master-0"},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	ro := &v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "etcd"}, Spec: v1alpha1.RolloutSpec{Revision: 1}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.Rollout{}).WithObjects(node, ro).Build()
	mgr, _ := crtest.NewManager(c, events.NewFakeRecorder(10))
	opts := controller.RolloutOptions("operand", "etcd", "installer:v1")
	opts.Engine.Clock = clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	r, err := crconverge.NewRolloutController(mgr, opts)
	if err != nil {
		fmt.Println(err)
		return
	}

	_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "etcd"}})
	fmt.Println("reconcile error:", err)
	_ = c.Get(ctx, client.ObjectKey{Name: "etcd"}, ro)
	for _, n := range ro.Status.NodeStatuses {
		fmt.Printf("node %s: current %d, target %d\n", n.NodeName, n.CurrentRevision, n.TargetRevision)
	}
	var pods corev1.PodList
	_ = c.List(ctx, &pods, client.InNamespace("operand"))
	for _, p := range pods.Items {
		fmt.Println("pod", p.Name, "on", p.Spec.NodeName, "image", p.Spec.Containers[0].Image)
	}
	// Output:
	// reconcile error: <nil>
	// node master-0: current 0, target 1
	// pod installer-1-master-0 on master-0 image installer:v1
}
