package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/rollout"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func podIndexer(objs ...any) cache.Indexer {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			panic(err)
		}
	}
	return idx
}

func node(name string, ready corev1.ConditionStatus, lbls map[string]string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls, UID: types.UID("uid-" + name)}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
	}
	return n
}

func operandPod(node, revision string, phase corev1.PodPhase, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-" + node, Namespace: "ns", Labels: map[string]string{LabelRevision: revision}}}
	p.Status.Phase = phase
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)}}
	}
	return p
}

func installerPodTemplate(rollout.Installer) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
}

func newRolloutPods(t *testing.T, client *k8sfake.Clientset, pods, nodes cache.Indexer, mod func(*RolloutPodsConfig)) *RolloutPods {
	t.Helper()
	cfg := RolloutPodsConfig{
		Client: client, Pods: corelisters.NewPodLister(pods), Nodes: corelisters.NewNodeLister(nodes),
		Namespace: "ns", Operand: "etcd", InstallerPod: installerPodTemplate,
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := NewRolloutPods(cfg)
	require.NoError(t, err)
	return a
}

func TestRolloutPodsReadsOperands(t *testing.T) {
	pods := podIndexer(
		operandPod("a", "3", corev1.PodRunning, true),
		operandPod("b", "2", corev1.PodRunning, false),
		operandPod("c", "2", corev1.PodFailed, false),
		operandPod("d", "x", corev1.PodRunning, true),
	)
	a := newRolloutPods(t, k8sfake.NewClientset(), pods, podIndexer(), nil)
	tests := []struct {
		node    string
		want    rollout.OperandState
		wantErr bool
	}{
		{node: "a", want: rollout.OperandState{Phase: rollout.OperandReady, Revision: 3, ReadySince: t0}},
		{node: "b", want: rollout.OperandState{Phase: rollout.OperandPending, Revision: 2}},
		{node: "c", want: rollout.OperandState{Phase: rollout.OperandFailed, Revision: 2}},
		{node: "d", wantErr: true},
		{node: "missing", want: rollout.OperandState{Phase: rollout.OperandNotFound}},
	}
	for _, tt := range tests {
		t.Run(tt.node, func(t *testing.T) {
			got, err := a.GetOperand(context.Background(), tt.node)
			if tt.wantErr {
				assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.True(t, tt.want.ReadySince.Equal(got.ReadySince))
			got.ReadySince = tt.want.ReadySince
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestRolloutPodsReadsAStartupMonitorsFallback: an operand library-go's
// startup monitor started as a fallback reports it from its annotations,
// with the pod's creation time as the fallback's time.
func TestRolloutPodsReadsAStartupMonitorsFallback(t *testing.T) {
	fallback := operandPod("a", "2", corev1.PodRunning, true)
	fallback.CreationTimestamp = metav1.NewTime(t0.Add(-time.Minute))
	fallback.Annotations = map[string]string{AnnotationFallbackForRevision: "3", AnnotationFallbackReason: "NeverStartedUp",
		AnnotationFallbackMessage: "kube-apiserver did not start"}
	bad := operandPod("b", "2", corev1.PodRunning, true)
	bad.Annotations = map[string]string{AnnotationFallbackForRevision: "three"}
	a := newRolloutPods(t, k8sfake.NewClientset(), podIndexer(fallback, bad), podIndexer(), nil)

	got, err := a.GetOperand(context.Background(), "a")
	require.NoError(t, err)
	require.NotNil(t, got.Fallback)
	assert.Equal(t, rollout.OperandFallback{ForRevision: 3, Reason: "NeverStartedUp", Message: "kube-apiserver did not start",
		Time: fallback.CreationTimestamp.Time}, *got.Fallback)
	assert.Equal(t, int32(2), got.Revision, "the revision it runs is the last good one")

	_, err = a.GetOperand(context.Background(), "b")
	assert.ErrorIs(t, err, converge.ErrInvalid, "a fallback annotation without a revision")
}

// TestRolloutPodsReadsEveryOperandInOneCall: GetOperands answers for every
// node at once, from the pod lister, as GetOperand does one node at a time.
func TestRolloutPodsReadsEveryOperandInOneCall(t *testing.T) {
	pods := podIndexer(operandPod("a", "3", corev1.PodRunning, true), operandPod("c", "2", corev1.PodFailed, false))
	a := newRolloutPods(t, k8sfake.NewClientset(), pods, podIndexer(), nil)
	nodes := []string{"a", "b", "c"}
	got := make([]rollout.OperandState, len(nodes))
	require.NoError(t, a.GetOperands(context.Background(), nodes, got))
	for i, n := range nodes {
		one, err := a.GetOperand(context.Background(), n)
		require.NoError(t, err)
		assert.Equal(t, one, got[i], n)
	}
	assert.Equal(t, rollout.OperandNotFound, got[1].Phase)
	assert.ErrorIs(t, a.GetOperands(context.Background(), nodes, got[:2]), converge.ErrInvalid, "slices of two lengths")

	broken := podIndexer(operandPod("a", "x", corev1.PodRunning, true))
	err := newRolloutPods(t, k8sfake.NewClientset(), broken, podIndexer(), nil).GetOperands(context.Background(), nodes, got)
	assert.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, "node a:")
}

func TestRolloutPodsMapsInstallerPods(t *testing.T) {
	started := metav1.NewTime(t0)
	tests := []struct {
		name string
		pod  corev1.Pod
		want rollout.InstallerState
	}{
		{name: "pending", pod: corev1.Pod{}, want: rollout.InstallerState{Phase: rollout.InstallerPending}},
		{name: "running since its start time", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started}},
			want: rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0}},
		{name: "succeeded", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, want: rollout.InstallerState{Phase: rollout.InstallerSucceeded}},
		{name: "failed, OOM killed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "boom", ContainerStatuses: []corev1.ContainerStatus{
			{Name: "installer", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", Message: "out of memory"}}},
			{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}}}, want: rollout.InstallerState{Phase: rollout.InstallerFailed, Message: "boom", Containers: []rollout.ContainerTermination{
			{Name: "installer", Message: "out of memory", OOMKilled: true},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := InstallerPodState(&tt.pod)
			assert.True(t, tt.want.StartTime.Equal(got.StartTime))
			got.StartTime = tt.want.StartTime
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRolloutPodsEnsuresAndDeletesInstallers(t *testing.T) {
	ctx := context.Background()
	client := k8sfake.NewClientset()
	owner := &metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Rollout", Name: "etcd", UID: "u1"}
	a := newRolloutPods(t, client, podIndexer(), podIndexer(), func(c *RolloutPodsConfig) { c.Owner = owner })
	inst := rollout.Installer{Name: "installer-2-a", Node: "a", Revision: 2}

	require.NoError(t, a.EnsureInstaller(ctx, inst))
	require.NoError(t, a.EnsureInstaller(ctx, inst), "an installer that exists is not an error")
	pod, err := client.CoreV1().Pods("ns").Get(ctx, "installer-2-a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "a", pod.Spec.NodeName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.Equal(t, map[string]string{LabelApp: "installer", LabelRevision: "2", LabelNode: "a"}, pod.Labels)
	assert.Equal(t, "installer:v1", pod.Spec.Containers[0].Image)
	require.Len(t, pod.OwnerReferences, 1)
	assert.True(t, *pod.OwnerReferences[0].Controller && *pod.OwnerReferences[0].BlockOwnerDeletion)

	require.NoError(t, a.DeleteInstaller(ctx, inst))
	require.NoError(t, a.DeleteInstaller(ctx, inst), "an installer already gone is deleted")
	pods, err := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, pods.Items)
}

func TestRolloutPodsListsSelectedNodesInOrder(t *testing.T) {
	nodes := podIndexer(
		node("c", corev1.ConditionTrue, map[string]string{"role": "master"}),
		node("a", corev1.ConditionFalse, map[string]string{"role": "master"}),
		node("b", "", map[string]string{"role": "master"}),
		node("w", corev1.ConditionTrue, map[string]string{"role": "worker"}),
	)
	a := newRolloutPods(t, k8sfake.NewClientset(), podIndexer(), nodes, func(c *RolloutPodsConfig) {
		c.NodeSelector = labels.SelectorFromSet(labels.Set{"role": "master"})
	})
	got, err := a.ListNodes(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []rollout.Node{{Name: "a", UID: "uid-a", Unreachable: true}, {Name: "b", UID: "uid-b", Unreachable: true}, {Name: "c", UID: "uid-c"}}, got)
}

func TestNewRolloutPodsRejectsBadInput(t *testing.T) {
	var typedNil *k8sfake.Clientset
	pods, nodes := corelisters.NewPodLister(podIndexer()), corelisters.NewNodeLister(podIndexer())
	good := RolloutPodsConfig{Client: k8sfake.NewClientset(), Pods: pods, Nodes: nodes, Namespace: "ns", Operand: "etcd", InstallerPod: installerPodTemplate}
	tests := []struct {
		name string
		mod  func(*RolloutPodsConfig)
	}{
		{name: "nil client", mod: func(c *RolloutPodsConfig) { c.Client = nil }},
		{name: "typed-nil client", mod: func(c *RolloutPodsConfig) { c.Client = typedNil }},
		{name: "nil pod lister", mod: func(c *RolloutPodsConfig) { c.Pods = nil }},
		{name: "nil node lister", mod: func(c *RolloutPodsConfig) { c.Nodes = nil }},
		{name: "no namespace", mod: func(c *RolloutPodsConfig) { c.Namespace = "" }},
		{name: "no installer pod", mod: func(c *RolloutPodsConfig) { c.InstallerPod = nil }},
		{name: "no operand name", mod: func(c *RolloutPodsConfig) { c.Operand = "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mod(&cfg)
			_, err := NewRolloutPods(cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// recordingPods is a PodClient that serves pods and nodes from maps and
// records the pods it creates and deletes.
type recordingPods struct {
	pods    map[string]*corev1.Pod
	nodes   []corev1.Node
	created []*corev1.Pod
	deleted []string
}

func (r *recordingPods) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if p, ok := r.pods[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (r *recordingPods) CreatePod(_ context.Context, pod *corev1.Pod) error {
	r.created = append(r.created, pod)
	return nil
}

func (r *recordingPods) DeletePod(_ context.Context, namespace, name string) error {
	r.deleted = append(r.deleted, namespace+"/"+name)
	return apierrors.NewNotFound(corev1.Resource("pods"), name)
}

func (r *recordingPods) ListNodes(_ context.Context, selector labels.Selector) ([]corev1.Node, error) {
	var out []corev1.Node
	for _, n := range r.nodes {
		if selector.Matches(labels.Set(n.Labels)) {
			out = append(out, n)
		}
	}
	return out, nil
}

// TestRolloutPodsForKeepsEveryRuleOnAnyPodClient drives the adapter through
// a PodClient of its own: the installer pod's labels, node and restart
// policy, the operand and node states, the node order and the NotFound
// handling are RolloutPods' own, not the client's.
func TestRolloutPodsForKeepsEveryRuleOnAnyPodClient(t *testing.T) {
	ctx := context.Background()
	client := &recordingPods{
		pods:  map[string]*corev1.Pod{"ns/etcd-a": operandPod("a", "3", corev1.PodRunning, true)},
		nodes: []corev1.Node{*node("b", corev1.ConditionTrue, nil), *node("a", corev1.ConditionFalse, nil)},
	}
	a, err := NewRolloutPodsFor(client, RolloutPodsConfig{Namespace: "ns", Operand: "etcd", InstallerPod: installerPodTemplate})
	require.NoError(t, err)
	inst := rollout.Installer{Name: "installer-3-a", Node: "a", Revision: 3}

	require.NoError(t, a.EnsureInstaller(ctx, inst))
	require.Len(t, client.created, 1)
	pod := client.created[0]
	assert.Equal(t, "ns", pod.Namespace)
	assert.Equal(t, "a", pod.Spec.NodeName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.Equal(t, map[string]string{LabelApp: "installer", LabelRevision: "3", LabelNode: "a"}, pod.Labels)
	require.NoError(t, a.DeleteInstaller(ctx, inst), "an installer already gone is deleted")
	assert.Equal(t, []string{"ns/installer-3-a"}, client.deleted)

	got, err := a.GetInstaller(ctx, inst)
	require.NoError(t, err)
	assert.Equal(t, rollout.InstallerNotFound, got.Phase)
	op, err := a.GetOperand(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, rollout.OperandState{Phase: rollout.OperandReady, Revision: 3, ReadySince: t0}, op)
	nodes, err := a.ListNodes(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Node{{Name: "a", UID: "uid-a", Unreachable: true}, {Name: "b", UID: "uid-b"}}, nodes)
}

func TestNewRolloutPodsForRejectsBadInput(t *testing.T) {
	var typedNil *recordingPods
	good := RolloutPodsConfig{Namespace: "ns", Operand: "etcd", InstallerPod: installerPodTemplate}
	tests := []struct {
		name   string
		client PodClient
		mod    func(*RolloutPodsConfig)
	}{
		{name: "nil client", mod: func(*RolloutPodsConfig) {}},
		{name: "typed-nil client", client: typedNil, mod: func(*RolloutPodsConfig) {}},
		{name: "a clientset beside the pod client", client: &recordingPods{}, mod: func(c *RolloutPodsConfig) { c.Client = k8sfake.NewClientset() }},
		{name: "a pod lister beside the pod client", client: &recordingPods{}, mod: func(c *RolloutPodsConfig) { c.Pods = corelisters.NewPodLister(podIndexer()) }},
		{name: "no namespace", client: &recordingPods{}, mod: func(c *RolloutPodsConfig) { c.Namespace = "" }},
		{name: "no installer pod", client: &recordingPods{}, mod: func(c *RolloutPodsConfig) { c.InstallerPod = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.mod(&cfg)
			_, err := NewRolloutPodsFor(tt.client, cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// A nil or zero RolloutPods answers every method with converge.ErrInvalid, never a
// panic.
func TestRolloutPodsNotMadeByItsConstructorIsInvalid(t *testing.T) {
	ctx := context.Background()
	for name, a := range map[string]*RolloutPods{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			_, err := a.GetInstaller(ctx, rollout.Installer{Name: "i"})
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorIs(t, a.EnsureInstaller(ctx, rollout.Installer{Name: "i"}), converge.ErrInvalid)
			assert.ErrorIs(t, a.DeleteInstaller(ctx, rollout.Installer{Name: "i"}), converge.ErrInvalid)
			_, err = a.GetOperand(ctx, "n")
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorIs(t, a.GetOperands(ctx, []string{"n"}, make([]rollout.OperandState, 1)), converge.ErrInvalid)
			_, err = a.ListNodes(ctx)
			assert.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
}
