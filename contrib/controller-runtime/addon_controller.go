package crconverge

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
)

// AddonOptions configures NewAddonController. Every field but For and
// Engine.Driver has a default.
type AddonOptions struct {
	// For is the kind the controller reconciles, as an empty object of it
	// (&v1alpha1.Addon{}): every object of the kind is one add-on.
	// Required; the manager's scheme must know the kind and its list kind.
	For AddonObject
	// Engine is the engine's configuration for every reconcile: its Driver
	// (required), Owner, Table, Clock, Jitter and Redact, as
	// addon.Config documents them and with its defaults. Its Store and
	// Policy are the controller's (the resource, and its AddonPolicy) and
	// are left unset.
	Engine addon.Config
	// Owns lists the kinds of the objects the driver makes with a
	// controller reference to their add-on's object (controllerutil.
	// SetControllerReference), as empty objects of them: a change to one
	// reconciles its owner, as the builder's Owns does. Default: none.
	Owns []client.Object
	// Watches lists the kinds of other objects of the add-ons, watched as
	// metadata only (a Helm release's objects, which carry no owner
	// reference but Helm's release annotations): MapWatched maps each
	// event to the add-ons to reconcile. Default: none. (A manager that
	// stops leaves one goroutine of each such watch blocked, in
	// apimachinery's watch.Filter; a test that checks for leaked goroutines
	// passes crtest.IgnoreStoppedMetadataWatch to goleak, which says why.)
	Watches []schema.GroupVersionKind
	// MapWatched maps an object of a Watches kind (a
	// *metav1.PartialObjectMetadata) to the requests of its add-ons'
	// objects. Required with Watches, and only with them.
	MapWatched handler.MapFunc
	// Finalizer keeps an object until the engine has uninstalled its
	// add-on (Result.Deleted); empty means "<group>/<Name>", the kind's
	// API group and the controller's name.
	Finalizer string
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

// NewAddonController builds the controller that keeps the add-on of every
// object of opts.For's kind installed through the add-on engine, registers
// it with mgr and returns it: each reconcile runs one addon.Machine
// Reconcile over the object, with the object's AddonPolicy and an
// addon.Spec of its AddonVersion and metadata (see AddonObject). The
// driver's requests carry the object (addon.Request.Host, a copy of the
// typed object).
//
// The status is the object's AddonStatus, written through its status
// subresource over the resource version read: the first read is the copy
// from the manager's cache, and a conflict makes the engine read the object
// again from the API server (the manager's API reader) and decide again, so
// no outcome is lost; a conflict still left requeues the object (Result).
// The engine's events are recorded about the object. Bad input in the
// object (an invalid policy or spec) is a terminal error: the object waits
// for a change.
//
// The controller adds opts.Finalizer to an object not being deleted before
// the engine acts on it (an object whose policy is invalid gets none), and
// removes it only once the engine reports the add-on uninstalled
// (addon.Result.Deleted). Both writes are merge patches
// over the resource version read, so a finalizer another controller added
// meanwhile is never dropped: the race is a conflict, and the object is
// reconciled again.
//
// It watches its kind, the kinds of opts.Owns (an object reconciles its
// controller owner of the kind) and those of opts.Watches (through
// opts.MapWatched).
//
// A bad option is an error matching converge.ErrInvalid, before anything is
// registered.
//
// RBAC: get, list, watch and patch on the kind, get and update on its
// status, update on its finalizers (for owned objects that block their
// owner's deletion); list and watch on the kinds of Owns and Watches; what
// the driver needs; create and patch on events.k8s.io events.
func NewAddonController(mgr manager.Manager, opts AddonOptions) (controller.Controller, error) {
	r, b, err := newAddonReconciler(mgr, opts)
	if err != nil {
		return nil, err
	}
	return b.build(mgr, r)
}

// addonReconciler is NewAddonController's reconciler.
type addonReconciler struct {
	client    client.Client
	reader    client.Reader
	kind      kind[AddonObject]
	engine    addon.Config
	finalizer string
	recorder  events.EventRecorder
}

var _ reconcile.Reconciler = (*addonReconciler)(nil)

// newAddonReconciler checks opts and returns the reconciler and what the
// builder registers.
func newAddonReconciler(mgr manager.Manager, opts AddonOptions) (*addonReconciler, blueprint, error) {
	c, problems := checkCommon(mgr, opts.For, opts.Name, opts.Recorder, opts.Options)
	e := opts.Engine
	if e.Store != nil {
		problems = append(problems, "Engine.Store is the controller's")
	}
	if !reflect.ValueOf(e.Policy).IsZero() {
		problems = append(problems, "Engine.Policy is the resource's (AddonPolicy)")
	}
	switch {
	case len(opts.Watches) > 0 && opts.MapWatched == nil:
		problems = append(problems, "Watches without MapWatched")
	case len(opts.Watches) == 0 && opts.MapWatched != nil:
		problems = append(problems, "MapWatched without Watches")
	}
	for i, gvk := range opts.Watches {
		if gvk.Kind == "" || gvk.Version == "" {
			problems = append(problems, fmt.Sprintf("Watches[%d] %q has no kind or version", i, gvk))
		}
	}
	if len(problems) > 0 {
		return nil, blueprint{}, converge.Invalid("crconverge", "AddonOptions", problems...)
	}
	scheme := mgr.GetScheme()
	for i, o := range opts.Owns {
		if check.IsNil(o) {
			problems = append(problems, fmt.Sprintf("Owns[%d] is nil", i))
		} else if _, err := apiutil.GVKForObject(o, scheme); err != nil {
			problems = append(problems, fmt.Sprintf("Owns[%d]: the manager's scheme does not know %T", i, o))
		}
	}
	finalizer := opts.Finalizer
	if finalizer == "" {
		finalizer = c.kind.gvk.Group + "/" + c.name
	}
	for _, msg := range validation.IsQualifiedName(finalizer) {
		problems = append(problems, fmt.Sprintf("Finalizer %q: %s", finalizer, msg))
	}
	r := &addonReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kind: c.kind, engine: e,
		finalizer: finalizer, recorder: c.recorder}
	if _, err := addon.NewMachine(r.config(c.kind.newObject(), &addonStore{})); err != nil {
		problems = append(problems, check.Problems(err, "Engine: ")...)
	}
	if len(problems) > 0 {
		return nil, blueprint{}, converge.Invalid("crconverge", "AddonOptions", problems...)
	}
	b := blueprint{name: c.name, forObject: c.kind.newObject(), options: opts.Options}
	for _, o := range opts.Owns {
		b.watches = append(b.watches, watch{object: o, handler: handler.EnqueueRequestForOwner(scheme, mgr.GetRESTMapper(),
			c.kind.newObject(), handler.OnlyControllerOwner())})
	}
	for _, gvk := range opts.Watches {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(gvk)
		b.watches = append(b.watches, watch{object: obj, handler: handler.EnqueueRequestsFromMapFunc(opts.MapWatched)})
	}
	return r, b, nil
}

// config is the engine's configuration for a reconcile of obj, whose store
// is store.
func (r *addonReconciler) config(obj AddonObject, store addon.Store) addon.Config {
	cfg := r.engine
	cfg.Store, cfg.Policy = store, obj.AddonPolicy()
	return cfg
}

// Reconcile advances the add-on of the object at req by one step.
func (r *addonReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.kind.newObject()
	if err := r.client.Get(ctx, req.NamespacedName, obj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	store := &addonStore{newObjectStatus(r.client, r.reader, r.kind, req.NamespacedName, AddonObject.AddonStatus, obj)}
	store.onSchema = warnAbout(r.recorder, obj, "Reconcile")
	m, err := addon.NewMachine(r.config(obj, store))
	if err != nil {
		return result(0, err)
	}
	if obj.GetDeletionTimestamp() == nil && !controllerutil.ContainsFinalizer(obj, r.finalizer) {
		if err := store.patchFinalizer(ctx, r.finalizer, controllerutil.AddFinalizer); err != nil {
			return Result(0, err)
		}
	}
	o, err := store.object(store.latest())
	if err != nil {
		return result(0, err)
	}
	res, err := m.Reconcile(ctx, o)
	kube.RecordEvents(r.recorder, obj, "Reconcile", res.Events)
	if err == nil && res.Deleted && controllerutil.ContainsFinalizer(store.latest(), r.finalizer) {
		err = store.patchFinalizer(ctx, r.finalizer, controllerutil.RemoveFinalizer)
	}
	return result(res.RequeueAfter, err)
}

// addonStore is addon.Store on one add-on object.
type addonStore struct {
	*objectStatus[AddonObject, addon.Status]
}

var _ addon.Store = (*addonStore)(nil)

// Get reads the add-on afresh from the API server.
func (s *addonStore) Get(ctx context.Context, name string) (addon.Object, error) {
	if name != keyString(s.key) {
		return addon.Object{}, converge.Invalidf("crconverge", "add-on", "the store of %s has no add-on %q", keyString(s.key), name)
	}
	s.mu.Lock()
	s.fresh = false
	err := s.read(ctx)
	obj := s.obj
	s.mu.Unlock()
	if err != nil {
		return addon.Object{}, err
	}
	return s.object(obj)
}

// UpdateStatus writes st as the status of obj's object if it is still at
// obj.ResourceVersion, and returns the add-on as written.
func (s *addonStore) UpdateStatus(ctx context.Context, obj addon.Object, st addon.Status) (addon.Object, error) {
	host, ok := obj.Host.(AddonObject)
	if !ok || check.IsNil(host) || client.ObjectKeyFromObject(host) != s.key {
		return addon.Object{}, converge.Invalidf("crconverge", "add-on", "the store of %s writes no %T", keyString(s.key), obj.Host)
	}
	s.mu.Lock()
	out, err := s.write(ctx, host, obj.ResourceVersion, st)
	s.mu.Unlock()
	if err != nil {
		return addon.Object{}, err
	}
	return s.object(out)
}

// object is the engine's view of a copy of obj.
func (s *addonStore) object(obj AddonObject) (addon.Object, error) {
	cp := obj.DeepCopyObject().(AddonObject)
	st, err := s.field(cp)
	if err != nil {
		return addon.Object{}, err
	}
	return addon.Object{Spec: addonSpec(cp), Status: *st, ResourceVersion: cp.GetResourceVersion(), Host: cp}, nil
}

// patchFinalizer changes the finalizers of the object as last read or
// written (change is controllerutil's AddFinalizer or RemoveFinalizer)
// with a merge patch over its resource version.
func (s *addonStore) patchFinalizer(ctx context.Context, finalizer string, change func(client.Object, string) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := s.obj.DeepCopyObject().(AddonObject)
	patch := client.MergeFromWithOptions(s.obj, client.MergeFromWithOptimisticLock{})
	change(cp, finalizer)
	if err := s.client.Patch(ctx, cp, patch); err != nil {
		s.fresh = false
		return err
	}
	s.obj, s.fresh = cp, true
	return nil
}

// addonSpec is the engine's spec of obj: its AddonVersion; its name,
// generation and deletion from its metadata; a reset or a forced re-apply
// from kube's annotations.
func addonSpec(obj AddonObject) addon.Spec {
	return addon.Spec{
		Name:       keyString(client.ObjectKeyFromObject(obj)),
		Generation: obj.GetGeneration(),
		Version:    obj.AddonVersion(),
		Deleting:   obj.GetDeletionTimestamp() != nil,
		ResetToken: obj.GetAnnotations()[kube.AnnotationResetAt],
		ForceToken: obj.GetAnnotations()[kube.AnnotationForceAt],
	}
}
