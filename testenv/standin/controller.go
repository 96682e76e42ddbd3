package standin

import (
	"context"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/internal/input"
)

// Deployments stands in for kube-controller-manager's deployment
// controller: it watches the Deployments Selector picks and writes, through
// the status subresource, the status the real controller reports once the
// pods run (RolledOut, or Stuck for those Stuck names). It never touches a
// Deployment's spec and creates no ReplicaSet or pod.
type Deployments struct {
	// Client reaches the apiserver (testenv's, or a fake clientset).
	Client kubernetes.Interface
	// Selector is a label selector of the Deployments to roll out ("" for
	// all of them).
	Selector string
	// Stuck, if set, names the Deployments whose pods never become
	// available (say, by their image): they get Stuck's status.
	Stuck func(*appsv1.Deployment) bool
	// Workers is how many Deployments are written at once (0 means 2).
	Workers int
}

// Run rolls Deployments out until ctx ends, then stops and waits for
// everything it started. It returns an error when Client is missing or
// its cache never synced before ctx ended.
func (d Deployments) Run(ctx context.Context) error {
	if input.IsNil(d.Client) {
		return input.Invalidf("standin", "Deployments", "Client is required")
	}
	factory := informers.NewSharedInformerFactoryWithOptions(d.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = d.Selector }))
	informer := factory.Apps().V1().Deployments().Informer()
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "standin-deployments"})
	enqueue := func(obj any) {
		if dep, ok := obj.(*appsv1.Deployment); ok && !equality.Semantic.DeepEqual(dep.Status, d.status(dep)) {
			if key, err := cache.MetaNamespaceKeyFunc(dep); err == nil {
				queue.Add(key)
			}
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		queue.ShutDown()
		return err
	}
	var wg sync.WaitGroup
	defer func() {
		queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("standin: the Deployment informer did not sync before its context ended")
	}
	workers := d.Workers
	if workers <= 0 {
		workers = 2
	}
	for range workers {
		wg.Go(func() {
			for d.next(ctx, informer.GetIndexer(), queue) {
			}
		})
	}
	<-ctx.Done()
	return nil
}

// status is the status Run writes on dep.
func (d Deployments) status(dep *appsv1.Deployment) appsv1.DeploymentStatus {
	if d.Stuck != nil && d.Stuck(dep) {
		return Stuck(dep)
	}
	return RolledOut(dep)
}

// next writes the status of the next queued Deployment; it returns false
// once the queue is shut down.
func (d Deployments) next(ctx context.Context, store cache.Indexer, queue workqueue.TypedRateLimitingInterface[string]) bool {
	key, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(key)
	if err := d.write(ctx, store, key); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("Deployment status not written, requeued", "deployment", key, "err", err)
		queue.AddRateLimited(key)
		return true
	}
	queue.Forget(key)
	return true
}

func (d Deployments) write(ctx context.Context, store cache.Indexer, key string) error {
	obj, exists, err := store.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	dep := obj.(*appsv1.Deployment).DeepCopy()
	want := d.status(dep)
	if equality.Semantic.DeepEqual(dep.Status, want) {
		return nil
	}
	dep.Status = want
	_, err = d.Client.AppsV1().Deployments(dep.Namespace).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
