//go:build integration

package kube

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/rollout"
)

// The PodDisruptionBudget gate reads what the apiserver holds: the test
// writes the budget's status, as the disruption controller (which the test
// environment does not run) would.
func TestPDBGateOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "pdb-gate")
	for name, app := range map[string]string{"etcd-a": "etcd", "etcd-guard-a": "guard"} {
		_, err := c.typed.CoreV1().Pods("pdb-gate").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: "a", Containers: []corev1.Container{{Name: "c", Image: "etcd"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	pdbs := c.typed.PolicyV1().PodDisruptionBudgets("pdb-gate")
	budget, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-guard-pdb"},
		Spec: policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guard"}},
			MinAvailable: ptr.To(intstr.FromInt32(2))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	factory := informers.NewSharedInformerFactoryWithOptions(c.typed, 0, informers.WithNamespace("pdb-gate"))
	gate, err := NewPDBGate(PDBGateConfig{Pods: factory.Core().V1().Pods().Lister(),
		PDBs: factory.Policy().V1().PodDisruptionBudgets().Lister(), Namespace: "pdb-gate", Operand: "etcd"})
	require.NoError(t, err)
	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop)
	factory.Start(stop)
	for typ, ok := range factory.WaitForCacheSync(stop) {
		require.True(t, ok, "%v synced", typ)
	}
	disruption := rollout.Disruption{Installer: rollout.Installer{Name: "installer-2-a", Node: "a", Revision: 2}}
	admit := func() error { return gate.Admit(ctx, disruption) }

	assert.ErrorContains(t, admit(), "blocked by PodDisruptionBudget pdb-gate/etcd-guard-pdb", "no status yet: nothing is allowed")
	budget.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: budget.Generation, DisruptionsAllowed: 1,
		CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}
	_, err = pdbs.UpdateStatus(ctx, budget, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return admit() == nil }, 10*time.Second, 20*time.Millisecond, "one disruption allowed: the node goes")
}
