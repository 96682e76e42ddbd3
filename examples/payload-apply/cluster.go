package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/payload"
)

// flakyConfigMap is the manifest the in-memory API server refuses twice.
const flakyConfigMap = "web-settings"

// cluster is where the payload goes: a real cluster, or client-go's fake dynamic client
// with a fake clock that the program moves forward itself.
type cluster struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	clock  clock.WithDelayedExecution
	// fake is the fake clock of an in-memory cluster, nil for a real one.
	fake *clocktesting.FakeClock
	// flakyCreates counts the create calls of flakyConfigMap (in memory only).
	flakyCreates *atomic.Int32
}

func realCluster(kubeconfig string) (*cluster, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &cluster{client: client, mapper: mapper, clock: clock.RealClock{}}, nil
}

// kinds are the kinds of the embedded payload, for the in-memory cluster.
var kinds = []struct {
	gvk        schema.GroupVersionKind
	resource   string
	namespaced bool
}{
	{schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "namespaces", false},
	{schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, "serviceaccounts", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "configmaps", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, "secrets", true},
	{schema.GroupVersionKind{Version: "v1", Kind: "Service"}, "services", true},
	{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "deployments", true},
	{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "jobs", true},
}

func memoryCluster(start time.Time) *cluster {
	mapper := meta.NewDefaultRESTMapper(nil)
	listKinds := map[schema.GroupVersionResource]string{}
	for _, k := range kinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		gvr := k.gvk.GroupVersion().WithResource(k.resource)
		mapper.AddSpecific(k.gvk, gvr, gvr, scope)
		listKinds[gvr] = k.gvk.Kind + "List"
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)

	// The API server is briefly unavailable for one ConfigMap: two refusals, then it works.
	creates := &atomic.Int32{}
	client.PrependReactor("create", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		obj, _ := action.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
		if obj == nil || obj.GetName() != flakyConfigMap {
			return false, nil, nil
		}
		if creates.Add(1) <= 2 {
			return true, nil, apierrors.NewServiceUnavailable("etcd leader election in progress")
		}
		return false, nil, nil
	})
	// A simulated job controller: a Job runs as soon as it is created and succeeds.
	client.PrependReactor("create", "jobs", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if obj, ok := action.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured); ok {
			_ = unstructured.SetNestedField(obj.Object, int64(1), "status", "succeeded")
			_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"type": "Complete", "status": "True"}}, "status", "conditions")
		}
		return false, nil, nil
	})
	fake := clocktesting.NewFakeClock(start)
	return &cluster{client: client, mapper: mapper, clock: fake, fake: fake, flakyCreates: creates}
}

// runClock moves the fake clock of an in-memory cluster forward by a second every
// millisecond while something waits on it, so that retries and throttled notifications
// happen in virtual time. It returns a function that stops it and waits.
func (c *cluster) runClock(ctx context.Context) (stop func()) {
	if c.fake == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if c.fake.HasWaiters() {
					c.fake.Step(time.Second)
				}
			}
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// present counts the manifests whose objects exist in the cluster.
func (c *cluster) present(ctx context.Context, manifests []payload.Manifest) (int, error) {
	n := 0
	for _, m := range manifests {
		mapping, err := c.mapper.RESTMapping(m.GVK.GroupKind(), m.GVK.Version)
		if err != nil {
			return n, err
		}
		var ri dynamic.ResourceInterface = c.client.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = c.client.Resource(mapping.Resource).Namespace(m.Namespace())
		}
		if _, err := ri.Get(ctx, m.Name(), metav1.GetOptions{}); err != nil {
			return n, fmt.Errorf("%s: %w", m.Ref(), err)
		}
		n++
	}
	return n, nil
}
