package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	"github.com/converge-dev/converge/kube"
)

func readyNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

// kubelet plays every node's kubelet once: an installer pod that has not
// finished succeeds, and the operand pod of its node then runs, ready, the
// installer's revision.
func kubelet(t *testing.T, c client.Client, now time.Time) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	require.NoError(t, c.List(ctx, &pods, client.InNamespace("operand")))
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "installer-") || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		require.NoError(t, c.Update(ctx, &p))
		op := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "operand", Name: "etcd-" + p.Spec.NodeName}}
		_ = c.Delete(ctx, op)
		op.Labels = map[string]string{kube.LabelRevision: p.Labels[kube.LabelRevision]}
		op.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}
		op.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}}
		require.NoError(t, c.Create(ctx, op))
	}
}

// TestRolloutControllerRollsOutNodeByNode drives a Rollout on the fake
// client, with a fake clock and the test as the kubelet, until every node
// runs the revision; then a new revision follows the same way.
func TestRolloutControllerRollsOutNodeByNode(t *testing.T) {
	tests := []struct {
		name      string
		nodes     []string
		revisions []int32
	}{
		{name: "one node, one revision", nodes: []string{"a"}, revisions: []int32{1}},
		{name: "three nodes, then the next revision", nodes: []string{"a", "b", "c"}, revisions: []int32{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			scheme := runtime.NewScheme()
			require.NoError(t, clientgoscheme.AddToScheme(scheme))
			require.NoError(t, v1alpha1.AddToScheme(scheme))
			objs := []client.Object{&v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "etcd"}}}
			for _, n := range tt.nodes {
				objs = append(objs, readyNode(n))
			}
			c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.Rollout{}).WithObjects(objs...).Build()
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			mgr, err := crtest.NewManager(c, events.NewFakeRecorder(1000))
			require.NoError(t, err)
			opts := RolloutOptions("operand", "etcd", "installer")
			opts.Engine.Clock = clk
			r, err := crconverge.NewRolloutController(mgr, opts)
			require.NoError(t, err)
			key := client.ObjectKey{Name: "etcd"}

			for _, rev := range tt.revisions {
				ro := &v1alpha1.Rollout{}
				require.NoError(t, c.Get(ctx, key, ro))
				ro.Spec.Revision = rev
				require.NoError(t, c.Update(ctx, ro))
				done := false
				for step := 0; step < 10*len(tt.nodes) && !done; step++ {
					res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
					require.NoError(t, err)
					kubelet(t, c, clk.Now())
					clk.Step(max(res.RequeueAfter, time.Second))
					require.NoError(t, c.Get(ctx, key, ro))
					done = len(ro.Status.NodeStatuses) == len(tt.nodes)
					for _, n := range ro.Status.NodeStatuses {
						done = done && n.CurrentRevision == rev && n.TargetRevision == 0
					}
				}
				require.True(t, done, "every node runs revision %d: %+v", rev, ro.Status.NodeStatuses)
				assert.Equal(t, rev, ro.Status.LatestAvailableRevision)
			}
		})
	}
}
