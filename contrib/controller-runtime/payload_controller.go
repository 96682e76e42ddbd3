package crconverge

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

// PayloadOptions configures NewPayloadController. Every field but For and
// Engine.Loader has a default.
type PayloadOptions struct {
	// For is the one resource whose release the worker keeps applied, as an
	// object of its kind with its name (and namespace, for a namespaced
	// kind) set, as the cluster-version operator keeps one ClusterVersion.
	// Required; the manager's scheme must know the kind and its list kind.
	For PayloadObject
	// Create, when set, creates For as it is given (its spec naming the
	// first release) whenever the resource does not exist, as the
	// cluster-version operator creates its ClusterVersion. Default: the
	// worker waits for the resource to be created.
	Create bool
	// Engine is the worker's configuration: its Loader (required),
	// Include, Preconditions, NotifyInterval, FlushTimeout, Clock and
	// Jitter, as payload.Config documents them and with its defaults. With
	// a nil Applier, the Applier, Deleter and Readiness left nil are
	// NewApplier's on the manager's client, as FieldManager. Its Policy,
	// Status, Desired, Generation, StatusWriter and OnResult are the
	// controller's (the resource's PayloadPolicy, status, PayloadRelease
	// and generation, and its events) and are left unset.
	Engine payload.Config
	// FieldManager is the default applier's server-side apply field
	// manager; empty means Name.
	FieldManager string
	// ForceOwnership makes the default applier take over the fields other
	// managers own (client.ForceOwnership); default: a manifest whose
	// fields another manager owns fails to apply.
	ForceOwnership bool
	// TakeOver names the field managers whose fields the default applier
	// takes over before each apply (kube.ApplierConfig.TakeOver), so that a
	// field a person added with kubectl edit and the payload does not set
	// is removed; kube.HandEditManagers lists kubectl's. Default: none.
	TakeOver []string
	// Name names the controller (in logs and metrics), as the builder's
	// Named does; empty means the kind in lower case.
	Name string
	// Recorder records the worker's events about the resource; nil means
	// the manager's, mgr.GetEventRecorder("<Name>-controller").
	Recorder events.EventRecorder
	// Options are the controller's options, as the builder's WithOptions
	// takes them (the zero value: the manager's defaults); their Reconciler
	// is the controller's own and is left unset.
	Options controller.Options
}

// NewPayloadController runs a payload.Worker that keeps the release of the
// resource opts.For names applied, and builds the controller that hands it
// the resource's release; it registers both with mgr and returns the
// controller. The worker runs on the leader only, as a manager.Runnable
// (LeaderElected) that the manager starts, and stops with the manager.
//
// The first time the controller sees the resource on the leader it reads it
// from the API server (the manager's API reader): the worker carries on from
// the status persisted there, with the resource's PayloadPolicy, and is made
// with the resource's PayloadRelease and generation (payload.Config's
// Desired and Generation), so that its first apply is of the release the
// resource names, never of another one the persisted status was applying;
// every later change of the release is handed over (Worker.Update), and a
// copy of the resource from a cache older than the generation handed over is
// ignored. A changed
// policy restarts the worker, which carries on from the status the stopped
// one reached; an invalid one is a terminal error, and the worker keeps
// its policy. With opts.Create, a missing resource is created.
//
// The worker writes its status to the resource's PayloadStatus through its
// status subresource, over the resource version it read last: a lost race
// reads the resource again from the API server and writes again. Its events
// are recorded about the resource.
//
// A bad option is an error matching converge.ErrInvalid, before anything is
// registered.
//
// RBAC: get, list and watch on the kind (and create, with Create), get and
// update on its status; on every resource of the payloads, what
// kube.Applier needs (get, create and patch, and delete for manifests
// marked for deletion); create and patch on events.k8s.io events.
func NewPayloadController(mgr manager.Manager, opts PayloadOptions) (controller.Controller, error) {
	r, b, err := newPayloadReconciler(mgr, opts)
	if err != nil {
		return nil, err
	}
	c, err := b.build(mgr, r)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(LeaderElected(r.worker.run)); err != nil {
		return nil, fmt.Errorf("crconverge: adding the %s worker: %w", b.name, err)
	}
	return c, nil
}

// payloadReconciler is NewPayloadController's reconciler: it hands the
// worker the resource's release.
type payloadReconciler struct {
	client client.Client
	kind   kind[PayloadObject]
	create PayloadObject // nil without PayloadOptions.Create
	worker *payloadWorker
}

var _ reconcile.Reconciler = (*payloadReconciler)(nil)

// newPayloadReconciler checks opts and returns the reconciler and what the
// builder registers.
func newPayloadReconciler(mgr manager.Manager, opts PayloadOptions) (*payloadReconciler, blueprint, error) {
	c, problems := checkCommon(mgr, opts.For, opts.Name, opts.Recorder, opts.Options)
	e := opts.Engine
	if !check.IsNil(opts.For) && opts.For.GetName() == "" {
		problems = append(problems, "For has no name")
	}
	if !reflect.ValueOf(e.Policy).IsZero() || !reflect.ValueOf(e.Status).IsZero() || !e.Desired.IsZero() || e.Generation != 0 {
		problems = append(problems, "Engine's Policy, Status, Desired and Generation are the resource's")
	}
	if e.StatusWriter != nil || e.OnResult != nil {
		problems = append(problems, "Engine's StatusWriter and OnResult are the controller's")
	}
	if len(problems) > 0 {
		return nil, blueprint{}, converge.Invalid("crconverge", "PayloadOptions", problems...)
	}
	key := client.ObjectKeyFromObject(opts.For)
	if e.Applier == nil {
		fieldManager := opts.FieldManager
		if fieldManager == "" {
			fieldManager = c.name
		}
		a, err := NewApplierWith(mgr.GetClient(), kube.ApplierConfig{FieldManager: fieldManager, Force: opts.ForceOwnership, TakeOver: opts.TakeOver})
		if err != nil {
			return nil, blueprint{}, converge.Invalid("crconverge", "PayloadOptions", check.Problems(err, "FieldManager: ")...)
		}
		e.Applier = a
		if e.Deleter == nil {
			e.Deleter = a
		}
		if e.Readiness == nil {
			e.Readiness = a
		}
	}
	w := &payloadWorker{
		kind: c.kind, key: key, reader: mgr.GetAPIReader(), recorder: c.recorder,
		wake: make(chan struct{}, 1),
	}
	store := newObjectStatus(mgr.GetClient(), mgr.GetAPIReader(), c.kind, key, PayloadObject.PayloadStatus, nil)
	store.onSchema = func(se *kube.StatusSchemaError) { w.record(converge.Result{Events: []converge.Event{se.Event()}}) }
	e.StatusWriter = kube.LatestStatusWriter[payload.Status]{Store: store}
	e.OnResult = w.record
	w.base = e
	if err := w.check(payload.Policy{}); err != nil {
		return nil, blueprint{}, converge.Invalid("crconverge", "PayloadOptions", check.Problems(err, "Engine: ")...)
	}
	r := &payloadReconciler{client: mgr.GetClient(), kind: c.kind, worker: w}
	if opts.Create {
		r.create = opts.For.DeepCopyObject().(PayloadObject)
	}
	isKey := predicate.NewPredicateFuncs(func(o client.Object) bool { return client.ObjectKeyFromObject(o) == key })
	return r, blueprint{
		name:          c.name,
		forObject:     c.kind.newObject(),
		forPredicates: []predicate.Predicate{isKey, predicate.GenerationChangedPredicate{}},
		sources:       []source.Source{enqueueOnce(key)},
		options:       opts.Options,
	}, nil
}

// enqueueOnce is a source that queues key once, when the controller starts,
// so that the resource is reconciled even when it does not exist (and is
// then created, with PayloadOptions.Create).
func enqueueOnce(key types.NamespacedName) source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(reconcile.Request{NamespacedName: key})
		return nil
	})
}

// Reconcile hands the worker the resource's release, or creates the
// resource when it is missing and PayloadOptions.Create says so.
func (r *payloadReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	obj := r.kind.newObject()
	err := r.client.Get(ctx, req.NamespacedName, obj)
	switch {
	case apierrors.IsNotFound(err) && r.create != nil:
		obj = r.create.DeepCopyObject().(PayloadObject)
		err = client.IgnoreAlreadyExists(r.client.Create(ctx, obj))
		return Result(0, err)
	case err != nil:
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	return result(0, r.worker.want(ctx, obj))
}

// payloadWorker runs the payload.Worker of one resource, as a Runnable: it
// starts a worker once the reconciler has seen the resource, and starts it
// again when the resource's policy changes.
type payloadWorker struct {
	base     payload.Config // but the Policy and Status of a run
	kind     kind[PayloadObject]
	key      client.ObjectKey
	reader   client.Reader
	recorder events.EventRecorder
	wake     chan struct{} // a run is pending

	mu         sync.Mutex
	next       *payloadRun     // the run to start
	running    *payload.Worker // nil between runs
	policy     payload.Policy  // the running worker's
	stop       context.CancelFunc
	started    bool           // a worker ran: the next carries on from its status
	last       payload.Status // the last worker's, once it stopped
	uid        types.UID
	generation int64
	release    payload.Release
	regarding  PayloadObject // the resource as last seen
}

// payloadRun is a worker to start: its policy, and the status it carries on
// from (nil: the last worker's).
type payloadRun struct {
	policy payload.Policy
	status *payload.Status
}

// want hands the worker obj's release, or asks for a worker to start with
// obj's policy: the first, a running one's successor, or the one about to
// start, whose policy becomes obj's. A copy of the resource older than the
// generation handed over (the same resource, a cache not caught up yet) is
// ignored.
func (w *payloadWorker) want(ctx context.Context, obj PayloadObject) error {
	policy := obj.PayloadPolicy()
	w.mu.Lock()
	if obj.GetUID() == w.uid && obj.GetGeneration() < w.generation {
		w.mu.Unlock()
		return nil
	}
	w.uid, w.generation, w.release, w.regarding = obj.GetUID(), obj.GetGeneration(), obj.PayloadRelease(), obj
	if w.next == nil && w.running != nil && reflect.DeepEqual(policy, w.policy) {
		w.running.Update(w.generation, w.release)
		w.mu.Unlock()
		return nil
	}
	first := !w.started && w.next == nil
	w.mu.Unlock()

	if err := w.check(policy); err != nil {
		return err
	}
	run := &payloadRun{policy: policy}
	if first {
		fresh := w.kind.newObject()
		if err := w.reader.Get(ctx, w.key, fresh); err != nil {
			return err
		}
		st := fresh.PayloadStatus()
		if st == nil {
			return converge.Invalidf("crconverge", "object", "the status accessor of %s %s returned nil", w.kind.gvk.Kind, w.key)
		}
		run.status = st
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != nil && run.status == nil {
		run.status = w.next.status
	}
	w.next = run
	if w.stop != nil {
		w.stop()
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return nil
}

// check reports what the worker's configuration with policy gets wrong.
func (w *payloadWorker) check(policy payload.Policy) error {
	cfg := w.base
	cfg.Policy = policy
	_, err := payload.NewWorker(cfg)
	return err
}

// run starts each worker want asks for, one at a time, until ctx ends.
func (w *payloadWorker) run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		}
		worker, wctx, err := w.startNext(ctx)
		if err != nil {
			return err
		}
		if worker == nil {
			continue
		}
		err = worker.Start(wctx)
		w.mu.Lock()
		w.stop()
		w.running, w.stop, w.last = nil, nil, worker.Status()
		w.mu.Unlock()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// startNext makes the pending run's worker, given the latest release in its
// Config, and the context that stops it; nil when no run is pending.
func (w *payloadWorker) startNext(ctx context.Context) (*payload.Worker, context.Context, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	run := w.next
	if run == nil {
		return nil, nil, nil
	}
	w.next = nil
	cfg := w.base
	cfg.Policy, cfg.Status, cfg.Desired, cfg.Generation = run.policy, w.last, w.release, w.generation
	if run.status != nil {
		cfg.Status = *run.status
	}
	worker, err := payload.NewWorker(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("crconverge: starting the payload worker of %s: %w", w.key, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w.running, w.policy, w.stop, w.started = worker, run.policy, cancel, true
	return worker, wctx, nil
}

// record records the events of a worker's result about the resource.
func (w *payloadWorker) record(res converge.Result) {
	w.mu.Lock()
	regarding := w.regarding
	w.mu.Unlock()
	if regarding != nil {
		kube.RecordEvents(w.recorder, regarding, "Apply", res.Events)
	}
}
