package staticpodrollout

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/kube"
)

// TestKubeletMovesPodsOnePhaseAStep checks the simulated kubelet: an
// installer goes Pending → Running → Succeeded (or Failed, as scripted)
// one step at a time, a succeeded one restarts the node's operand at its
// revision not ready, the operand is ready a step later, and pods that
// have finished are no longer the kubelet's to move.
func TestKubeletMovesPodsOnePhaseAStep(t *testing.T) {
	ctx := context.Background()
	client := NewMemoryClient()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	require.NoError(t, Seed(ctx, client, []string{"master-0", "master-1"}, "ns", "operand", clk))
	k, err := startKubelet(ctx, client, "ns", "operand", clk, map[string]string{"installer-2-master-1": "disk full"}, 5*time.Second)
	require.NoError(t, err)
	defer k.stop()
	for _, node := range []string{"master-0", "master-1"} {
		_, err := client.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "installer-2-" + node, Namespace: "ns",
				Labels: map[string]string{kube.LabelApp: appInstaller, kube.LabelRevision: "2", kube.LabelNode: node}},
			Spec: corev1.PodSpec{NodeName: node}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	pod := func(name string) *corev1.Pod {
		p, err := client.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return p
	}
	tests := []struct {
		name       string
		moved      bool
		installers [2]corev1.PodPhase
		// operandRevision and operandReady are master-0's operand after the step.
		operandRevision string
		operandReady    bool
	}{
		{name: "installers start", moved: true, installers: [2]corev1.PodPhase{corev1.PodRunning, corev1.PodRunning},
			operandRevision: "1", operandReady: true},
		{name: "installers end, the operand restarts", moved: true,
			installers: [2]corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed}, operandRevision: "2"},
		{name: "the operand gets ready", moved: true, installers: [2]corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed},
			operandRevision: "2", operandReady: true},
		{name: "nothing left to move", installers: [2]corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed},
			operandRevision: "2", operandReady: true},
	}
	for _, tt := range tests {
		moved, err := k.step(ctx)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.moved, moved, tt.name)
		assert.Equal(t, tt.installers[0], pod("installer-2-master-0").Status.Phase, tt.name)
		assert.Equal(t, tt.installers[1], pod("installer-2-master-1").Status.Phase, tt.name)
		op := pod("operand-master-0")
		assert.Equal(t, tt.operandRevision, op.Labels[kube.LabelRevision], tt.name)
		assert.Equal(t, tt.operandReady, podReady(op), tt.name)
		assert.Equal(t, "1", pod("operand-master-1").Labels[kube.LabelRevision], "%s: a failed installer leaves the operand", tt.name)
	}
	failed := pod("installer-2-master-1").Status.ContainerStatuses
	require.Len(t, failed, 1)
	assert.Equal(t, "disk full", failed[0].State.Terminated.Message)
	assert.Empty(t, k.moving, "finished pods are not the kubelet's to move")
}

// TestPaceWatchersKeepsWatchersFromOverflowing writes far more pods than a
// fake watcher holds (100) while its reader is slow: every write waits for
// the backlog to drain instead of the watcher panicking, and the reader
// gets every event.
func TestPaceWatchersKeepsWatchersFromOverflowing(t *testing.T) {
	ctx := context.Background()
	client := k8sfake.NewSimpleClientset()
	paceWatchers(client, watcherBacklog, watcherDrainTimeout)
	w, err := client.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	const writes = 500
	received := make(chan int)
	go func() {
		n := 0
		for range w.ResultChan() {
			if n++; n%10 == 0 {
				time.Sleep(time.Millisecond)
			}
			if n == writes {
				break
			}
		}
		received <- n
	}()
	for i := range writes {
		_, err := client.CoreV1().Pods("ns").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("pod-%d", i), Namespace: "ns"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	assert.Equal(t, writes, <-received)
	w.Stop()
}

// TestWaitForgetsTheFakeClientsetsCalls checks that a step of the in-memory
// cluster clears the calls the fake clientset records, which would
// otherwise hold a copy of every status written.
func TestWaitForgetsTheFakeClientsetsCalls(t *testing.T) {
	ctx := context.Background()
	client := NewMemoryClient()
	cfg := Config{Nodes: 2, Namespace: "ns", Operand: "operand", MaxUnavailable: 1}
	store, err := NewStatusStore(client, "ns", "operand")
	require.NoError(t, err)
	c, err := Start(ctx, client, store, cfg, io.Discard, nil)
	require.NoError(t, err)
	defer c.Stop()
	require.NoError(t, c.Publish(ctx, 2))
	require.NotEmpty(t, client.Actions())
	informer := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace("ns"))
	pods := informer.Core().V1().Pods().Lister()
	stop := make(chan struct{})
	defer func() {
		close(stop)
		informer.Shutdown()
	}()
	informer.Start(stop)
	informer.WaitForCacheSync(stop)

	require.NoError(t, c.Wait(ctx, 0, pods))
	for _, a := range client.Actions() {
		assert.NotEqual(t, "configmaps", a.GetResource().Resource, "no status write is still recorded: %v", a)
	}
}
