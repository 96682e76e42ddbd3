package crconverge

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// RolloutOptions configures NewRolloutController. Every field but For and
// Pods has a default.
type RolloutOptions struct {
	// For is the kind the controller reconciles, as an empty object of it
	// (&v1alpha1.Rollout{}): every object of the kind is one rollout.
	// Required; the manager's scheme must know the kind and its list kind.
	For RolloutObject
	// Pods says where the installers run and what the operands are, as
	// kube.RolloutPodsConfig does (Namespace, Operand or OperandPodName,
	// InstallerPod, and optionally NodeSelector and Owner); its Client,
	// Pods and Nodes are left unset: the manager's client serves them, from
	// the manager's cache. Required.
	Pods kube.RolloutPodsConfig
	// Engine is the engine's configuration for every pass: its Clock,
	// Jitter and ConflictRetries (zero: the engine's defaults). Its Status,
	// Installers, Operands, Nodes and Policy are the controller's (the
	// resource's status, the pods of Pods, the resource's policy) and are
	// left unset.
	Engine rollout.Config
	// Name names the controller (in logs and metrics), as the builder's
	// Named does; empty means the kind in lower case.
	Name string
	// Recorder records the engine's events about each resource; nil means
	// the manager's, mgr.GetEventRecorder("<Name>-controller").
	Recorder events.EventRecorder
	// Options are the controller's options, as the builder's WithOptions
	// takes them (the zero value: the manager's defaults); their Reconciler
	// is the controller's own and is left unset.
	Options controller.Options
}

// NewRolloutController builds the controller that rolls every object of
// opts.For's kind out through the rollout engine, registers it with mgr and
// returns it: each reconcile runs one rollout.Controller.Sync over the
// object, with the object's RolloutPolicy and with its RolloutRevision as
// the latest revision available.
//
// The status is the object's RolloutStatus, written through its status
// subresource over the resource version read: the first read is the copy
// from the manager's cache; after a write that lost a race the engine reads
// the object again from the API server (the manager's API reader) and
// decides again (rollout.Config.ConflictRetries times), and a conflict still
// left requeues the object (Result). The engine's events are recorded about
// the object. Bad input in the object (an invalid policy, a status the
// engine refuses) is a terminal error: the object waits for a change.
//
// It watches its kind, nodes (a node's change reconciles every rollout
// object) and the pods of opts.Pods.Namespace (a pod's change reconciles
// every rollout object; pods elsewhere reconcile none). The manager's cache
// then holds every node and pod: limit its pods to the namespace
// (cache.Options.ByObject) where the cluster has many.
//
// A bad option is an error matching converge.ErrInvalid, before anything is
// registered.
//
// RBAC: get, list and watch on the kind, get and update on its status;
// what kube.RolloutPods needs (get, list and watch on pods and nodes,
// create and delete on pods); create and patch on events.k8s.io events.
func NewRolloutController(mgr manager.Manager, opts RolloutOptions) (controller.Controller, error) {
	r, b, err := newRolloutReconciler(mgr, opts)
	if err != nil {
		return nil, err
	}
	return b.build(mgr, r)
}

// rolloutReconciler is NewRolloutController's reconciler.
type rolloutReconciler struct {
	client   client.Client
	reader   client.Reader
	kind     kind[RolloutObject]
	pods     *kube.RolloutPods
	engine   rollout.Config
	recorder events.EventRecorder
}

var _ reconcile.Reconciler = (*rolloutReconciler)(nil)

// newRolloutReconciler checks opts and returns the reconciler and what the
// builder registers.
func newRolloutReconciler(mgr manager.Manager, opts RolloutOptions) (*rolloutReconciler, blueprint, error) {
	c, problems := checkCommon(mgr, opts.For, opts.Name, opts.Recorder, opts.Options)
	e := opts.Engine
	if e.Status != nil || e.Installers != nil || e.Operands != nil || e.Nodes != nil {
		problems = append(problems, "Engine's Status, Installers, Operands and Nodes are the controller's")
	}
	if !reflect.ValueOf(e.Policy).IsZero() {
		problems = append(problems, "Engine.Policy is the resource's (RolloutPolicy)")
	}
	if len(problems) > 0 {
		return nil, blueprint{}, converge.Invalid("crconverge", "RolloutOptions", problems...)
	}
	pods, err := NewRolloutPods(mgr.GetClient(), opts.Pods)
	if err != nil {
		return nil, blueprint{}, converge.Invalid("crconverge", "RolloutOptions", check.Problems(err, "Pods: ")...)
	}
	r := &rolloutReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kind: c.kind, pods: pods, engine: e, recorder: c.recorder}
	if _, err := rollout.NewController(r.config(c.kind.newObject(), &rolloutStatus{})); err != nil {
		return nil, blueprint{}, converge.Invalid("crconverge", "RolloutOptions", check.Problems(err, "Engine: ")...)
	}
	every := handler.EnqueueRequestsFromMapFunc(r.everyRollout)
	inNamespace := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == opts.Pods.Namespace })
	return r, blueprint{
		name:      c.name,
		forObject: c.kind.newObject(),
		watches: []watch{
			{object: &corev1.Node{}, handler: every},
			{object: &corev1.Pod{}, handler: every, predicates: []predicate.Predicate{inNamespace}},
		},
		options: opts.Options,
	}, nil
}

// config is the engine's configuration for a pass over obj, whose status
// store is status.
func (r *rolloutReconciler) config(obj RolloutObject, status rollout.StatusStore) rollout.Config {
	cfg := r.engine
	cfg.Status, cfg.Installers, cfg.Operands, cfg.Nodes = status, r.pods, r.pods, r.pods
	cfg.Policy = obj.RolloutPolicy()
	return cfg
}

// Reconcile runs one pass of the rollout of the object at req.
func (r *rolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.kind.newObject()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	store := &rolloutStatus{objectStatus: newObjectStatus(r.client, r.reader, r.kind, req.NamespacedName,
		RolloutObject.RolloutStatus, obj)}
	store.onSchema = warnAbout(r.recorder, obj, "Rollout")
	c, err := rollout.NewController(r.config(obj, store))
	if err != nil {
		return result(0, err)
	}
	res, err := c.Sync(ctx)
	kube.RecordEvents(r.recorder, obj, "Rollout", res.Events)
	return result(res.RequeueAfter, err)
}

// everyRollout maps any event to a request for every rollout object: each
// one may cover the node or run on the pod.
func (r *rolloutReconciler) everyRollout(ctx context.Context, _ client.Object) []reconcile.Request {
	list, err := r.kind.newList()
	if err == nil {
		err = r.client.List(ctx, list)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing the rollout objects a node or pod concerns", "kind", r.kind.gvk.Kind)
		return nil
	}
	var reqs []reconcile.Request
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(client.Object); ok {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		}
		return nil
	})
	return reqs
}

// rolloutStatus is the store of one rollout object: its status, whose
// LatestAvailableRevision follows the object's RolloutRevision up.
type rolloutStatus struct {
	*objectStatus[RolloutObject, rollout.Status]
}

// GetStatus returns the object's status, with the latest revision the
// higher of the status' and the object's RolloutRevision.
func (s *rolloutStatus) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	st, rv, err := s.objectStatus.GetStatus(ctx)
	if err != nil {
		return st, rv, err
	}
	st.LatestAvailableRevision = max(st.LatestAvailableRevision, s.latest().RolloutRevision())
	return st, rv, nil
}
