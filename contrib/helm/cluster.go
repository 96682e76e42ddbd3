package helmconverge

import (
	"fmt"
	"log/slog"
	"reflect"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is where an add-on's release lives: Helm's release storage and the
// client that applies, reads and deletes the release's objects.
type Cluster interface {
	// Helm returns Helm's action configuration for a release whose
	// records are kept in storageNamespace and whose namespaced objects go
	// to namespace, logging to log. The driver asks for one per call, and
	// wraps its Releases for that call (to label the revisions it writes).
	Helm(storageNamespace, namespace string, log slog.Handler) (*action.Configuration, error)
}

// ClusterFunc adapts a function to Cluster.
type ClusterFunc func(storageNamespace, namespace string, log slog.Handler) (*action.Configuration, error)

// Helm calls f.
func (f ClusterFunc) Helm(storageNamespace, namespace string, log slog.Handler) (*action.Configuration, error) {
	return f(storageNamespace, namespace, log)
}

var _ Cluster = ClusterFunc(nil)

// KubeCluster is a real cluster: Helm's kube client on a rest.Config, with
// each release stored in Secrets of its namespace, as the helm command
// stores them. Make it with NewCluster; it is safe for concurrent use.
type KubeCluster struct {
	getter *restGetter
}

var _ Cluster = (*KubeCluster)(nil)

// NewCluster returns the Cluster that cfg reaches. Discovery is cached for
// the KubeCluster's life; a kind added to the cluster later (a chart's CRD)
// is found by a fresh discovery when a lookup misses.
func NewCluster(cfg *rest.Config) (*KubeCluster, error) {
	if cfg == nil {
		return nil, invalidf("cluster", "nil rest.Config")
	}
	cfg = rest.CopyConfig(cfg)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("helm: discovery client: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	return &KubeCluster{getter: &restGetter{cfg: cfg, discovery: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}}, nil
}

// Helm implements Cluster with the Secrets storage driver in
// storageNamespace and Helm's kube client pinned to namespace.
func (c *KubeCluster) Helm(storageNamespace, namespace string, log slog.Handler) (*action.Configuration, error) {
	if c == nil || c.getter == nil {
		return nil, invalidf("cluster", "KubeCluster not made by NewCluster")
	}
	if log == nil {
		log = slog.DiscardHandler
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(log))
	if err := cfg.Init(c.getter.in(namespace), storageNamespace, "secret"); err != nil {
		return nil, fmt.Errorf("helm: action configuration: %w", err)
	}
	if kc, ok := cfg.KubeClient.(*kube.Client); ok {
		kc.Namespace = namespace
	}
	return cfg, nil
}

// restGetter is the genericclioptions.RESTClientGetter Helm wants, on a
// rest.Config instead of a kubeconfig file.
type restGetter struct {
	cfg       *rest.Config
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	namespace string
}

// in returns the getter with namespace as its default namespace.
func (g *restGetter) in(namespace string) *restGetter {
	c := *g
	c.namespace = namespace
	return &c
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.discovery, nil
}

func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error) { return g.mapper, nil }

func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}})
}

// isNil reports a nil or typed-nil interface.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
