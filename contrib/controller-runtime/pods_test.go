package crconverge

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

func readyNode(name string, ready corev1.ConditionStatus, lbls map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, UID: types.UID("uid-" + name)},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}}}
}

func installerTemplate(rollout.Installer) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
}

func TestRolloutPodsOnAControllerRuntimeClient(t *testing.T) {
	ctx := context.Background()
	operand := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "etcd", Name: "etcd-a", Labels: map[string]string{kube.LabelRevision: "2"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	c := newFakeClient(t, operand,
		readyNode("b", corev1.ConditionTrue, map[string]string{"role": "master"}),
		readyNode("a", corev1.ConditionFalse, map[string]string{"role": "master"}),
		readyNode("w", corev1.ConditionTrue, map[string]string{"role": "worker"}))
	pods, err := NewRolloutPods(c, kube.RolloutPodsConfig{Namespace: "etcd", Operand: "etcd", InstallerPod: installerTemplate,
		NodeSelector: labels.SelectorFromSet(labels.Set{"role": "master"})})
	require.NoError(t, err)
	inst := rollout.Installer{Name: "installer-3-a", Node: "a", Revision: 3}

	got, err := pods.GetInstaller(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, rollout.InstallerNotFound, got.Phase, "a missing installer pod is NotFound, not an error")
	require.NoError(t, pods.EnsureInstaller(ctx, inst))
	require.NoError(t, pods.EnsureInstaller(ctx, inst), "an installer that exists is not an error")
	pod := &corev1.Pod{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "etcd", Name: "installer-3-a"}, pod))
	assert.Equal(t, map[string]string{kube.LabelApp: "installer", kube.LabelRevision: "3", kube.LabelNode: "a"}, pod.Labels)
	assert.Equal(t, "a", pod.Spec.NodeName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	got, err = pods.GetInstaller(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, rollout.InstallerPending, got.Phase)

	require.NoError(t, pods.DeleteInstaller(ctx, inst))
	require.NoError(t, pods.DeleteInstaller(ctx, inst), "an installer already gone is deleted")
	err = c.Get(ctx, client.ObjectKey{Namespace: "etcd", Name: "installer-3-a"}, pod)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)

	op, err := pods.GetOperand(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, rollout.OperandState{Phase: rollout.OperandReady, Revision: 2}, op)
	op, err = pods.GetOperand(ctx, "b")
	require.NoError(t, err)
	assert.Equal(t, rollout.OperandNotFound, op.Phase)
	ops := make([]rollout.OperandState, 2)
	require.NoError(t, pods.GetOperands(ctx, []string{"a", "b"}, ops), "every operand in one call, through the same client")
	assert.Equal(t, []rollout.OperandState{{Phase: rollout.OperandReady, Revision: 2}, {Phase: rollout.OperandNotFound}}, ops)
	nodes, err := pods.ListNodes(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Node{{Name: "a", UID: "uid-a", Unreachable: true}, {Name: "b", UID: "uid-b"}}, nodes,
		"the selected nodes, in name order, known by their UIDs")
}

func TestDeletePodHasNoGracePeriod(t *testing.T) {
	rec := &deleteRecorder{Client: newFakeClient(t)}
	pc, err := NewPodClient(rec)
	require.NoError(t, err)
	assert.True(t, apierrors.IsNotFound(pc.DeletePod(context.Background(), "etcd", "p")))
	assert.Equal(t, ptr.To[int64](0), rec.opts.GracePeriodSeconds)
}

// deleteRecorder records the options of the last Delete.
type deleteRecorder struct {
	client.Client
	opts client.DeleteOptions
}

func (d *deleteRecorder) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	d.opts = client.DeleteOptions{}
	d.opts.ApplyOptions(opts)
	return d.Client.Delete(ctx, obj, opts...)
}

func TestNewRolloutPodsRejectsBadInput(t *testing.T) {
	var typedNil *fakeNilClient
	good := kube.RolloutPodsConfig{Namespace: "etcd", Operand: "etcd", InstallerPod: installerTemplate}
	tests := []struct {
		name   string
		client client.Client
		cfg    kube.RolloutPodsConfig
	}{
		{name: "nil client", cfg: good},
		{name: "typed-nil client", client: typedNil, cfg: good},
		{name: "no namespace", client: newFakeClient(t), cfg: kube.RolloutPodsConfig{Operand: "etcd", InstallerPod: installerTemplate}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRolloutPods(tt.client, tt.cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}
