package main

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
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
	// config reaches a real cluster, nil for an in-memory one.
	config *rest.Config
	// httpClient carries every request to a real cluster, nil for an in-memory one.
	httpClient *http.Client
	client     dynamic.Interface
	mapper     meta.RESTMapper
	clock      clock.WithDelayedExecution
	// fake is the fake clock of an in-memory cluster, nil for a real one.
	fake *clocktesting.FakeClock
	// flaky counts the apply calls of flakyConfigMap (in memory only).
	flaky *flakyCounter
}

// realCluster reaches the cluster of kubeconfig; close releases its connections.
func realCluster(kubeconfig string) (*cluster, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// client-go's default of 5 requests per second would make every apply of the payload
	// take seconds; an operator that owns many objects raises it.
	config.QPS, config.Burst = 50, 100
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &cluster{config: config, httpClient: httpClient, client: client, mapper: mapper, clock: clock.RealClock{}}, nil
}

// close closes the idle connections to a real cluster, whose reading goroutines would
// otherwise outlive the run.
func (c *cluster) close() {
	if c.httpClient != nil {
		utilnet.CloseIdleConnectionsFor(c.httpClient.Transport)
	}
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

// memoryCluster is client-go's fake dynamic client on an object tracker that manages
// fields, so that server-side apply creates, merges and records managedFields as a real
// API server does (the fake's default tracker cannot create an object by apply). No job
// controller runs in it: the applier plays one (clusterApplier.completeJobs).
func memoryCluster(start time.Time) (*cluster, error) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, k := range kinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		gvr := k.gvk.GroupVersion().WithResource(k.resource)
		mapper.AddSpecific(k.gvk, gvr, gvr, scope)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	tracker := k8stesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(), applyconfigurations.NewTypeConverter(scheme))
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, nil)
	client.PrependReactor("*", "*", k8stesting.ObjectReaction(tracker))

	// The API server is briefly unavailable for one ConfigMap: two refusals, then it works.
	flaky := &flakyCounter{}
	client.PrependReactor("patch", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if patch, ok := action.(k8stesting.PatchAction); !ok || patch.GetName() != flakyConfigMap {
			return false, nil, nil
		}
		if flaky.attempt() <= 2 {
			return true, nil, apierrors.NewServiceUnavailable("etcd leader election in progress")
		}
		return false, nil, nil
	})
	// The settings the payload removes are left by an earlier release.
	legacy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "legacy-settings", "namespace": "converge-payload-demo"},
	}}
	if _, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("converge-payload-demo").
		Create(context.Background(), legacy, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	fake := clocktesting.NewFakeClock(start)
	return &cluster{client: client, mapper: mapper, clock: fake, fake: fake, flaky: flaky}, nil
}

// flakyCounter counts the apply calls of flakyConfigMap and remembers the first that
// was accepted.
type flakyCounter struct {
	calls    atomic.Int32
	accepted atomic.Int32
}

func (f *flakyCounter) attempt() int32 {
	n := f.calls.Add(1)
	if n > 2 {
		f.accepted.CompareAndSwap(0, n)
	}
	return n
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
		client, err := resourceFor(c.client, c.mapper, &m)
		if err != nil {
			return n, err
		}
		if _, err := client.Get(ctx, m.Name(), metav1.GetOptions{}); err != nil {
			return n, fmt.Errorf("%s: %w", m.Ref(), err)
		}
		n++
	}
	return n, nil
}
