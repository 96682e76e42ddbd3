package crconverge

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
)

// objectStatus keeps an engine's status S in the status field of one typed
// object, written through its status subresource over the resource version
// the engine read: the status store of the configured controllers.
//
// It reads the copy it holds, the one the reconciler read from the
// manager's cache or the one it wrote last, until a write fails; the next
// read then goes to the API server (reader), so that a conflict is decided
// again on the object as it is, never on a cache that may not have caught
// up with the write that won.
//
// It is safe for concurrent use.
type objectStatus[O client.Object, S any] struct {
	client client.Client // writes the status subresource
	reader client.Reader // reads afresh: the manager's API reader
	kind   kind[O]
	key    client.ObjectKey
	// status is the accessor of the object's status field.
	status func(O) *S

	// onSchema, when set, hears of every write the resource's definition
	// cannot hold (the controller records it as a Warning).
	onSchema func(*kube.StatusSchemaError)

	mu    sync.Mutex
	obj   O    // as last read or written
	fresh bool // obj serves the next read: no write failed since it was read
}

// newObjectStatus returns the store of the object at key; cached, when
// non-nil, is the object as the reconciler read it, which serves the first
// read.
func newObjectStatus[O client.Object, S any](c client.Client, reader client.Reader, k kind[O], key client.ObjectKey,
	status func(O) *S, cached O) *objectStatus[O, S] {
	s := &objectStatus[O, S]{client: c, reader: reader, kind: k, key: key, status: status}
	if !check.IsNil(cached) {
		s.obj, s.fresh = cached, true
	}
	return s
}

// GetStatus returns a copy of the object's status and its resource version.
func (s *objectStatus[O, S]) GetStatus(ctx context.Context) (S, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var zero S
	if err := s.read(ctx); err != nil {
		return zero, "", err
	}
	cp := s.obj.DeepCopyObject().(O)
	st, err := s.field(cp)
	if err != nil {
		return zero, "", err
	}
	return *st, cp.GetResourceVersion(), nil
}

// UpdateStatus writes st as the object's status if the object is still at
// resourceVersion, and returns its new resource version; a lost race is the
// API server's 409, unchanged.
func (s *objectStatus[O, S]) UpdateStatus(ctx context.Context, st S, resourceVersion string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.read(ctx); err != nil {
		return "", err
	}
	out, err := s.write(ctx, s.obj, resourceVersion, st)
	if err != nil {
		return "", err
	}
	return out.GetResourceVersion(), nil
}

// write writes st as the status of a copy of obj at resourceVersion and
// holds the object as the apiserver returned it; a failed write makes the
// next read fresh. The write goes as an unstructured object, so that what
// the apiserver returned shows every field its schema dropped
// (kube.CheckStatusWritten). The caller holds mu.
func (s *objectStatus[O, S]) write(ctx context.Context, obj O, resourceVersion string, st S) (O, error) {
	var zero O
	cp := obj.DeepCopyObject().(O)
	field, err := s.field(cp)
	if err != nil {
		return zero, err
	}
	*field = st
	cp.SetResourceVersion(resourceVersion)
	u, err := s.kind.unstructured(cp)
	if err != nil {
		return zero, err
	}
	written := runtime.DeepCopyJSONValue(u.Object["status"])
	if err := s.client.Status().Update(ctx, u); err != nil {
		s.fresh = false
		return zero, s.report(s.explain(ctx, err))
	}
	out, err := s.kind.typed(u)
	if err != nil {
		s.fresh = false
		return zero, err
	}
	s.obj, s.fresh = out, true
	resource := s.kind.resource()
	return out, s.report(kube.CheckStatusWritten(resource, resource+" "+keyString(s.key), []string{"status"}, written, u.Object["status"]))
}

// explain turns the 404 of a status write on an object that exists into
// the kube.StatusSchemaError of a resource without a status subresource.
func (s *objectStatus[O, S]) explain(ctx context.Context, err error) error {
	if !apierrors.IsNotFound(err) || s.reader.Get(ctx, s.key, s.kind.newObject()) != nil {
		return err
	}
	return &kube.StatusSchemaError{Resource: s.kind.resource() + " " + keyString(s.key), NoSubresource: true}
}

// warnAbout returns the onSchema of a store of regarding: a Warning event
// (kube.ReasonStatusSchemaMismatch) through rec, with action.
func warnAbout(rec events.EventRecorder, regarding runtime.Object, action string) func(*kube.StatusSchemaError) {
	return func(se *kube.StatusSchemaError) {
		kube.RecordEvents(rec, regarding, action, []converge.Event{se.Event()})
	}
}

// report hands a kube.StatusSchemaError to onSchema and returns err.
func (s *objectStatus[O, S]) report(err error) error {
	var se *kube.StatusSchemaError
	if s.onSchema != nil && errors.As(err, &se) {
		s.onSchema(se)
	}
	return err
}

// read makes obj current: it reads the object from the API server unless
// the copy held is fresh. The caller holds mu.
func (s *objectStatus[O, S]) read(ctx context.Context) error {
	if s.fresh {
		return nil
	}
	obj := s.kind.newObject()
	if err := s.reader.Get(ctx, s.key, obj); err != nil {
		return err
	}
	s.obj, s.fresh = obj, true
	return nil
}

// latest returns the object as last read or written (nil before the first
// read).
func (s *objectStatus[O, S]) latest() O {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obj
}

// field returns obj's status field, refusing an accessor that returns nil
// (a status held by a nil pointer).
func (s *objectStatus[O, S]) field(obj O) (*S, error) {
	st := s.status(obj)
	if st == nil {
		return nil, converge.Invalidf("crconverge", "object", "the status accessor of %s %s returned nil", s.kind.gvk.Kind, s.key)
	}
	return st, nil
}

// keyString names the object at key as the engines name objects:
// "namespace/name", or "name" when cluster-scoped.
func keyString(key client.ObjectKey) string {
	if key.Namespace == "" {
		return key.Name
	}
	return fmt.Sprintf("%s/%s", key.Namespace, key.Name)
}
