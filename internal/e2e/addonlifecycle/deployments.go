package addonlifecycle

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// deploymentStatusController stands in for kube-controller-manager's
// deployment controller on an apiserver that runs none (the integration
// tests' etcd and kube-apiserver): it watches the Deployments the driver
// creates and writes the status the real controller would report once the
// pods run (rolledOut), through the status subresource. It never touches a
// Deployment's spec.
type deploymentStatusController struct {
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
}

// RollOutDeployments runs the simulated deployment controller on the
// Deployments that selector (a label selector) selects, with two workers,
// until ctx ends; then it stops and waits for everything it started. Other
// integration tests (contrib/helm's) make their Deployments ready with it.
func RollOutDeployments(ctx context.Context, client kubernetes.Interface, selector string) error {
	c, err := newDeploymentStatusController(client, selector)
	if err != nil {
		return err
	}
	return c.Run(ctx, 2)
}

func newDeploymentStatusController(client kubernetes.Interface, selector string) (*deploymentStatusController, error) {
	c := &deploymentStatusController{
		client: client,
		factory: informers.NewSharedInformerFactoryWithOptions(client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector })),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "simulated-deployments"}),
	}
	c.informer = c.factory.Apps().V1().Deployments().Informer()
	enqueue := func(obj any) {
		if dep, ok := obj.(*appsv1.Deployment); ok && !equality.Semantic.DeepEqual(dep.Status, rolledOut(dep)) {
			if key, err := cache.MetaNamespaceKeyFunc(dep); err == nil {
				c.queue.Add(key)
			}
		}
	}
	if _, err := c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		c.queue.ShutDown()
		return nil, err
	}
	return c, nil
}

// Run rolls Deployments out with workers workers until ctx ends, then stops
// and waits for everything it started.
func (c *deploymentStatusController) Run(ctx context.Context, workers int) error {
	return runWorkers(ctx, "deployment", c.factory, c.informer.HasSynced, c.queue, workers, c.processNext)
}

func (c *deploymentStatusController) processNext(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)
	if err := c.sync(ctx, key); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("Deployment status not written, requeued", "deployment", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *deploymentStatusController) sync(ctx context.Context, key string) error {
	obj, exists, err := c.informer.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	dep := obj.(*appsv1.Deployment).DeepCopy()
	want := rolledOut(dep)
	if equality.Semantic.DeepEqual(dep.Status, want) {
		return nil
	}
	dep.Status = want
	_, err = c.client.AppsV1().Deployments(dep.Namespace).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
