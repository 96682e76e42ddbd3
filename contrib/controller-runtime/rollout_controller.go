package crconverge

import (
	"context"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
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
	// (&v1alpha1.Rollout{}): every object of the kind that Namespaces and
	// Selector select is one rollout. Required; the manager's scheme must
	// know the kind and its list kind.
	For RolloutObject
	// Pods says where the installers run and what the operands are, as
	// kube.RolloutPodsConfig does (Namespace, Operand or OperandPodName,
	// InstallerPod, and optionally NodeSelector and Owner); its Client,
	// Pods and Nodes are left unset: the manager's client serves them, from
	// the manager's cache. Required, unless For is a RolloutPodsConfigurer:
	// then each object makes its own configuration from this one, and only
	// that is checked. A nil Owner is the rollout object itself (see
	// NewRolloutController).
	Pods kube.RolloutPodsConfig
	// Policy is the controller's default policy, laid under each
	// resource's RolloutPolicy: a field the resource leaves zero (a zero
	// number or duration, false, a nil pointer or list) takes Policy's, and
	// a struct the resource sets in part (a backoff) takes Policy's in its
	// zero fields. The zero value adds nothing.
	Policy rollout.Policy
	// Namespaces are the namespaces whose objects the controller owns;
	// none means every namespace (a cluster-scoped kind has none).
	Namespaces []string
	// Selector selects, by their labels, the objects the controller owns;
	// nil means every object. An object the controller does not own is
	// never acted on: no reconcile, no status write, no event, no pod
	// mapped to it.
	Selector labels.Selector
	// Engine is the engine's configuration for every pass: its Clock,
	// Jitter and ConflictRetries (zero: the engine's defaults). Its Status,
	// Installers, Operands, Nodes, Policy and Generation are the
	// controller's (the resource's status, the pods of Pods, the
	// resource's policy over Policy, the resource's generation) and are
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

// NewRolloutController builds the controller that rolls the objects of
// opts.For's kind out through the rollout engine, registers it with mgr and
// returns it: each reconcile runs one rollout.Controller.Sync over the
// object, with the object's RolloutPolicy over opts.Policy, its
// RolloutRevision as the latest revision available, its generation as the
// status' ObservedGeneration, and its pods configuration (opts.Pods, or
// the object's own through RolloutPodsConfigurer).
//
// It owns the objects of opts.Namespaces that opts.Selector selects, and
// acts on no other: its watches pass only their events, and a reconcile
// checks the object it reads again (a cache may hold more), so that an
// object outside is not reconciled, its status is not written, no event is
// recorded about it and no pod maps to it.
//
// The installer pods' controller owner is the rollout object unless the
// pods configuration names another, so that deleting the object deletes
// them; where the object cannot own them (a namespaced object whose pods
// live in another namespace: an owner reference across namespaces is
// invalid) they have no owner, and naming the object as their owner there
// is a terminal error. With OwnerReferencesPermissionEnforcement, the
// owner reference needs update on the kind's finalizers subresource.
//
// The status is the object's RolloutStatus, written through its status
// subresource over the resource version read: the first read is the copy
// from the manager's cache; after a write that lost a race the engine reads
// the object again from the API server (the manager's API reader) and
// decides again (rollout.Config.ConflictRetries times), and a conflict still
// left requeues the object (Result). The engine's events are recorded about
// the object. Bad input in the object (an invalid policy or pods
// configuration, a status the engine refuses) is a terminal error: the
// object waits for a change.
//
// It watches its kind, nodes (a node's change reconciles every rollout
// object it owns) and pods (a pod's change reconciles each rollout object
// it owns whose pods live in the pod's namespace; without
// RolloutPodsConfigurer only pods of opts.Pods.Namespace pass). The
// manager's cache then holds every node and pod: limit its pods to the
// namespaces of the rollouts (cache.Options.ByObject) where the cluster has
// many.
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
	owned    selection
	podsBase kube.RolloutPodsConfig
	policy   rollout.Policy
	engine   rollout.Config
	recorder events.EventRecorder
}

var _ reconcile.Reconciler = (*rolloutReconciler)(nil)

// newRolloutReconciler checks opts and returns the reconciler and what the
// builder registers.
func newRolloutReconciler(mgr manager.Manager, opts RolloutOptions) (*rolloutReconciler, blueprint, error) {
	c, problems := checkCommon(mgr, opts.For, opts.Name, opts.Recorder, opts.Options)
	var cl client.Client
	if !check.IsNil(mgr) {
		cl = mgr.GetClient()
	}
	owned, selProblems := checkSelection(cl, opts.For, opts.Namespaces, opts.Selector)
	problems = append(append(problems, selProblems...), checkRolloutEngine(opts)...)
	if len(problems) > 0 {
		return nil, blueprint{}, converge.Invalid("crconverge", "RolloutOptions", problems...)
	}
	_, perObject := opts.For.(RolloutPodsConfigurer)
	if !perObject {
		if _, err := NewRolloutPods(cl, opts.Pods); err != nil {
			return nil, blueprint{}, converge.Invalid("crconverge", "RolloutOptions", check.Problems(err, "Pods: ")...)
		}
	}
	r := &rolloutReconciler{client: cl, reader: mgr.GetAPIReader(), kind: c.kind, owned: owned, podsBase: opts.Pods,
		policy: opts.Policy, engine: opts.Engine, recorder: c.recorder}
	if _, err := rollout.NewController(r.config(c.kind.newObject(), &rolloutStatus{}, &kube.RolloutPods{})); err != nil {
		return nil, blueprint{}, converge.Invalid("crconverge", "RolloutOptions", check.Problems(err, "Engine: ")...)
	}
	var podPredicates []predicate.Predicate
	if !perObject {
		podPredicates = append(podPredicates, predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetNamespace() == opts.Pods.Namespace }))
	}
	return r, blueprint{
		name:          c.name,
		forObject:     c.kind.newObject(),
		forPredicates: []predicate.Predicate{owned.predicate()},
		watches: []watch{
			{object: &corev1.Node{}, handler: handler.EnqueueRequestsFromMapFunc(r.everyRollout)},
			{object: &corev1.Pod{}, handler: handler.EnqueueRequestsFromMapFunc(r.podRollouts), predicates: podPredicates},
		},
		options: opts.Options,
	}, nil
}

// checkRolloutEngine returns what is wrong with opts' engine configuration
// and default policy.
func checkRolloutEngine(opts RolloutOptions) []string {
	var problems []string
	e := opts.Engine
	if e.Status != nil || e.Installers != nil || e.Operands != nil || e.Nodes != nil {
		problems = append(problems, "Engine's Status, Installers, Operands and Nodes are the controller's")
	}
	if !reflect.ValueOf(e.Policy).IsZero() {
		problems = append(problems, "Engine.Policy is the resource's (RolloutPolicy, over RolloutOptions.Policy)")
	}
	if e.Generation != 0 {
		problems = append(problems, "Engine.Generation is the resource's")
	}
	return append(problems, check.Problems(opts.Policy.Validate(), "Policy: ")...)
}

// config is the engine's configuration for a pass over obj, whose status
// store is status and whose pods are pods.
func (r *rolloutReconciler) config(obj RolloutObject, status rollout.StatusStore, pods *kube.RolloutPods) rollout.Config {
	cfg := r.engine
	cfg.Status, cfg.Installers, cfg.Operands, cfg.Nodes = status, pods, pods, pods
	cfg.Policy = underDefault(obj.RolloutPolicy(), r.policy)
	cfg.Generation = obj.GetGeneration()
	return cfg
}

// Reconcile runs one pass of the rollout of the object at req, when the
// controller owns it.
func (r *rolloutReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.kind.newObject()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !r.owned.owns(obj) {
		klog.FromContext(ctx).V(2).Info("Not reconciling an object the controller does not own")
		return reconcile.Result{}, nil
	}
	pods, err := r.podsOf(obj)
	if err != nil {
		return result(0, err)
	}
	store := &rolloutStatus{objectStatus: newObjectStatus(r.client, r.reader, r.kind, req.NamespacedName,
		RolloutObject.RolloutStatus, obj)}
	store.onSchema = warnAbout(r.recorder, obj, "Rollout")
	c, err := rollout.NewController(r.config(obj, store, pods))
	if err != nil {
		return result(0, err)
	}
	res, err := c.Sync(ctx)
	kube.RecordEvents(r.recorder, obj, "Rollout", res.Events)
	return result(res.RequeueAfter, err)
}

// ownedRollouts lists the rollout objects the controller owns, for the
// event of what (in its log when the list fails).
func (r *rolloutReconciler) ownedRollouts(ctx context.Context, what string) []RolloutObject {
	list, err := r.kind.newList()
	if err == nil {
		var opts []client.ListOption
		if r.owned.selector != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: r.owned.selector})
		}
		err = r.client.List(ctx, list, opts...)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing the rollout objects "+what+" concerns", "kind", r.kind.gvk.Kind)
		return nil
	}
	var objs []RolloutObject
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if obj, ok := o.(RolloutObject); ok && r.owned.owns(obj) {
			objs = append(objs, obj)
		}
		return nil
	})
	return objs
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
