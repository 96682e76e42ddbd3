package helmconverge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/dynamic"
	restfake "k8s.io/client-go/rest/fake"
	"sigs.k8s.io/yaml"
)

// MemoryCluster keeps releases in Helm's in-memory storage and applies their
// objects to a dynamic client (client-go's dynamic fake): a cluster for
// tests, and for trying a chart without one. Hooks and tests end as soon as
// they are created, as Hook decides. Nothing runs the objects: a test (or a
// simulated controller) writes their status. Safe for concurrent use.
type MemoryCluster struct {
	// Objects holds what the releases applied.
	Objects dynamic.Interface
	// Mapper maps the charts' kinds to resources and says which are
	// namespaced.
	Mapper meta.RESTMapper
	// Hook decides how a hook or test resource ends once Helm created it:
	// nil, or a nil error, succeeds.
	Hook func(obj *unstructured.Unstructured) error

	mu     sync.Mutex
	stores map[string]*storage.Storage
}

var _ Cluster = (*MemoryCluster)(nil)

// NewMemoryCluster returns a MemoryCluster on objects and mapper.
func NewMemoryCluster(objects dynamic.Interface, mapper meta.RESTMapper) *MemoryCluster {
	return &MemoryCluster{Objects: objects, Mapper: mapper}
}

// Helm implements Cluster: the in-memory release storage of
// storageNamespace (one per namespace, kept for the MemoryCluster's life)
// and a kube client on Objects that puts namespaced objects in namespace.
func (c *MemoryCluster) Helm(storageNamespace, namespace string, log slog.Handler) (*action.Configuration, error) {
	if c == nil || isNil(c.Objects) || isNil(c.Mapper) {
		return nil, invalidf("cluster", "MemoryCluster without Objects or Mapper")
	}
	c.mu.Lock()
	if c.stores == nil {
		c.stores = map[string]*storage.Storage{}
	}
	store, ok := c.stores[storageNamespace]
	if !ok {
		mem := driver.NewMemory()
		mem.SetNamespace(storageNamespace)
		store = storage.Init(mem)
		c.stores[storageNamespace] = store
	}
	c.mu.Unlock()
	if log == nil {
		log = slog.DiscardHandler
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(log))
	cfg.Releases = store
	cfg.KubeClient = &memoryKube{cluster: c, namespace: namespace}
	cfg.Capabilities = common.DefaultCapabilities.Copy()
	return cfg, nil
}

// memoryKube is Helm's kube.Interface on a MemoryCluster's objects.
type memoryKube struct {
	cluster   *MemoryCluster
	namespace string
}

var _ kube.Interface = (*memoryKube)(nil)

func (k *memoryKube) resource(info *resource.Info) dynamic.ResourceInterface {
	r := k.cluster.Objects.Resource(info.Mapping.Resource)
	if info.Mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.Namespace(info.Namespace)
	}
	return r
}

// Build parses a manifest into resources of the release's namespace, each
// with a REST client that reads from the cluster's objects (Helm's actions
// check what exists through it).
func (k *memoryKube) Build(reader io.Reader, _ bool) (kube.ResourceList, error) {
	raw, err := io.ReadAll(reader)
	if err != nil {
		return nil, err
	}
	docs := releaseutil.SplitManifests(string(raw))
	keys := make([]string, 0, len(docs))
	for key := range docs {
		keys = append(keys, key)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var list kube.ResourceList
	for _, key := range keys {
		raw, err := yaml.YAMLToJSON([]byte(docs[key]))
		if err != nil {
			return nil, fmt.Errorf("helm: manifest: %w", err)
		}
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("helm: manifest: %w", err)
		}
		gvk := obj.GroupVersionKind()
		mapping, err := k.cluster.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("helm: %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace && obj.GetNamespace() == "" {
			obj.SetNamespace(k.namespace)
		}
		info := &resource.Info{Name: obj.GetName(), Namespace: obj.GetNamespace(), Object: obj, Mapping: mapping}
		info.Client = k.restClient(info)
		list = append(list, info)
	}
	return list, nil
}

// restClient answers GETs of info's object from the cluster's objects.
func (k *memoryKube) restClient(info *resource.Info) resource.RESTClient {
	serializer := runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{
		MediaType: runtime.ContentTypeJSON, EncodesAsText: true, Serializer: unstructured.UnstructuredJSONScheme,
	})
	return &restfake.RESTClient{
		NegotiatedSerializer: serializer, GroupVersion: info.Mapping.GroupVersionKind.GroupVersion(),
		Client: restfake.CreateHTTPClient(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet {
				return nil, fmt.Errorf("helm: memory cluster: %s %s not supported", req.Method, req.URL.Path)
			}
			obj, err := k.resource(info).Get(req.Context(), info.Name, metav1.GetOptions{})
			if err != nil {
				code := http.StatusInternalServerError
				if apierrors.IsNotFound(err) {
					code = http.StatusNotFound
				}
				return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {runtime.ContentTypeJSON}}, Body: io.NopCloser(bytes.NewReader(nil))}, nil
			}
			body, err := obj.MarshalJSON()
			if err != nil {
				return nil, err
			}
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {runtime.ContentTypeJSON}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
		}),
	}
}

func (k *memoryKube) BuildTable(reader io.Reader, validate bool) (kube.ResourceList, error) {
	return k.Build(reader, validate)
}

func (k *memoryKube) IsReachable() error { return nil }

func object(info *resource.Info) (*unstructured.Unstructured, error) {
	u, ok := info.Object.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("helm: %s is %T, not unstructured", info.Name, info.Object)
	}
	return u.DeepCopy(), nil
}

// Create creates each resource; one that exists fails as on the apiserver.
func (k *memoryKube) Create(resources kube.ResourceList, _ ...kube.ClientCreateOption) (*kube.Result, error) {
	res := &kube.Result{}
	for _, info := range resources {
		obj, err := object(info)
		if err != nil {
			return res, err
		}
		if _, err := k.resource(info).Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
			return res, err
		}
		res.Created = append(res.Created, info)
	}
	return res, nil
}

// Update applies target over original: it creates or replaces every target
// resource and deletes the original ones no longer in target.
func (k *memoryKube) Update(original, target kube.ResourceList, _ ...kube.ClientUpdateOption) (*kube.Result, error) {
	ctx := context.Background()
	res := &kube.Result{}
	for _, info := range target {
		obj, err := object(info)
		if err != nil {
			return res, err
		}
		cur, err := k.resource(info).Get(ctx, info.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := k.resource(info).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				return res, err
			}
			res.Created = append(res.Created, info)
			continue
		case err != nil:
			return res, err
		}
		obj.SetResourceVersion(cur.GetResourceVersion())
		if status, ok := cur.Object["status"]; ok {
			obj.Object["status"] = status
		}
		if _, err := k.resource(info).Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
			return res, err
		}
		res.Updated = append(res.Updated, info)
	}
	for _, info := range original {
		if target.Get(info) == nil {
			if err := k.resource(info).Delete(ctx, info.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return res, err
			}
			res.Deleted = append(res.Deleted, info)
		}
	}
	return res, nil
}

// Delete deletes each resource; one already gone counts as deleted.
func (k *memoryKube) Delete(resources kube.ResourceList, _ metav1.DeletionPropagation) (*kube.Result, []error) {
	res := &kube.Result{}
	var errs []error
	for _, info := range resources {
		if err := k.resource(info).Delete(context.Background(), info.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		res.Deleted = append(res.Deleted, info)
	}
	return res, errs
}

func (k *memoryKube) Get(resources kube.ResourceList, _ bool) (map[string][]runtime.Object, error) {
	out := map[string][]runtime.Object{}
	for _, info := range resources {
		obj, err := k.resource(info).Get(context.Background(), info.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		key := info.Mapping.GroupVersionKind.String()
		out[key] = append(out[key], obj)
	}
	return out, nil
}

func (k *memoryKube) GetWaiter(kube.WaitStrategy) (kube.Waiter, error) { return memoryWaiter{k}, nil }

func (k *memoryKube) GetWaiterWithOptions(kube.WaitStrategy, ...kube.WaitOption) (kube.Waiter, error) {
	return memoryWaiter{k}, nil
}

func (k *memoryKube) GetPodList(string, metav1.ListOptions) (*corev1.PodList, error) {
	return &corev1.PodList{}, nil
}

func (k *memoryKube) OutputContainerLogsForPodList(*corev1.PodList, string, func(string, string, string) io.Writer) error {
	return nil
}

// memoryWaiter waits for nothing: a hook ends as the cluster's Hook says.
type memoryWaiter struct{ k *memoryKube }

func (memoryWaiter) Wait(kube.ResourceList, time.Duration) error          { return nil }
func (memoryWaiter) WaitWithJobs(kube.ResourceList, time.Duration) error  { return nil }
func (memoryWaiter) WaitForDelete(kube.ResourceList, time.Duration) error { return nil }

func (w memoryWaiter) WatchUntilReady(resources kube.ResourceList, _ time.Duration) error {
	hook := w.k.cluster.Hook
	if hook == nil {
		return nil
	}
	var errs []error
	for _, info := range resources {
		obj, err := object(info)
		if err != nil {
			return err
		}
		if err := hook(obj); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err))
		}
	}
	return errors.Join(errs...)
}
