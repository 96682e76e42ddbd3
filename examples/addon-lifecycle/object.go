package main

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/addon"
)

// The annotations that request a reset or a forced re-apply, as Flux's
// reconcile.fluxcd.io/resetAt and forceAt: any new value is one request.
const (
	resetAnnotation = "addons.converge.dev/reset-at"
	forceAnnotation = "addons.converge.dev/force-at"
)

// specOf reads the engine's Spec from an Addon object.
func specOf(obj *unstructured.Unstructured) addon.Spec {
	version, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
	return addon.Spec{
		Name:       obj.GetNamespace() + "/" + obj.GetName(),
		Generation: obj.GetGeneration(),
		Version:    version,
		Deleting:   obj.GetDeletionTimestamp() != nil,
		ResetToken: obj.GetAnnotations()[resetAnnotation],
		ForceToken: obj.GetAnnotations()[forceAnnotation],
	}
}

// statusOf reads the engine's Status from an Addon object (zero when it has
// none yet).
func statusOf(obj *unstructured.Unstructured) (addon.Status, error) {
	var st addon.Status
	m, ok, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil || !ok {
		return st, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
		return st, fmt.Errorf("status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return st, nil
}

// withStatus returns a copy of obj carrying st.
func withStatus(obj *unstructured.Unstructured, st addon.Status) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return nil, err
	}
	out := obj.DeepCopy()
	out.Object["status"] = m
	return out, nil
}

// hasFinalizer reports whether obj carries the example's finalizer.
func hasFinalizer(obj metav1.Object) bool {
	for _, f := range obj.GetFinalizers() {
		if f == finalizer {
			return true
		}
	}
	return false
}

// withoutFinalizer returns the finalizers of obj without the example's.
func withoutFinalizer(obj metav1.Object) []string {
	var out []string
	for _, f := range obj.GetFinalizers() {
		if f != finalizer {
			out = append(out, f)
		}
	}
	return out
}

// addonStore is the controller's addon.Store: Get reads the Addon from the
// apiserver (after a conflict the informer's copy may still be stale), and
// UpdateStatus writes through the status subresource over the resource
// version the engine read, so a write over a stale copy fails with the
// apiserver's own conflict instead of undoing someone else's change. The
// Addon object travels as addon.Object.Host, for the driver's owner
// references.
type addonStore struct {
	client dynamic.NamespaceableResourceInterface
}

var _ addon.Store = addonStore{}

// objectOf is the engine's view of an Addon.
func objectOf(u *unstructured.Unstructured) (addon.Object, error) {
	st, err := statusOf(u)
	if err != nil {
		return addon.Object{}, err
	}
	return addon.Object{Spec: specOf(u), Status: st, ResourceVersion: u.GetResourceVersion(), Host: u}, nil
}

// Get reads the Addon named "namespace/name".
func (s addonStore) Get(ctx context.Context, key string) (addon.Object, error) {
	ns, n, _ := strings.Cut(key, "/")
	u, err := s.client.Namespace(ns).Get(ctx, n, metav1.GetOptions{})
	if err != nil {
		return addon.Object{}, err
	}
	return objectOf(u)
}

// UpdateStatus writes st as the status of obj's Addon at obj.ResourceVersion.
func (s addonStore) UpdateStatus(ctx context.Context, obj addon.Object, st addon.Status) (addon.Object, error) {
	host, ok := obj.Host.(*unstructured.Unstructured)
	if !ok {
		return addon.Object{}, fmt.Errorf("add-on %s: no Addon object to write", obj.Spec.Name)
	}
	u, err := withStatus(host, st)
	if err != nil {
		return addon.Object{}, err
	}
	u.SetResourceVersion(obj.ResourceVersion)
	out, err := s.client.Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return addon.Object{}, err
	}
	return objectOf(out)
}
