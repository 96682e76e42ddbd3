package payloadapply

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
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// FlakyConfigMap is the manifest the in-memory API server refuses twice.
const FlakyConfigMap = "web-settings"

// Cluster is where the payload goes: a real cluster, or client-go's fake dynamic client
// and fake clientset with a fake clock that the program moves forward itself.
type Cluster struct {
	// Config reaches a real cluster, nil for an in-memory one.
	Config *rest.Config
	// HTTPClient carries every request to a real cluster, nil for an in-memory one.
	HTTPClient *http.Client
	// Client applies the payload; Typed keeps the status and records events.
	Client dynamic.Interface
	Typed  kubernetes.Interface
	Mapper meta.RESTMapper
	Clock  clock.WithDelayedExecution
	// Fake is the fake clock of an in-memory cluster, nil for a real one.
	Fake *clocktesting.FakeClock
	// Flaky counts the apply calls of FlakyConfigMap (in memory only).
	Flaky *FlakyCounter

	kubeconfig string
}

// Connect reaches the cluster of kubeconfig, or with "" starts an in-memory
// one whose clock starts at noon on 1 January 2026; Close releases it.
func Connect(kubeconfig string) (*Cluster, error) {
	if kubeconfig == "" {
		return MemoryCluster(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	}
	return RealCluster(kubeconfig)
}

// RealCluster reaches the cluster of kubeconfig; Close releases its connections.
func RealCluster(kubeconfig string) (*Cluster, error) {
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
	typed, err := kubernetes.NewForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfigAndClient(config, httpClient)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return &Cluster{Config: config, HTTPClient: httpClient, Client: client, Typed: typed, Mapper: mapper, Clock: clock.RealClock{}, kubeconfig: kubeconfig}, nil
}

// Close closes the idle connections to a real cluster, whose reading goroutines would
// otherwise outlive the run.
func (c *Cluster) Close() {
	if c.HTTPClient != nil {
		utilnet.CloseIdleConnectionsFor(c.HTTPClient.Transport)
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

// MemoryCluster is client-go's fake dynamic client on an object tracker that manages
// fields, so that server-side apply creates, merges and records managedFields as a real
// API server does (the fake's default tracker cannot create an object by apply), and a
// fake clientset with resource versions for the status and the events. No job
// controller runs in it: JobSimulator plays one.
func MemoryCluster(start time.Time) (*Cluster, error) {
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
	flaky := &FlakyCounter{}
	client.PrependReactor("patch", "configmaps", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if patch, ok := action.(k8stesting.PatchAction); !ok || patch.GetName() != FlakyConfigMap {
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
	typed := kubefake.NewClientset()
	fake.EnforceResourceVersions(typed)
	clk := clocktesting.NewFakeClock(start)
	return &Cluster{Client: client, Typed: typed, Mapper: mapper, Clock: clk, Fake: clk, Flaky: flaky}, nil
}

// FlakyCounter counts the apply calls of FlakyConfigMap and remembers the first that
// was accepted.
type FlakyCounter struct {
	calls    atomic.Int32
	accepted atomic.Int32
}

func (f *FlakyCounter) attempt() int32 {
	n := f.calls.Add(1)
	if n > 2 {
		f.accepted.CompareAndSwap(0, n)
	}
	return n
}

// Accepted is the number of the first attempt that was accepted, 0 before one was.
func (f *FlakyCounter) Accepted() int32 { return f.accepted.Load() }

// RunClock moves the fake clock of an in-memory cluster forward by a second every
// millisecond while something waits on it, so that retries and throttled notifications
// happen in virtual time. It returns a function that stops it and waits.
func (c *Cluster) RunClock(ctx context.Context) (stop func()) {
	if c.Fake == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if c.Fake.HasWaiters() {
					c.Fake.Step(time.Second)
				}
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// Present counts the manifests whose objects exist in the cluster.
func (c *Cluster) Present(ctx context.Context, manifests []manifest.Manifest) (int, error) {
	n := 0
	for _, m := range manifests {
		client, err := c.ResourceFor(&m)
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

// Policy is the sync worker's policy and the real time a run may take. On
// a real cluster the policy is in real time, and -interval (when not 0)
// sets the time between two reconciles. In memory, where the fake clock
// runs a second per millisecond while anything waits on it (also while the
// apply works), an apply gets an hour of virtual time, and the run a
// minute of real time.
func (c *Cluster) Policy(interval time.Duration) (payload.Policy, time.Duration) {
	policy := payload.Policy{
		Interval:         metav1.Duration{Duration: 30 * time.Second},
		ApplyTimeout:     metav1.Duration{Duration: 5 * time.Minute},
		ManifestAttempts: 12,
		ManifestBackoff:  converge.Backoff{Initial: metav1.Duration{Duration: 2 * time.Second}, Max: metav1.Duration{Duration: 20 * time.Second}, FactorPercent: 150},
		Workers:          4, ReconcileWorkers: 2,
		ReadinessPoll:    metav1.Duration{Duration: time.Second},
		ReadinessTimeout: metav1.Duration{Duration: 5 * time.Minute},
	}
	deadline := 10 * time.Minute
	if c.Fake != nil {
		policy.Interval.Duration, policy.ApplyTimeout.Duration, policy.ReadinessTimeout.Duration = 3*time.Minute, time.Hour, time.Hour
		policy.ManifestAttempts, policy.ManifestBackoff.Max.Duration, policy.ManifestBackoff.FactorPercent = 5, time.Minute, 200
		policy.ReadinessPoll.Duration = 2 * time.Second
		deadline = time.Minute
	}
	if interval > 0 {
		policy.Interval.Duration = interval
	}
	return policy, deadline
}

// Verify reports how many objects of manifests are in the cluster, and in memory checks
// that FlakyConfigMap was accepted on the attempt after its two refusals.
func (c *Cluster) Verify(ctx context.Context, manifests []manifest.Manifest, progress *Progress) error {
	n, err := c.Present(ctx, manifests)
	if err != nil {
		return err
	}
	progress.Println("%d of %d objects are in the cluster", n, len(manifests))
	if c.Flaky == nil {
		return nil
	}
	accepted := c.Flaky.Accepted()
	progress.Println("ConfigMap %s was accepted on attempt %d", FlakyConfigMap, accepted)
	if accepted != 3 {
		return fmt.Errorf("ConfigMap %s: accepted on attempt %d, want 3", FlakyConfigMap, accepted)
	}
	return nil
}

// ResourceFor returns the client of m's resource, namespaced when the resource is.
func (c *Cluster) ResourceFor(m *manifest.Manifest) (dynamic.ResourceInterface, error) {
	mapping, err := c.Mapper.RESTMapping(m.GVK.GroupKind(), m.GVK.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.Client.Resource(mapping.Resource).Namespace(m.Namespace()), nil
	}
	return c.Client.Resource(mapping.Resource), nil
}
