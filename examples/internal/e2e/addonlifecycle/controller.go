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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

// Reconcile reconciles one Addon object: the copy the informer's cache
// holds, which it may change. It is the example's own, in its main.go.
type Reconcile func(ctx context.Context, obj *unstructured.Unstructured) (addon.Result, error)

// controllerConfig configures a controller.
type controllerConfig struct {
	Dynamic   dynamic.Interface
	Reconcile Reconcile
	// Workers is how many Addons are reconciled at once (at least 1).
	Workers int
	// Clock defaults to clock.RealClock{}.
	Clock clock.WithTicker
}

// controller runs Reconcile on every Addon object in the cluster: an
// informer feeds a rate-limited work queue, and each of Workers workers
// takes one Addon at a time (the queue never hands the same key to two
// workers) and reconciles a copy of the cached object. A conflict that
// Reconcile returns requeues the key with backoff, and so does any other
// failure but bad input (converge.ErrInvalid), which waits for a change;
// RequeueAfter becomes AddAfter.
type controller struct {
	factory   dynamicinformer.DynamicSharedInformerFactory
	informer  cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile Reconcile
	workers   int

	conflicts, failures atomic.Int64
}

func newController(cfg controllerConfig) (*controller, error) {
	switch {
	case cfg.Workers < 1:
		return nil, fmt.Errorf("workers must be at least 1, not %d", cfg.Workers)
	case cfg.Dynamic == nil || cfg.Reconcile == nil:
		return nil, errors.New("a controller needs a dynamic client and a Reconcile")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &controller{
		factory:   dynamicinformer.NewDynamicSharedInformerFactory(cfg.Dynamic, 0),
		reconcile: cfg.Reconcile,
		workers:   cfg.Workers,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "addons", Clock: cfg.Clock}),
	}
	c.informer = c.factory.ForResource(AddonResource).Informer()
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
	res, err := c.reconcileKey(klog.NewContext(ctx, log), key)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: the status keeps what is pending.
	case apierrors.IsNotFound(err):
		// Gone while reconciled from a stale copy: its finalizer went
		// after the uninstall (or by hand); nothing is left to reconcile.
		c.queue.Forget(key)
	case converge.IsConflict(err):
		c.conflicts.Add(1)
		log.V(2).Info("Conflict, requeued", "err", err)
		c.queue.AddRateLimited(key)
	case errors.Is(err, converge.ErrInvalid):
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

// reconcileKey reconciles a copy of the cached Addon of key, if any.
func (c *controller) reconcileKey(ctx context.Context, key string) (addon.Result, error) {
	cached, exists, err := c.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return addon.Result{}, err
	}
	return c.reconcile(ctx, cached.(*unstructured.Unstructured).DeepCopy())
}

// Stats returns how many reconciles ended in a conflict (and were requeued)
// and how many failed otherwise.
func (c *controller) Stats() (conflicts, failures int64) {
	return c.conflicts.Load(), c.failures.Load()
}
