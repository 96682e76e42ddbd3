package addonlifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
)

// controllerConfig configures a controller.
type controllerConfig struct {
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Recorder record.EventRecorder
	Policy   addon.Policy
	// Workers is how many Addons are reconciled at once (at least 1).
	Workers int
	// Clock defaults to clock.RealClock{}.
	Clock clock.WithTicker
	// Identity names this controller in the engine's claims.
	Identity string
}

// controller reconciles every Addon object in the cluster: an informer
// feeds a rate-limited work queue, and each of Workers workers takes one
// Addon at a time (the queue never hands the same key to two workers),
// adds the finalizer before anything is installed, runs
// addon.Machine.Reconcile, whose status writes go through the status
// subresource with the object's resource version (kube.AddonObjects, with
// the example's own annotations), records the decided events on the object
// (kube.RecordLegacyEvents), and drops the finalizer once the add-on is uninstalled.
// The Addon object itself travels to the driver (addon.Object.Host), so one
// Machine and one driver serve every Addon. A conflict makes the engine
// re-read the Addon and decide again, so nothing is lost; conflicts that go
// on requeue the key. RequeueAfter becomes AddAfter.
type controller struct {
	addons   dynamic.NamespaceableResourceInterface
	factory  dynamicinformer.DynamicSharedInformerFactory
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	store    *kube.AddonObjects
	machine  *addon.Machine
	recorder record.EventRecorder
	workers  int

	conflicts, failures atomic.Int64
}

func newController(cfg controllerConfig) (*controller, error) {
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("workers must be at least 1, not %d", cfg.Workers)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &controller{
		addons:   cfg.Dynamic.Resource(addonGVR),
		factory:  dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, 0),
		recorder: cfg.Recorder,
		workers:  cfg.Workers,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "addons", Clock: cfg.Clock}),
	}
	c.informer = c.factory.ForResource(addonGVR).Informer()
	store, err := kube.NewAddonObjects(kube.AddonObjectsConfig{Client: cfg.Dynamic, Resource: addonGVR, Spec: specOf})
	if err != nil {
		c.queue.ShutDown()
		return nil, err
	}
	m, err := addon.NewMachine(addon.Config{
		Driver: &meshDriver{client: cfg.Kube, dbHost: "mysql.tke.svc"}, Store: store,
		Identity: cfg.Identity, Policy: cfg.Policy, Clock: cfg.Clock,
	})
	if err != nil {
		c.queue.ShutDown()
		return nil, err
	}
	c.store, c.machine = store, m
	if _, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			if old.(metav1.Object).GetResourceVersion() != cur.(metav1.Object).GetResourceVersion() {
				c.enqueue(cur)
			}
		},
		DeleteFunc: c.enqueue,
	}); err != nil {
		c.queue.ShutDown()
		return nil, err
	}
	return c, nil
}

func (c *controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err == nil {
		c.queue.Add(key)
	}
}

// Run starts the informer and the workers and blocks until ctx ends; it
// then stops the queue, waits for the workers to finish their current
// reconcile, and stops the informer (see runWorkers).
func (c *controller) Run(ctx context.Context) error {
	klog.FromContext(ctx).Info("Reconciling Addons", "workers", c.workers)
	return runWorkers(ctx, "addon", c.factory, c.informer.HasSynced, c.queue, c.workers, c.processNext)
}

// processNext reconciles the next key; false when the queue shut down.
func (c *controller) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	log := klog.FromContext(ctx).WithValues("addon", key)
	res, err := c.reconcile(klog.NewContext(ctx, log), key)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: the status keeps what is pending.
	case apierrors.IsNotFound(err):
		// Gone while reconciled from a stale copy: its finalizer went
		// after the uninstall (or by hand); nothing is left to reconcile.
		c.queue.Forget(key)
	case errors.Is(err, addon.ErrConflict), apierrors.IsConflict(err):
		c.conflicts.Add(1)
		log.V(2).Info("Conflict, requeued", "err", err)
		c.queue.AddRateLimited(key)
	case errors.Is(err, addon.ErrInvalid):
		c.failures.Add(1)
		log.Error(err, "Invalid add-on; waiting for a change")
		c.queue.Forget(key)
	case err != nil:
		c.failures.Add(1)
		log.Error(err, "Reconcile failed, requeued")
		c.queue.AddRateLimited(key)
	case res.RequeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.RequeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// reconcile handles one Addon.
func (c *controller) reconcile(ctx context.Context, key string) (addon.Result, error) {
	cached, exists, err := c.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return addon.Result{}, err
	}
	obj := cached.(*unstructured.Unstructured).DeepCopy()
	ns := obj.GetNamespace()
	if !hasFinalizer(obj) {
		if obj.GetDeletionTimestamp() != nil {
			return addon.Result{}, nil // never installed
		}
		obj.SetFinalizers(append(obj.GetFinalizers(), finalizer))
		if obj, err = c.addons.Namespace(ns).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return addon.Result{}, err
		}
	}
	current, err := c.store.Object(obj)
	if err != nil {
		return addon.Result{}, fmt.Errorf("%w: %w", addon.ErrInvalid, err)
	}
	res, err := c.machine.Reconcile(ctx, current)
	// The events of what was persisted are emitted even beside an error.
	kube.RecordLegacyEvents(c.recorder, obj, res.Events)
	if err != nil || !res.Deleted {
		return res, err
	}
	latest, err := c.addons.Namespace(ns).Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return res, err
	}
	latest.SetFinalizers(withoutFinalizer(latest))
	if _, err := c.addons.Namespace(ns).Update(ctx, latest, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return res, err
	}
	return res, nil
}

// Stats returns how many reconciles ended in a conflict (and were requeued)
// and how many failed otherwise.
func (c *controller) Stats() (conflicts, failures int64) {
	return c.conflicts.Load(), c.failures.Load()
}
