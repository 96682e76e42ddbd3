package crconverge

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
)

// AddonClient is the kube.AddonClient of one kind on a controller-runtime
// client, so that kube.NewAddonObjectsFor keeps add-ons on it.
//
// It reads and writes the objects as unstructured, which controller-runtime's
// client reads from the API server, not from the manager's cache (unless the
// manager's client options cache unstructured objects,
// client.Options.Cache.Unstructured): the engine's Get after a conflict then
// sees the other writer's change at once.
//
// RBAC: get on the resource, update on its status subresource, and update
// on the resource for kube.AddonObjects.WithFinalizer.
type AddonClient struct {
	client client.Client
	gvk    schema.GroupVersionKind
}

var _ kube.AddonClient = (*AddonClient)(nil)

// NewAddonClient returns the AddonClient of kind gvk on c.
func NewAddonClient(c client.Client, gvk schema.GroupVersionKind) (*AddonClient, error) {
	if check.IsNil(c) {
		return nil, converge.Invalidf("crconverge", "NewAddonClient arguments", "nil client")
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, converge.Invalidf("crconverge", "NewAddonClient arguments", "empty kind or version in %q", gvk)
	}
	return &AddonClient{client: c, gvk: gvk}, nil
}

// Get reads the object name in namespace.
func (a *AddonClient) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	if a == nil || a.client == nil {
		return nil, errUnmade("AddonClient.Get")
	}
	return getUnstructured(ctx, a.client, a.gvk, client.ObjectKey{Namespace: namespace, Name: name})
}

// Update writes obj (its metadata and spec) if it is still at obj's
// resource version, and returns the object as written.
func (a *AddonClient) Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if a == nil || a.client == nil {
		return nil, errUnmade("AddonClient.Update")
	}
	if obj == nil {
		return nil, converge.Invalidf("crconverge", "Update arguments", "nil object")
	}
	out := obj.DeepCopy()
	if err := a.client.Update(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateStatus writes obj through the status subresource if it is still at
// obj's resource version, and returns the object as written.
func (a *AddonClient) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if a == nil || a.client == nil {
		return nil, errUnmade("AddonClient.UpdateStatus")
	}
	return updateStatus(ctx, a.client, obj)
}

// AddonObjects is kube's AddonObjects, addon.Store, on a controller-runtime
// client, with FromObject to hand the engine the typed object a reconciler
// read from the manager's cache.
type AddonObjects struct {
	*kube.AddonObjects
	gvk schema.GroupVersionKind
}

var _ addon.Store = (*AddonObjects)(nil)

// NewAddonObjects returns the add-on store of kind gvk on c: cfg is kube's,
// without its Client and Resource, which c and gvk replace. The kind needs a
// status subresource.
func NewAddonObjects(c client.Client, gvk schema.GroupVersionKind, cfg kube.AddonObjectsConfig) (*AddonObjects, error) {
	ac, err := NewAddonClient(c, gvk)
	if err != nil {
		return nil, err
	}
	objects, err := kube.NewAddonObjectsFor(ac, cfg)
	if err != nil {
		return nil, err
	}
	return &AddonObjects{AddonObjects: objects, gvk: gvk}, nil
}

// FromObject is the engine's view of obj, a typed or unstructured object of
// the store's kind (from the manager's cache, say); its Host is an
// *unstructured.Unstructured copy of obj.
func (s *AddonObjects) FromObject(obj client.Object) (addon.Object, error) {
	if s == nil || s.AddonObjects == nil {
		return addon.Object{}, errUnmade("AddonObjects.FromObject")
	}
	if check.IsNil(obj) {
		return addon.Object{}, converge.Invalidf("crconverge", "AddonObjects.FromObject call", "nil object")
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return addon.Object{}, fmt.Errorf("crconverge: add-on %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: raw}
	u.SetGroupVersionKind(s.gvk)
	return s.Object(u)
}
