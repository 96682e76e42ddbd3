package controller

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// RevisionLabel is the label of the revision an installer installs and an
// operand pod runs.
const RevisionLabel = "sample.converge.dev/revision"

// RolloutReconciler rolls each Rollout's revision out node by node through
// the rollout engine, as OpenShift's static-pod operators do: an installer
// pod per node and revision writes the operand, whose pod on the node then
// reports the revision it runs (label RevisionLabel).
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
	c, err := rollout.NewController(rollout.Config{
		Status:     revisionStore{store: store, revision: ro.Spec.Revision},
		Installers: installerPods{r: r},
		Operands:   rollout.OperandReaderFunc(r.operand),
		Nodes:      rollout.NodeListerFunc(r.nodes),
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

// nodes lists every node, unreachable unless Ready.
func (r *RolloutReconciler) nodes(ctx context.Context) ([]rollout.Node, error) {
	var list corev1.NodeList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil, err
	}
	nodes := make([]rollout.Node, 0, len(list.Items))
	for _, n := range list.Items {
		nodes = append(nodes, rollout.Node{Name: n.Name, Unreachable: !hasCondition(n.Status.Conditions, corev1.NodeReady)})
	}
	return nodes, nil
}

func hasCondition(conds []corev1.NodeCondition, t corev1.NodeConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// operand reads the operand pod of node.
func (r *RolloutReconciler) operand(ctx context.Context, node string) (rollout.OperandState, error) {
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Operand + "-" + node}, pod)
	if apierrors.IsNotFound(err) {
		return rollout.OperandState{Phase: rollout.OperandNotFound}, nil
	}
	if err != nil {
		return rollout.OperandState{}, err
	}
	rev, _ := strconv.ParseInt(pod.Labels[RevisionLabel], 10, 32)
	st := rollout.OperandState{Phase: rollout.OperandPending, Revision: int32(rev)}
	switch {
	case pod.Status.Phase == corev1.PodFailed:
		st.Phase = rollout.OperandFailed
	case pod.Status.Phase == corev1.PodRunning:
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				st.Phase, st.ReadySince = rollout.OperandReady, c.LastTransitionTime.Time
			}
		}
	}
	return st, nil
}

// installerPods runs installers as pods on their nodes.
type installerPods struct {
	r *RolloutReconciler
}

var _ rollout.InstallerClient = installerPods{}

func (p installerPods) GetInstaller(ctx context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	pod := &corev1.Pod{}
	err := p.r.Client.Get(ctx, client.ObjectKey{Namespace: p.r.Namespace, Name: inst.Name}, pod)
	if apierrors.IsNotFound(err) {
		return rollout.InstallerState{Phase: rollout.InstallerNotFound}, nil
	}
	if err != nil {
		return rollout.InstallerState{}, err
	}
	return kube.InstallerPodState(pod), nil
}

func (p installerPods) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.r.Namespace, Name: inst.Name,
			Labels: map[string]string{RevisionLabel: strconv.FormatInt(int64(inst.Revision), 10)}},
		Spec: corev1.PodSpec{
			NodeName:      inst.Node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "installer", Image: p.r.InstallerImage,
				Args: []string{"--revision=" + strconv.FormatInt(int64(inst.Revision), 10)}}},
		},
	}
	err := p.r.Client.Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (p installerPods) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.r.Namespace, Name: inst.Name}}
	return client.IgnoreNotFound(p.r.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)))
}
