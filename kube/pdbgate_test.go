package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/rollout"
)

func pdbTestPod(name, node string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "etcd", Labels: lbls}, Spec: corev1.PodSpec{NodeName: node}}
}

func pdb(name string, selector *metav1.LabelSelector, allowed int32, generation, observed int64) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "etcd", Generation: generation},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: selector},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed, ObservedGeneration: observed},
	}
}

func guardSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guard"}}
}

func pdbGate(t *testing.T, cfg PDBGateConfig, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget) *PDBGate {
	t.Helper()
	podIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		require.NoError(t, podIndex.Add(p))
	}
	pdbIndex := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, b := range pdbs {
		require.NoError(t, pdbIndex.Add(b))
	}
	cfg.Pods, cfg.PDBs, cfg.Namespace = corelisters.NewPodLister(podIndex), policylisters.NewPodDisruptionBudgetLister(pdbIndex), "etcd"
	g, err := NewPDBGate(cfg)
	require.NoError(t, err)
	return g
}

func TestPDBGateAdmitsOnlyWhatEveryBudgetAllows(t *testing.T) {
	onA := []*corev1.Pod{
		pdbTestPod("etcd-a", "a", map[string]string{"app": "etcd"}),
		pdbTestPod("etcd-guard-a", "a", map[string]string{"app": "guard"}),
		pdbTestPod("etcd-guard-b", "b", map[string]string{"app": "guard"}),
		pdbTestPod("web-a", "a", map[string]string{"app": "guard"}), // on the node, not the operand's
	}
	everything := &metav1.LabelSelector{}
	tests := []struct {
		name    string
		cfg     PDBGateConfig
		pods    []*corev1.Pod
		pdbs    []*policyv1.PodDisruptionBudget
		blocked string // the budget named, "" when admitted
	}{
		{name: "no budget admits", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA},
		{name: "a node without the operand's pods is admitted", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA[2:3],
			pdbs: []*policyv1.PodDisruptionBudget{pdb("guard", guardSelector(), 0, 1, 1)}},
		{name: "a budget that allows the guard pod's disruption admits", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("guard", guardSelector(), 1, 1, 1)}},
		{name: "a budget that allows none holds the node", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("guard", guardSelector(), 0, 1, 1)}, blocked: "etcd/guard"},
		{name: "a budget covering the operand and its guard needs two disruptions", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("all", everything, 1, 1, 1)}, blocked: "etcd/all"},
		{name: "a budget whose status is of an older generation allows nothing", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("guard", guardSelector(), 3, 2, 1)}, blocked: "etcd/guard"},
		{name: "a nil selector selects no pod", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("none", nil, 0, 1, 1)}},
		{name: "a budget of other pods does not hold", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("api", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}, 0, 1, 1)}},
		{name: "every budget must allow it, the first in name order is named", cfg: PDBGateConfig{Operand: "etcd"}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("b-guard", guardSelector(), 0, 1, 1), pdb("a-all", everything, 0, 1, 1)}, blocked: "etcd/a-all"},
		{name: "a pod selector picks the pods instead", cfg: PDBGateConfig{PodSelector: labels.SelectorFromSet(labels.Set{"app": "guard"})}, pods: onA,
			pdbs: []*policyv1.PodDisruptionBudget{pdb("guard", guardSelector(), 1, 1, 1)}, blocked: "etcd/guard"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := pdbGate(t, tt.cfg, tt.pods, tt.pdbs)
			err := g.Admit(context.Background(), rollout.Disruption{Installer: rollout.Installer{Name: "installer-2-a", Node: "a", Revision: 2}})
			if tt.blocked == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "blocked by PodDisruptionBudget "+tt.blocked)
		})
	}
}

func TestNewPDBGateRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  PDBGateConfig
		want string
	}{
		{name: "nothing", want: "kube: invalid PDBGateConfig: Pods is required; PDBs is required; Namespace is required; Operand or PodSelector is required"},
		{name: "a typed nil", cfg: PDBGateConfig{Pods: corelisters.PodLister((*nilPodLister)(nil)), PDBs: policylisters.NewPodDisruptionBudgetLister(cache.NewIndexer(cache.MetaNamespaceKeyFunc, nil)),
			Namespace: "etcd", Operand: "etcd"}, want: "kube: invalid PDBGateConfig: Pods holds a nil *kube.nilPodLister"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewPDBGate(tt.cfg)
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tt.want)
		})
	}
	var zero *PDBGate
	assert.ErrorIs(t, zero.Admit(context.Background(), rollout.Disruption{}), converge.ErrInvalid, "a gate not made by NewPDBGate is an error, not a panic")
}

type nilPodLister struct{ corelisters.PodLister }
