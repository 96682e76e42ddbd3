package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"

	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/rollout"
)

// PDBGateConfig says which pods a node's disruption takes down and where
// the gate reads them and the PodDisruptionBudgets.
type PDBGateConfig struct {
	// Pods reads pods (an informer's cache). Required.
	Pods corelisters.PodLister
	// PDBs reads PodDisruptionBudgets (an informer's cache). Required.
	PDBs policylisters.PodDisruptionBudgetLister
	// Namespace holds the pods the disruption takes down. Required.
	Namespace string
	// Operand names the operand, as RolloutPodsConfig.Operand does: by
	// default the disruption of node N takes down the pods "<Operand>-<N>"
	// (the operand) and "<Operand>-guard-<N>" (its guard pod, which
	// OpenShift's static-pod operators cover with a PodDisruptionBudget).
	// Required unless PodSelector is set.
	Operand string
	// PodSelector, when set, picks instead the pods of Namespace on the
	// node that the disruption takes down.
	PodSelector labels.Selector
}

// PDBGate is a rollout.Gate that admits taking a node down only while
// every PodDisruptionBudget selecting a pod the disruption takes down on
// that node allows as many disruptions as the pods it covers there, as the
// eviction API would: a budget whose status the disruption controller has
// not yet written for its generation allows none. Otherwise it holds the
// node with "blocked by PodDisruptionBudget NAMESPACE/NAME".
//
// RBAC: list and watch pods and poddisruptionbudgets (policy) in Namespace,
// for the informers behind the listers.
type PDBGate struct {
	cfg PDBGateConfig
}

var _ rollout.Gate = (*PDBGate)(nil)

// NewPDBGate validates cfg and returns the gate.
func NewPDBGate(cfg PDBGateConfig) (*PDBGate, error) {
	problems := input.Fields(
		input.FieldValue{Name: "Pods", Value: cfg.Pods, Required: true},
		input.FieldValue{Name: "PDBs", Value: cfg.PDBs, Required: true},
		input.FieldValue{Name: "PodSelector", Value: cfg.PodSelector},
	)
	if cfg.Namespace == "" {
		problems = append(problems, "Namespace is required")
	}
	if cfg.Operand == "" && cfg.PodSelector == nil {
		problems = append(problems, "Operand or PodSelector is required")
	}
	if err := input.Invalid("kube", "PDBGateConfig", problems...); err != nil {
		return nil, err
	}
	return &PDBGate{cfg: cfg}, nil
}

// Admit admits the disruption of d's node, or returns why a budget holds
// it.
func (g *PDBGate) Admit(_ context.Context, d rollout.Disruption) error {
	if g == nil || g.cfg.Pods == nil {
		return input.NotMade("kube", "PDBGate")
	}
	pods, err := g.podsDown(d.Installer.Node)
	if err != nil {
		return fmt.Errorf("kube: PodDisruptionBudget gate: listing the pods of node %s: %w", d.Installer.Node, err)
	}
	if len(pods) == 0 {
		return nil
	}
	pdbs, err := g.cfg.PDBs.PodDisruptionBudgets(g.cfg.Namespace).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("kube: PodDisruptionBudget gate: listing the budgets of %s: %w", g.cfg.Namespace, err)
	}
	slices.SortFunc(pdbs, func(a, b *policyv1.PodDisruptionBudget) int { return strings.Compare(a.Name, b.Name) })
	for _, pdb := range pdbs {
		if why := blockedBy(pdb, pods); why != "" {
			return fmt.Errorf("blocked by PodDisruptionBudget %s/%s: %s", pdb.Namespace, pdb.Name, why)
		}
	}
	return nil
}

// podsDown returns the pods of the namespace on node that its disruption
// takes down.
func (g *PDBGate) podsDown(node string) ([]*corev1.Pod, error) {
	all, err := g.cfg.Pods.Pods(g.cfg.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, p := range all {
		if p.Spec.NodeName != node {
			continue
		}
		if g.cfg.PodSelector != nil {
			if g.cfg.PodSelector.Matches(labels.Set(p.Labels)) {
				out = append(out, p)
			}
		} else if p.Name == g.cfg.Operand+"-"+node || p.Name == g.cfg.Operand+"-guard-"+node {
			out = append(out, p)
		}
	}
	return out, nil
}

// blockedBy says why pdb does not allow the disruption of pods ("" when it
// allows it or selects none of them).
func blockedBy(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) string {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return "its selector is invalid: " + err.Error()
	}
	covered := 0
	for _, p := range pods {
		// policy/v1: a nil selector selects no pod, an empty one every pod.
		if pdb.Spec.Selector != nil && sel.Matches(labels.Set(p.Labels)) {
			covered++
		}
	}
	switch {
	case covered == 0:
		return ""
	case pdb.Status.ObservedGeneration < pdb.Generation:
		return fmt.Sprintf("its status is of generation %d, not %d: the disruption controller has not processed it yet",
			pdb.Status.ObservedGeneration, pdb.Generation)
	case int(pdb.Status.DisruptionsAllowed) < covered:
		return fmt.Sprintf("it allows %d disruptions and the node runs %d of its pods", pdb.Status.DisruptionsAllowed, covered)
	}
	return ""
}
