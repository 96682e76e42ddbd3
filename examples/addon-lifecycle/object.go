package main

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/addon"
)

// specOf reads the engine's Spec from an Addon object.
func specOf(obj *unstructured.Unstructured) addon.Spec {
	version, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
	return addon.Spec{
		Name:       obj.GetNamespace() + "/" + obj.GetName(),
		Generation: obj.GetGeneration(),
		Version:    version,
		Deleting:   obj.GetDeletionTimestamp() != nil,
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

// statusWriter is the controller's addon.StatusWriter: it writes through the
// Addon's status subresource over the resource version of the object being
// reconciled, so a write over a stale copy fails with a conflict instead of
// undoing someone else's change. A reconcile tracks its object for the
// duration of Machine.Reconcile; each successful write moves the tracked
// copy to the new resource version, since Reconcile may write more than once.
type statusWriter struct {
	client dynamic.NamespaceableResourceInterface

	mu      sync.Mutex
	objects map[string]*unstructured.Unstructured // by addon.Spec.Name
}

var _ addon.StatusWriter = (*statusWriter)(nil)

func newStatusWriter(client dynamic.NamespaceableResourceInterface) *statusWriter {
	return &statusWriter{client: client, objects: map[string]*unstructured.Unstructured{}}
}

// track makes obj the copy that writes for spec name key go over.
func (w *statusWriter) track(key string, obj *unstructured.Unstructured) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.objects[key] = obj
}

// release stops tracking key and returns the latest copy written or tracked.
func (w *statusWriter) release(key string) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	obj := w.objects[key]
	delete(w.objects, key)
	return obj
}

func (w *statusWriter) tracked(key string) *unstructured.Unstructured {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.objects[key]
}

// WriteStatus writes st as the status of the tracked object for spec.Name.
func (w *statusWriter) WriteStatus(ctx context.Context, spec addon.Spec, st addon.Status) error {
	obj := w.tracked(spec.Name)
	if obj == nil {
		return fmt.Errorf("no object tracked for add-on %s", spec.Name)
	}
	u, err := withStatus(obj, st)
	if err != nil {
		return err
	}
	out, err := w.client.Namespace(u.GetNamespace()).UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	w.track(spec.Name, out)
	return nil
}
