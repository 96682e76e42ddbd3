package crconverge

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/kube"
)

// podsConfig returns the pods configuration of obj: the controller's, or
// what obj's RolloutPodsConfigurer makes of it; with obj as the
// installers' controller owner when it names none and can own them. An
// owner reference across namespaces is invalid (the garbage collector
// takes the owner for absent and deletes the pods), so obj owns pods only
// in its own namespace, or anywhere when it is cluster-scoped; naming it
// as the owner of pods elsewhere is an error matching converge.ErrInvalid.
func (r *rolloutReconciler) podsConfig(obj RolloutObject) (kube.RolloutPodsConfig, error) {
	cfg := r.podsBase
	if cfg.Owner != nil {
		cfg.Owner = cfg.Owner.DeepCopy()
	}
	if c, ok := obj.(RolloutPodsConfigurer); ok {
		cfg = c.RolloutPods(cfg)
	}
	mayOwn := obj.GetNamespace() == "" || obj.GetNamespace() == cfg.Namespace
	switch {
	case cfg.Owner == nil && mayOwn:
		cfg.Owner = metav1.NewControllerRef(obj, r.kind.gvk)
	case cfg.Owner != nil && cfg.Owner.UID == obj.GetUID() && !mayOwn:
		return cfg, converge.Invalidf("crconverge", "pods configuration",
			"%s %s in namespace %q cannot own pods in namespace %q", r.kind.gvk.Kind, obj.GetName(), obj.GetNamespace(), cfg.Namespace)
	}
	return cfg, nil
}

// podsOf returns the installer client, operand reader and node lister of
// obj's pods configuration.
func (r *rolloutReconciler) podsOf(obj RolloutObject) (*kube.RolloutPods, error) {
	cfg, err := r.podsConfig(obj)
	if err != nil {
		return nil, err
	}
	return NewRolloutPods(r.client, cfg)
}

// podRollouts maps a pod's event to a request for each rollout object
// whose installers and operands live in the pod's namespace.
func (r *rolloutReconciler) podRollouts(ctx context.Context, pod client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, obj := range r.ownedRollouts(ctx, "a pod") {
		if cfg, err := r.podsConfig(obj); err == nil && cfg.Namespace == pod.GetNamespace() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
	}
	return reqs
}

// everyRollout maps a node's event to a request for every rollout object
// the controller owns: each one may cover the node.
func (r *rolloutReconciler) everyRollout(ctx context.Context, _ client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, obj := range r.ownedRollouts(ctx, "a node") {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	}
	return reqs
}
