package controller

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// RolloutReconciler rolls each Rollout's revision out node by node through
// the rollout engine, as OpenShift's static-pod operators do: an installer
// pod per node and revision writes the operand, whose pod on the node then
// reports the revision it runs (label kube.LabelRevision). Pods and nodes
// are read from the manager's cache (hence list and watch on both).
type RolloutReconciler struct {
	// Client reads Rollouts, nodes and pods and writes Rollouts and pods.
	Client client.Client
	// Recorder records the engine's events about each Rollout.
	Recorder events.EventRecorder
	// Namespace holds the installer and operand pods.
	Namespace string
	// Operand names the operand pods: Operand-<node>.
	Operand string
	// InstallerImage is the image of the installer pods.
	InstallerImage string
	// Clock is the engine's clock; nil is the real clock.
	Clock clock.PassiveClock
}

// SetupRolloutReconciler registers r with mgr: every Rollout is reconciled
// when it changes, and when a node or a pod of r.Namespace does.
func SetupRolloutReconciler(mgr ctrl.Manager, r *RolloutReconciler) error {
	every := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.RolloutList
		if err := r.Client.List(ctx, &list); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing the Rollouts a node or pod change concerns")
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, ro := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&ro)})
		}
		return reqs
	})
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == r.Namespace })
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Rollout{}).Named("rollout").
		Watches(&corev1.Node{}, every).
		Watches(&corev1.Pod{}, every, builder.WithPredicates(inNamespace)).
		Complete(r)
}

// +kubebuilder:rbac:groups=sample.converge.dev,resources=rollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=rollouts/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete

// Reconcile runs one pass of the rollout of a Rollout's revision.
func (r *RolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ro := &v1alpha1.Rollout{}
	if err := r.Client.Get(ctx, req.NamespacedName, ro); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	store, err := crconverge.NewObjectStatusStore[rollout.Status](r.Client, v1alpha1.GroupVersion.WithKind("Rollout"), req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods, err := crconverge.NewRolloutPods(r.Client, kube.RolloutPodsConfig{
		Namespace: r.Namespace, Operand: r.Operand, InstallerPod: r.installerPod,
	})
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	c, err := rollout.NewController(rollout.Config{
		Status:     revisionStore{store: store, revision: ro.Spec.Revision},
		Installers: pods,
		Operands:   pods,
		Nodes:      pods,
		Policy:     ro.Spec.Policy,
		Clock:      r.Clock,
	})
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	res, err := c.Sync(ctx)
	kube.RecordEvents(r.Recorder, ro, "Rollout", res.Events)
	return crconverge.Result(res.RequeueAfter, err)
}

// installerPod is the pod that installs inst: the installer image, told
// the revision.
func (r *RolloutReconciler) installerPod(inst rollout.Installer) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "installer", Image: r.InstallerImage, Args: []string{"--revision=" + strconv.FormatInt(int64(inst.Revision), 10)},
	}}}}
}

// revisionStore is the Rollout's status with the spec's revision as the
// latest available one: the sample's revision controller.
type revisionStore struct {
	store    *kube.ObjectStatusStore[rollout.Status]
	revision int32
}

func (s revisionStore) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	st, rv, err := s.store.GetStatus(ctx)
	st.LatestAvailableRevision = max(st.LatestAvailableRevision, s.revision)
	return st, rv, err
}

func (s revisionStore) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	return s.store.UpdateStatus(ctx, st, rv)
}
