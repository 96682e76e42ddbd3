//go:build integration

package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/kube"
)

// TestRolloutControllerOnTheAPIServer rolls a revision out to two nodes
// through the manager, on the real API server, with the test as the kubelet
// (envtest runs none). Its nodes and Rollout go when it ends, so that it runs
// again with -count on the same apiserver.
func TestRolloutControllerOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := apiClient(t)
	ns := newNamespace(t, c)
	startManager(t, func(mgr ctrl.Manager) error {
		_, err := crconverge.NewRolloutController(mgr, RolloutOptions(ns, "etcd", "installer"))
		return err
	})
	for _, name := range []string{"node-a", "node-b"} {
		n := readyNode(name)
		status := n.Status
		require.NoError(t, c.Create(ctx, n))
		t.Cleanup(func() { require.NoError(t, c.Delete(ctx, n)) })
		n.Status = status
		require.NoError(t, c.Status().Update(ctx, n))
	}
	ro := &v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: "etcd"}, Spec: v1alpha1.RolloutSpec{Revision: 1}}
	require.NoError(t, c.Create(ctx, ro))
	t.Cleanup(func() { require.NoError(t, c.Delete(ctx, ro)) })

	eventually(t, "both nodes run revision 1", func(ctx context.Context) (bool, error) {
		if err := apiKubelet(ctx, c, ns); err != nil {
			return false, err
		}
		ro := &v1alpha1.Rollout{}
		if err := c.Get(ctx, client.ObjectKey{Name: "etcd"}, ro); err != nil {
			return false, err
		}
		done := len(ro.Status.NodeStatuses) == 2
		for _, n := range ro.Status.NodeStatuses {
			done = done && n.CurrentRevision == 1 && n.TargetRevision == 0
		}
		return done, nil
	})
}

// apiKubelet plays the kubelet once on the API server: an installer pod that
// has not finished succeeds, and its node's operand pod then runs, ready,
// the installer's revision.
func apiKubelet(ctx context.Context, c client.Client, ns string) error {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "installer-") || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		if err := c.Status().Update(ctx, &p); err != nil {
			return client.IgnoreNotFound(err)
		}
		op := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-" + p.Spec.NodeName}}
		if err := c.Delete(ctx, op, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return err
		}
		op.Labels = map[string]string{kube.LabelRevision: p.Labels[kube.LabelRevision]}
		op.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}
		if err := c.Create(ctx, op); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		op.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}}
		if err := c.Status().Update(ctx, op); err != nil {
			return err
		}
	}
	return nil
}
