package crconverge

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
)

// ApplyClient is the kube.ApplyClient of a controller-runtime client, so
// that kube.NewApplierFor applies a payload's manifests through it with
// server-side apply (client.Apply). The client's REST mapper says whether a
// kind is namespaced; a cluster-scoped object is applied, read and deleted
// without the manifest's namespace.
//
// It reads objects as unstructured, which controller-runtime's client reads
// from the API server, not from the manager's cache (unless the manager's
// client options cache unstructured objects), so readiness is never older
// than the last apply and needs no watch.
//
// RBAC: on every resource of the payload, get, create and patch (server-side
// apply needs create as well as patch), and delete for manifests marked for
// deletion.
type ApplyClient struct {
	client client.Client
}

var (
	_ kube.ApplyClient          = (*ApplyClient)(nil)
	_ kube.ManagedFieldsPatcher = (*ApplyClient)(nil)
)

// NewApplyClient returns the ApplyClient of c.
func NewApplyClient(c client.Client) (*ApplyClient, error) {
	if check.IsNil(c) {
		return nil, converge.Invalidf("crconverge", "NewApplyClient arguments", "nil client")
	}
	return &ApplyClient{client: c}, nil
}

// object is an empty unstructured object of gvk at namespace and name,
// without the namespace when the kind is cluster-scoped.
func (a *ApplyClient) object(gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if a == nil || a.client == nil {
		return nil, errUnmade("ApplyClient")
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(name)
	namespaced, err := a.client.IsObjectNamespaced(obj)
	if err != nil {
		return nil, fmt.Errorf("crconverge: mapping %s: %w", gvk, err)
	}
	if namespaced {
		obj.SetNamespace(namespace)
	}
	return obj, nil
}

// Get reads the object.
func (a *ApplyClient) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	obj, err := a.object(gvk, namespace, name)
	if err != nil {
		return nil, err
	}
	if err := a.client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// Apply applies a copy of obj with server-side apply as fieldManager,
// forcing ownership when force is set.
func (a *ApplyClient) Apply(ctx context.Context, obj *unstructured.Unstructured, fieldManager string, force bool) error {
	if obj == nil {
		return converge.Invalidf("crconverge", "ApplyClient.Apply call", "nil object")
	}
	key, err := a.object(obj.GroupVersionKind(), obj.GetNamespace(), obj.GetName())
	if err != nil {
		return err
	}
	u := obj.DeepCopy()
	u.SetNamespace(key.GetNamespace())
	opts := []client.ApplyOption{client.FieldOwner(fieldManager)}
	if force {
		opts = append(opts, client.ForceOwnership)
	}
	return a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
}

// PatchJSON sends patch, a JSON patch, to the object (kube.ApplierConfig.TakeOver
// rewrites managedFields with it).
func (a *ApplyClient) PatchJSON(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, patch []byte) error {
	obj, err := a.object(gvk, namespace, name)
	if err != nil {
		return err
	}
	return a.client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}

// Delete deletes the object with background propagation.
func (a *ApplyClient) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	obj, err := a.object(gvk, namespace, name)
	if err != nil {
		return err
	}
	return a.client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
}

// NewApplier returns kube's Applier, payload's Applier, Deleter and
// Readiness, on c, applying as fieldManager and, with force, taking over
// fields another manager owns.
func NewApplier(c client.Client, fieldManager string, force bool) (*kube.Applier, error) {
	return NewApplierWith(c, kube.ApplierConfig{FieldManager: fieldManager, Force: force})
}

// NewApplierWith returns kube's Applier on c with cfg, whose Client and
// Mapper are left nil: cfg.TakeOver (kube.HandEditManagers) makes it take
// over the fields a person's edits leave before each apply.
func NewApplierWith(c client.Client, cfg kube.ApplierConfig) (*kube.Applier, error) {
	ac, err := NewApplyClient(c)
	if err != nil {
		return nil, err
	}
	return kube.NewApplierFor(ac, cfg)
}
