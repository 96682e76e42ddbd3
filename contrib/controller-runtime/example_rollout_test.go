package crconverge_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// A namespaced TenantRollout names its own operand, and its pods live in
// its namespace:
//
//	func (r *TenantRollout) RolloutPods(base kube.RolloutPodsConfig) kube.RolloutPodsConfig {
//		base.Namespace, base.Operand, base.OperandPodName = r.Namespace, r.Spec.Operand, nil
//		return base
//	}
//
// The controller of the namespaces team-a and team-b and the label
// team=core runs each owned rollout's installers in the rollout's
// namespace, owned by the rollout, and leaves the unlabelled one alone.
func ExampleRolloutPodsConfigurer() {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	tenant := func(ns, operand string, lbls map[string]string) *testapi.TenantRollout {
		ro := &testapi.TenantRollout{Rollout: testapi.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: operand, Labels: lbls}}}
		ro.Spec.Revision, ro.Spec.Operand = 1, operand
		return ro
	}
	core := map[string]string{"team": "core"}
	rollouts := []*testapi.TenantRollout{tenant("team-a", "kv", core), tenant("team-b", "db", core), tenant("team-b", "cache", nil)}
	c := exampleClient(node, rollouts[0], rollouts[1], rollouts[2])
	mgr, _ := crtest.NewManager(c, nil)

	ctrl, err := crconverge.NewRolloutController(mgr, crconverge.RolloutOptions{
		For: &testapi.TenantRollout{},
		Pods: kube.RolloutPodsConfig{InstallerPod: func(rollout.Installer) *corev1.Pod {
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
		}},
		Namespaces: []string{"team-a", "team-b"},
		Selector:   labels.SelectorFromSet(core),
		Engine:     rollout.Config{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, ro := range rollouts {
		_, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ro)})
		got := &testapi.TenantRollout{}
		_ = c.Get(ctx, client.ObjectKeyFromObject(ro), got)
		fmt.Printf("%s/%s: reconcile %v, %d nodes in status\n", ro.Namespace, ro.Name, err, len(got.Status.NodeStatuses))
	}
	var pods corev1.PodList
	_ = c.List(ctx, &pods)
	for _, p := range pods.Items {
		fmt.Printf("pod %s/%s owned by %s %s\n", p.Namespace, p.Name, p.OwnerReferences[0].Kind, p.OwnerReferences[0].Name)
	}
	// Output:
	// team-a/kv: reconcile <nil>, 1 nodes in status
	// team-b/db: reconcile <nil>, 1 nodes in status
	// team-b/cache: reconcile <nil>, 0 nodes in status
	// pod team-a/installer-1-node-0 owned by TenantRollout kv
	// pod team-b/installer-1-node-0 owned by TenantRollout db
}
