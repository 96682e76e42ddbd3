//go:build integration

package crconverge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
	"github.com/converge-dev/converge/rollout"
)

// TestRolloutPodsDriveARolloutOnTheAPIServer rolls revision 1 out to two
// nodes with a rollout.Controller on crconverge's pods adapter, on the real
// API server, with the test as the kubelet: it moves each installer pod to
// Succeeded and runs its node's operand pod, ready, at the revision.
func TestRolloutPodsDriveARolloutOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := apiClient(t)
	var nodeNames []string
	for _, suffix := range []string{"a", "b"} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + suffix, Labels: map[string]string{"rollout": ns}}}
		require.NoError(t, c.Create(ctx, n))
		t.Cleanup(func() { require.NoError(t, c.Delete(context.Background(), n)) })
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		require.NoError(t, c.Status().Update(ctx, n))
		nodeNames = append(nodeNames, n.Name)
	}
	pods, err := NewRolloutPods(c, kube.RolloutPodsConfig{Namespace: ns, Operand: "etcd", InstallerPod: installerTemplate,
		NodeSelector: labels.SelectorFromSet(labels.Set{"rollout": ns})})
	require.NoError(t, err)
	store, err := NewConfigMapStatusStore[rollout.Status](c, client.ObjectKey{Namespace: ns, Name: "etcd-rollout"}, "")
	require.NoError(t, err)
	_, err = store.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1}, "")
	require.NoError(t, err)
	clk := clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	ctrl, err := rollout.NewController(rollout.Config{Status: store, Installers: pods, Operands: pods, Nodes: pods, Clock: clk})
	require.NoError(t, err)

	done := false
	for step := 0; step < 20 && !done; step++ {
		res, err := ctrl.Sync(ctx)
		require.NoError(t, err)
		testKubelet(t, c, ns, clk.Now())
		clk.Step(max(res.RequeueAfter, time.Second))
		st, _, err := store.GetStatus(ctx)
		require.NoError(t, err)
		done = len(st.NodeStatuses) == len(nodeNames)
		for _, n := range st.NodeStatuses {
			done = done && n.CurrentRevision == 1 && n.TargetRevision == 0
		}
	}
	require.True(t, done, "both nodes run revision 1")
	var left corev1.PodList
	require.NoError(t, c.List(ctx, &left, client.InNamespace(ns), client.MatchingLabels{kube.LabelApp: "installer"}))
	for _, p := range left.Items {
		assert.Equal(t, corev1.PodSucceeded, p.Status.Phase, "installer %s", p.Name)
		assert.Equal(t, "1", p.Labels[kube.LabelRevision])
	}
}

// testKubelet plays the kubelet once: an installer pod that has not
// finished runs, then succeeds, and its node's operand pod then runs,
// ready, the installer's revision.
func testKubelet(t *testing.T, c client.Client, ns string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	require.NoError(t, c.List(ctx, &pods, client.InNamespace(ns)))
	for _, p := range pods.Items {
		if !strings.HasPrefix(p.Name, "installer-") || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &metav1.Time{Time: now}
			require.NoError(t, c.Status().Update(ctx, &p))
			continue
		}
		p.Status.Phase = corev1.PodSucceeded
		require.NoError(t, c.Status().Update(ctx, &p))
		op := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etcd-" + p.Spec.NodeName}}
		require.NoError(t, client.IgnoreNotFound(c.Delete(ctx, op, client.GracePeriodSeconds(0))))
		op.Labels = map[string]string{kube.LabelRevision: p.Labels[kube.LabelRevision]}
		op.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName, Containers: []corev1.Container{{Name: "etcd", Image: "etcd"}}}
		require.NoError(t, c.Create(ctx, op))
		op.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}}}
		require.NoError(t, c.Status().Update(ctx, op))
	}
}

func TestAddonObjectsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := apiClient(t)
	w := newWidget(ns, "mesh")
	require.NoError(t, c.Create(ctx, w))
	objects, err := NewAddonObjects(c, widgetGVK, kube.AddonObjectsConfig{StatusPath: []string{"status", "addon"}})
	require.NoError(t, err)

	o, err := objects.Get(ctx, ns+"/mesh")
	require.NoError(t, err)
	assert.Equal(t, addon.Spec{Name: ns + "/mesh", Generation: 1, Version: "v1"}, o.Spec)
	_, err = objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseInitializing, ObservedGeneration: 1})
	require.NoError(t, err)
	_, err = objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseRunning})
	assert.True(t, apierrors.IsConflict(err), "a write over a stale copy is the API server's 409: %v", err)
	require.NoError(t, fake.TestAddonStore(ctx, objects, ns+"/mesh"))
}

func TestApplierOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := apiClient(t)
	a, err := NewApplier(c, "crconverge-test", true)
	require.NoError(t, err)
	manifestOf := func(obj map[string]any) *manifest.Manifest {
		u := &unstructured.Unstructured{Object: obj}
		return &manifest.Manifest{File: "0000_10_x.yaml", Document: 1, GVK: u.GroupVersionKind(), Object: u}
	}
	deploy := manifestOf(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx"}}},
			},
		},
	})
	require.NoError(t, a.Apply(ctx, deploy, payload.StateUpdating))
	first := &unstructured.Unstructured{}
	first.SetGroupVersionKind(deploy.GVK)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, first))
	require.NoError(t, a.Apply(ctx, deploy, payload.StateReconciling))
	again := first.DeepCopy()
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, again))
	assert.Equal(t, first.GetResourceVersion(), again.GetResourceVersion(), "applying an unchanged manifest writes nothing")
	require.Len(t, again.GetManagedFields(), 1)
	assert.Equal(t, "crconverge-test", again.GetManagedFields()[0].Manager)
	err = a.Ready(ctx, deploy)
	assert.True(t, errors.Is(err, kube.ErrNotReady), "no controller-manager rolls it out here: %v", err)

	plural := strings.ReplaceAll(ns, "-", "") + "s"
	crd := manifestOf(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		// A cluster-scoped kind: the manifest's namespace is dropped.
		"metadata": map[string]any{"name": plural + ".apply.converge.dev", "namespace": ns},
		"spec": map[string]any{
			"group": "apply.converge.dev", "scope": "Namespaced",
			"names": map[string]any{"kind": "Gadget" + strings.TrimSuffix(plural, "s"), "plural": plural},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object"}}}},
		},
	})
	require.NoError(t, a.Apply(ctx, crd, payload.StateUpdating))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := a.Ready(ctx, crd)
		return err == nil, client.IgnoreNotFound(ignoreNotReady(err))
	}), "the API server establishes the CRD")

	for _, m := range []*manifest.Manifest{deploy, crd} {
		require.NoError(t, a.Delete(ctx, m))
		err := a.Delete(ctx, m)
		assert.True(t, apierrors.IsNotFound(err), "an object gone or being deleted is NotFound, no second deletion: %v", err)
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, again)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func ignoreNotReady(err error) error {
	if errors.Is(err, kube.ErrNotReady) {
		return nil
	}
	return err
}
