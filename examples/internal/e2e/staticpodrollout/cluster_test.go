package staticpodrollout

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/converge-dev/converge"
	conformance "github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

func TestScaled(t *testing.T) {
	assert.Equal(t, Config{Nodes: 3, MaxUnavailable: 1, MaxSyncs: 250, Timeout: 10*time.Minute + 3*time.Second},
		Config{Nodes: 3}.Scaled())
	assert.Equal(t, Config{Nodes: 10000, MaxUnavailable: 100, MaxSyncs: 5100, Timeout: 10*time.Minute + 10000*time.Second},
		Config{Nodes: 10000}.Scaled())
	assert.Equal(t, Config{Nodes: 10, MaxUnavailable: 5, MaxSyncs: 7, Timeout: time.Second},
		Config{Nodes: 10, MaxUnavailable: 5, MaxSyncs: 7, Timeout: time.Second}.Scaled(), "what is set stays")
}

func TestConfigRateLimit(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantQPS   float32
		wantBurst int
	}{
		{name: "a real cluster keeps client-go's defaults", cfg: Config{Nodes: 3, Kubeconfig: "k"}},
		{name: "a simulated kubelet grows with the nodes", cfg: Config{Nodes: 3, Kubeconfig: "k", Simulate: true}, wantQPS: 130, wantBurst: 260},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qps, burst := tt.cfg.RateLimit()
			assert.Equal(t, tt.wantQPS, qps)
			assert.Equal(t, tt.wantBurst, burst)
		})
	}
}

func TestConfigSelector(t *testing.T) {
	tests := []struct {
		name     string
		selector string
		labels   labels.Set
		want     bool
	}{
		{name: "a label that exists", selector: "node-role.kubernetes.io/control-plane",
			labels: labels.Set{"node-role.kubernetes.io/control-plane": ""}, want: true},
		{name: "a node without it", selector: "node-role.kubernetes.io/control-plane", labels: labels.Set{"other": ""}},
		{name: "a selector that does not parse selects nothing", selector: "a b c", labels: labels.Set{"a": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Config{NodeSelector: tt.selector}.Selector().Matches(tt.labels))
		})
	}
}

// rolloutPods returns kube.RolloutPods reading pod from its lister, as the engine reads pods.
func rolloutPods(t *testing.T, pod *corev1.Pod) *kube.RolloutPods {
	t.Helper()
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	require.NoError(t, pods.Add(pod))
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	a, err := kube.NewRolloutPods(kube.RolloutPodsConfig{Client: fake.NewClientset(), Pods: corelisters.NewPodLister(pods),
		Nodes: corelisters.NewNodeLister(nodes), Namespace: "ns", Operand: "operand",
		InstallerPod: func(rollout.Installer) *corev1.Pod { return &corev1.Pod{} }})
	require.NoError(t, err)
	return a
}

func TestInstallerState(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	meta := metav1.ObjectMeta{Name: "installer-2-master-0", Namespace: "ns"}
	tests := []struct {
		name string
		pod  corev1.Pod
		want rollout.InstallerState
	}{
		{name: "pending without start time uses creation time",
			pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: meta.Name, Namespace: meta.Namespace, CreationTimestamp: start}},
			want: rollout.InstallerState{Phase: rollout.InstallerPending, StartTime: start.Time}},
		{name: "running", pod: corev1.Pod{ObjectMeta: meta, Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start}},
			want: rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: start.Time}},
		{name: "succeeded", pod: corev1.Pod{ObjectMeta: meta, Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
			want: rollout.InstallerState{Phase: rollout.InstallerSucceeded}},
		{name: "OOM killed", pod: corev1.Pod{ObjectMeta: meta, Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "m",
			ContainerStatuses: []corev1.ContainerStatus{{Name: "installer", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", Message: "out of memory"}}}}}},
			want: rollout.InstallerState{Phase: rollout.InstallerFailed, Message: "m",
				Containers: []rollout.ContainerTermination{{Name: "installer", Message: "out of memory", OOMKilled: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rolloutPods(t, &tt.pod).GetInstaller(context.Background(), rollout.Installer{Name: meta.Name})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOperandState(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rev := func(r string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: operandPodName("operand", "master-0"), Namespace: "ns", Labels: map[string]string{kube.LabelRevision: r}}
	}
	tests := []struct {
		name    string
		pod     corev1.Pod
		want    rollout.OperandState
		wantErr bool
	}{
		{name: "ready", pod: corev1.Pod{ObjectMeta: rev("3"), Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: since}}}},
			want: rollout.OperandState{Phase: rollout.OperandReady, Revision: 3, ReadySince: since.Time}},
		{name: "running, not ready", pod: corev1.Pod{ObjectMeta: rev("3"), Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			want: rollout.OperandState{Phase: rollout.OperandPending, Revision: 3}},
		{name: "failed", pod: corev1.Pod{ObjectMeta: rev("2"), Status: corev1.PodStatus{Phase: corev1.PodFailed, Message: "crash"}},
			want: rollout.OperandState{Phase: rollout.OperandFailed, Revision: 2, Message: "crash"}},
		{name: "no revision label", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rev("").Name, Namespace: "ns"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rolloutPods(t, &tt.pod).GetOperand(context.Background(), "master-0")
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestConfigMapStatusConformance(t *testing.T) {
	ctx := context.Background()
	s, err := NewStatusStore(NewMemoryClient(), "ns", "operand")
	require.NoError(t, err)
	_, err = s.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1,
		NodeStatuses: []rollout.NodeStatus{{NodeName: "a", CurrentRevision: 1}}}, "")
	require.NoError(t, err)
	require.NoError(t, conformance.TestRolloutStatusStore(ctx, s))
}

func TestConfigMapStatusUpdate(t *testing.T) {
	ctx := context.Background()
	initial := rollout.Status{LatestAvailableRevision: 1, NodeStatuses: []rollout.NodeStatus{{NodeName: "a", CurrentRevision: 1}}}
	next := rollout.Status{LatestAvailableRevision: 2, NodeStatuses: []rollout.NodeStatus{{NodeName: "a", CurrentRevision: 1, TargetRevision: 2}}}
	tests := []struct {
		name string
		// rv picks the version to write over from the one read.
		rv           func(read string) string
		wantConflict bool
	}{
		{name: "current version", rv: func(read string) string { return read }},
		{name: "stale version", rv: func(string) string { return "1" }, wantConflict: true},
		// With no version kube.ConfigMapStatusStore creates the ConfigMap, which exists.
		{name: "no version", rv: func(string) string { return "" }, wantConflict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := NewMemoryClient()
			s, err := NewStatusStore(client, "ns", "operand")
			require.NoError(t, err)
			_, err = s.UpdateStatus(ctx, initial, "")
			require.NoError(t, err)
			name := StatusName("operand")
			cm, err := client.CoreV1().ConfigMaps("ns").Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			cm.Annotations = map[string]string{"other": "writer"}
			_, err = client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{})
			require.NoError(t, err)
			_, read, err := s.GetStatus(ctx)
			require.NoError(t, err)

			written, err := s.UpdateStatus(ctx, next, tt.rv(read))
			got, gotRV, getErr := s.GetStatus(ctx)
			require.NoError(t, getErr)
			if tt.wantConflict {
				require.True(t, converge.IsConflict(err), "%v", err)
				assert.True(t, apierrors.IsConflict(err), "the API's 409 stays reachable")
				assert.Equal(t, initial, got, "a conflicting write changes nothing")
			} else {
				require.NoError(t, err)
				assert.Equal(t, next, got)
				assert.Equal(t, written, gotRV)
			}
			cm, err = client.CoreV1().ConfigMaps("ns").Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"other": "writer"}, cm.Annotations, "the status write keeps other writers' annotations")
		})
	}
}
