package addonlifecycle

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// informerFactory is what runWorkers needs of a typed or dynamic shared
// informer factory.
type informerFactory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// runWorkers starts factory, waits until synced, and runs process on workers
// goroutines until ctx ends; it then shuts queue down, waits for the workers
// to finish the key in hand, and stops the factory. It returns an error only
// when the cache never synced; name says which.
func runWorkers(ctx context.Context, name string, factory informerFactory, synced cache.InformerSynced,
	queue workqueue.TypedRateLimitingInterface[string], workers int, process func(context.Context) bool) error {
	var wg sync.WaitGroup
	defer func() {
		queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		return fmt.Errorf("%s informer did not sync", name)
	}
	for range workers {
		wg.Go(func() {
			for process(ctx) {
			}
		})
	}
	<-ctx.Done()
	return nil
}
