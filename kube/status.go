package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/internal/input"
)

// ObjectClient reads one object and writes its status subresource: the
// dynamic client through NewObjectStatusStore, or any other client (the
// controller-runtime module adapts its client.Client) through
// NewObjectStatusStoreFor. A client that also has a method
// GroupResource() schema.GroupResource (ResourceNamer) names the resource in
// the store's own 409s; otherwise the store guesses it from the object's
// kind, as meta.UnsafeGuessKindToResource does.
type ObjectClient interface {
	// Get reads the object.
	Get(ctx context.Context) (*unstructured.Unstructured, error)
	// UpdateStatus writes obj through the status subresource, with the
	// optimistic concurrency of obj's resource version, and returns the
	// object as written.
	UpdateStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// ObjectStatusStore keeps an engine's status of type T as JSON at a path in a
// custom resource (by default "status", the whole status), written through the
// status subresource with optimistic concurrency. The custom resource
// definition must enable the status subresource and its schema must hold
// every field of T: a write that finds either missing returns a
// *StatusSchemaError (see there for when).
//
// GetStatus returns the zero T and the object's resource version when the
// path is empty. UpdateStatus replaces what is at the path (other fields of
// the status are kept) if the object is still at the resource version read,
// and otherwise returns the API server's 409 unchanged. It reuses the object
// it last read or wrote when the version matches, so a read-then-write costs
// one GET and one PUT.
//
// RBAC: get on the resource, update on its status subresource.
//
// It is safe for concurrent use.
type ObjectStatusStore[T any] struct {
	client ObjectClient
	what   string
	path   []string
	mu     sync.Mutex
	last   *unstructured.Unstructured
}

// NewObjectStatusStore returns a store for the object name (in namespace, empty
// for a cluster-scoped resource) of resource gvr, read and written with the
// dynamic client, with the status at path (default "status"; "status",
// "rollout" keeps it under status.rollout).
func NewObjectStatusStore[T any](client dynamic.Interface, gvr schema.GroupVersionResource, namespace, name string, path ...string) (*ObjectStatusStore[T], error) {
	if input.IsNil(client) {
		return nil, input.Invalidf("kube", "NewObjectStatusStore arguments", "nil dynamic client")
	}
	if name == "" || gvr.Resource == "" {
		return nil, input.Invalidf("kube", "NewObjectStatusStore arguments", "empty object name or resource")
	}
	var ri dynamic.ResourceInterface = client.Resource(gvr)
	if namespace != "" {
		ri = client.Resource(gvr).Namespace(namespace)
	}
	what := fmt.Sprintf("%s %s/%s", gvr.GroupResource(), namespace, name)
	if namespace == "" {
		what = fmt.Sprintf("%s %s", gvr.GroupResource(), name)
	}
	return NewObjectStatusStoreFor[T](dynamicObject{ri: ri, resource: gvr.GroupResource(), name: name}, what, path...)
}

// NewObjectStatusStoreFor returns a store on any ObjectClient; what names the
// object in errors ("widgets.example.com ns/w").
func NewObjectStatusStoreFor[T any](client ObjectClient, what string, path ...string) (*ObjectStatusStore[T], error) {
	if input.IsNil(client) {
		return nil, input.Invalidf("kube", "NewObjectStatusStoreFor arguments", "nil object client")
	}
	if len(path) == 0 {
		path = []string{"status"}
	}
	if path[0] != "status" {
		return nil, input.Invalidf("kube", "status store for "+what, "path %v is not under status", path)
	}
	for _, p := range path {
		if p == "" {
			return nil, input.Invalidf("kube", "status store for "+what, "empty element in path %v", path)
		}
	}
	return &ObjectStatusStore[T]{client: client, what: what, path: path}, nil
}

// ResourceNamer names the resource of the objects a client serves, as the
// API server names it in its errors (widgets.example.com).
type ResourceNamer interface {
	GroupResource() schema.GroupResource
}

// dynamicObject is the ObjectClient of one object on the dynamic client.
type dynamicObject struct {
	ri       dynamic.ResourceInterface
	resource schema.GroupResource
	name     string
}

var _ ResourceNamer = dynamicObject{}

func (d dynamicObject) GroupResource() schema.GroupResource { return d.resource }

func (d dynamicObject) Get(ctx context.Context) (*unstructured.Unstructured, error) {
	return d.ri.Get(ctx, d.name, metav1.GetOptions{})
}

func (d dynamicObject) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return d.ri.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
}

// GetStatus reads the object and returns the status at the path and the
// object's resource version.
func (s *ObjectStatusStore[T]) GetStatus(ctx context.Context) (T, string, error) {
	var st T
	obj, err := s.client.Get(ctx)
	if err != nil {
		return st, "", err
	}
	s.remember(obj)
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, s.path...)
	if err != nil {
		return st, "", fmt.Errorf("kube: reading %s at %v: %w", s.what, s.path, err)
	}
	if found && raw != nil {
		if err := convert(raw, &st); err != nil {
			return st, "", fmt.Errorf("kube: decoding the status of %s at %v: %w", s.what, s.path, err)
		}
	}
	return st, obj.GetResourceVersion(), nil
}

// UpdateStatus writes st at the path if the object is still at
// resourceVersion, and returns the new resource version.
func (s *ObjectStatusStore[T]) UpdateStatus(ctx context.Context, st T, resourceVersion string) (string, error) {
	var val any
	if err := convert(st, &val); err != nil {
		return "", fmt.Errorf("kube: encoding the status of %s: %w", s.what, err)
	}
	obj := s.recall(resourceVersion)
	if obj == nil {
		fresh, err := s.client.Get(ctx)
		if err != nil {
			return "", err
		}
		obj = fresh
	}
	if obj.GetResourceVersion() != resourceVersion {
		return "", apierrors.NewConflict(s.groupResource(obj), obj.GetName(),
			fmt.Errorf("the object is at resource version %q, not %q", obj.GetResourceVersion(), resourceVersion))
	}
	if val == nil {
		unstructured.RemoveNestedField(obj.Object, s.path...)
	} else if err := unstructured.SetNestedField(obj.Object, val, s.path...); err != nil {
		return "", fmt.Errorf("kube: setting the status of %s at %v: %w", s.what, s.path, err)
	}
	out, err := s.client.UpdateStatus(ctx, obj)
	if err != nil {
		s.forget()
		return "", s.explain(ctx, err)
	}
	s.remember(out)
	returned, _, _ := unstructured.NestedFieldNoCopy(out.Object, s.path...)
	return out.GetResourceVersion(), CheckStatusWritten(s.groupResource(out).String(), s.what, s.path, val, returned)
}

// explain turns the 404 of a status write on an object that exists into
// the StatusSchemaError of a resource without a status subresource.
func (s *ObjectStatusStore[T]) explain(ctx context.Context, err error) error {
	if !apierrors.IsNotFound(err) {
		return err
	}
	if _, getErr := s.client.Get(ctx); getErr != nil {
		return err
	}
	return &StatusSchemaError{Resource: s.what, NoSubresource: true}
}

// groupResource names obj's resource as the API server does in its 409:
// the client's ResourceNamer, or the resource guessed from obj's kind.
func (s *ObjectStatusStore[T]) groupResource(obj *unstructured.Unstructured) schema.GroupResource {
	if n, ok := s.client.(ResourceNamer); ok {
		if gr := n.GroupResource(); gr.Resource != "" {
			return gr
		}
	}
	plural, _ := meta.UnsafeGuessKindToResource(obj.GroupVersionKind())
	return plural.GroupResource()
}

func (s *ObjectStatusStore[T]) remember(obj *unstructured.Unstructured) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = obj.DeepCopy()
}

func (s *ObjectStatusStore[T]) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = nil
}

// recall returns a copy of the object last seen if it is at resourceVersion.
func (s *ObjectStatusStore[T]) recall(resourceVersion string) *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil || resourceVersion == "" || s.last.GetResourceVersion() != resourceVersion {
		return nil
	}
	return s.last.DeepCopy()
}

// convert round-trips in through JSON into out, the way the API server sees
// it; numbers decoded into an interface stay exact (json.Number).
func convert(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(out)
}
