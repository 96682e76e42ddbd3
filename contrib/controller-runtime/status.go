package crconverge

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
)

// ObjectClient is the kube.ObjectClient of one object of a kind, read and
// written as unstructured through a controller-runtime client, so that
// kube.NewObjectStatusStoreFor keeps an engine's status on it.
//
// controller-runtime's client reads unstructured objects from the API server,
// not from the manager's cache, unless the manager's client options ask to
// cache them (client.Options.Cache.Unstructured); a cached read may be older
// than the last write, which the write then answers with a 409.
//
// RBAC: get on the resource, update on its status subresource.
type ObjectClient struct {
	client client.Client
	gvk    schema.GroupVersionKind
	key    client.ObjectKey
}

var (
	_ kube.ObjectClient  = (*ObjectClient)(nil)
	_ kube.ResourceNamer = (*ObjectClient)(nil)
)

// NewObjectClient returns the ObjectClient of the object of kind gvk at key
// (an empty namespace for a cluster-scoped kind). The client's REST mapper
// must know the kind.
func NewObjectClient(c client.Client, gvk schema.GroupVersionKind, key client.ObjectKey) (*ObjectClient, error) {
	if check.IsNil(c) {
		return nil, converge.Invalidf("crconverge", "NewObjectClient arguments", "nil client")
	}
	if gvk.Kind == "" || gvk.Version == "" || key.Name == "" {
		return nil, converge.Invalidf("crconverge", "NewObjectClient arguments", "empty kind, version or object name in %s %s", gvk, key)
	}
	return &ObjectClient{client: c, gvk: gvk, key: key}, nil
}

// Get reads the object.
func (o *ObjectClient) Get(ctx context.Context) (*unstructured.Unstructured, error) {
	if o == nil || o.client == nil {
		return nil, errUnmade("ObjectClient.Get")
	}
	return getUnstructured(ctx, o.client, o.gvk, o.key)
}

// GroupResource names the object's resource as the client's REST mapper
// maps its kind, so that the store's own 409s read like the API server's;
// it is empty when the mapper does not know the kind.
func (o *ObjectClient) GroupResource() schema.GroupResource {
	if o == nil || o.client == nil {
		return schema.GroupResource{}
	}
	mapping, err := o.client.RESTMapper().RESTMapping(o.gvk.GroupKind(), o.gvk.Version)
	if err != nil {
		return schema.GroupResource{}
	}
	return mapping.Resource.GroupResource()
}

// UpdateStatus writes obj through the status subresource if it is still at
// obj's resource version, and returns the object as written.
func (o *ObjectClient) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if o == nil || o.client == nil {
		return nil, errUnmade("ObjectClient.UpdateStatus")
	}
	return updateStatus(ctx, o.client, obj)
}

// getUnstructured reads the object of kind gvk at key.
func getUnstructured(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// updateStatus writes a copy of obj through the status subresource if it is
// still at obj's resource version, and returns the copy as written.
func updateStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, converge.Invalidf("crconverge", "UpdateStatus arguments", "nil object")
	}
	out := obj.DeepCopy()
	if err := c.Status().Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// NewObjectStatusStore returns a kube.ObjectStatusStore that keeps an engine's
// status of type T at path (default "status") of the object of kind gvk at
// key, through c. The custom resource definition must enable the status
// subresource.
func NewObjectStatusStore[T any](c client.Client, gvk schema.GroupVersionKind, key client.ObjectKey, path ...string) (*kube.ObjectStatusStore[T], error) {
	oc, err := NewObjectClient(c, gvk, key)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("%s %s", gvk.GroupKind(), key.Name)
	if key.Namespace != "" {
		what = fmt.Sprintf("%s %s", gvk.GroupKind(), key)
	}
	return kube.NewObjectStatusStoreFor[T](oc, what, path...)
}

// ConfigMapClient is the kube.ConfigMapClient of one ConfigMap on a
// controller-runtime client, so that kube.NewConfigMapStatusStoreFor keeps an
// engine's status in it.
//
// The manager's client reads ConfigMaps from its cache, which may be older
// than the last write; the write then fails with the API server's 409, the
// engine reads again, and Result requeues. A client that reads from the API
// server (client.New, or the manager's client with ConfigMaps in
// client.Options.Cache.DisableFor) sees its own writes at once.
//
// RBAC: get, create and update on configmaps in the namespace (and list and
// watch when the client reads from the manager's cache).
type ConfigMapClient struct {
	client client.Client
	key    client.ObjectKey
}

var _ kube.ConfigMapClient = (*ConfigMapClient)(nil)

// NewConfigMapClient returns the ConfigMapClient of the ConfigMap at key.
func NewConfigMapClient(c client.Client, key client.ObjectKey) (*ConfigMapClient, error) {
	if check.IsNil(c) {
		return nil, converge.Invalidf("crconverge", "NewConfigMapClient arguments", "nil client")
	}
	if key.Namespace == "" || key.Name == "" {
		return nil, converge.Invalidf("crconverge", "NewConfigMapClient arguments", "empty namespace or name in %q", key)
	}
	return &ConfigMapClient{client: c, key: key}, nil
}

// Get reads the ConfigMap.
func (c *ConfigMapClient) Get(ctx context.Context) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, c.key, cm); err != nil {
		return nil, err
	}
	return cm, nil
}

// Create creates cm in the ConfigMap's namespace.
func (c *ConfigMapClient) Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	out := cm.DeepCopy()
	out.Namespace = c.key.Namespace
	if err := c.client.Create(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Update writes cm if it is still at cm's resource version.
func (c *ConfigMapClient) Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	out := cm.DeepCopy()
	if err := c.client.Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// NewConfigMapStatusStore returns a kube.ConfigMapStatusStore that keeps an
// engine's status of type T as JSON under dataKey (default "status.json") of
// the ConfigMap at key, through c.
func NewConfigMapStatusStore[T any](c client.Client, key client.ObjectKey, dataKey string) (*kube.ConfigMapStatusStore[T], error) {
	cc, err := NewConfigMapClient(c, key)
	if err != nil {
		return nil, err
	}
	return kube.NewConfigMapStatusStoreFor[T](cc, key.Namespace, key.Name, dataKey)
}
