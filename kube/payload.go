package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/csaupgrade"

	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// ApplierConfig says how Applier reaches the cluster.
type ApplierConfig struct {
	// Client applies, reads and deletes objects. Required by NewApplier;
	// left nil for NewApplierFor.
	Client dynamic.Interface
	// Mapper maps a manifest's kind to its resource and scope (e.g.
	// restmapper.NewDeferredDiscoveryRESTMapper). Required by NewApplier;
	// left nil for NewApplierFor.
	Mapper meta.RESTMapper
	// FieldManager names the applier in the objects' managedFields. Required.
	FieldManager string
	// Force takes over fields another manager owns (an operator that owns
	// its payload forces; the default, false, reports the conflict).
	Force bool
	// TakeOver names the field managers whose fields the applier takes over
	// before each apply, with client-go's csaupgrade: their fields become
	// FieldManager's, so that a field one of them set and the manifest does
	// not is removed by the apply instead of kept forever. HandEditManagers
	// lists the managers a person's edits leave. A field another manager
	// owns (a controller's) is not taken over. Each apply then reads the
	// object first, and the client must be a ManagedFieldsPatcher (both of
	// NewApplier's and crconverge's are).
	TakeOver []string
}

// HandEditManagers returns the field managers a person's edits leave in an
// object's managedFields: kubectl edit ("kubectl-edit"), kubectl's
// client-side apply ("kubectl-client-side-apply"), and the fields set before
// the object's first server-side apply ("before-first-apply").
func HandEditManagers() []string {
	return []string{"kubectl-edit", "kubectl-client-side-apply", "before-first-apply"}
}

// ManagedFieldsPatcher rewrites an object's managedFields, which
// ApplierConfig.TakeOver needs of an ApplyClient.
type ManagedFieldsPatcher interface {
	// PatchJSON sends patch, a JSON patch (RFC 6902), to the object; a patch
	// whose resourceVersion is stale is the API server's Conflict.
	PatchJSON(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, patch []byte) error
}

// ApplyClient reads, applies and deletes the objects of manifests: the
// dynamic client through NewApplier, or any other client (the
// controller-runtime module adapts its client.Client) through NewApplierFor.
// An ApplyClient finds each kind's resource and scope itself: the namespace
// it is given is the manifest's, which a cluster-scoped kind ignores.
type ApplyClient interface {
	// Get reads the object; a missing object is the API server's NotFound.
	Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error)
	// Apply applies obj with server-side apply as fieldManager, forcing
	// ownership of conflicting fields when force is set; it does not
	// modify obj.
	Apply(ctx context.Context, obj *unstructured.Unstructured, fieldManager string, force bool) error
	// Delete deletes the object with background propagation; a missing
	// object is the API server's NotFound.
	Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error
}

// Applier applies a payload's manifests with server-side apply through an
// ApplyClient, deletes the objects of manifests marked for deletion, and
// checks readiness: it implements payload.Applier, payload.Deleter and
// payload.Readiness. Deleting an object already gone, or already being
// deleted, returns the API server's NotFound.
//
// Applying an unchanged manifest writes nothing (the API server keeps the
// object and its resource version as they are). A Job's pod template is
// immutable, so a Job is applied only when it does not exist yet. Readiness
// is ObjectReady's, for every kind: a Job has completed, a workload has
// rolled out its current generation, a CustomResourceDefinition is
// Established, a custom resource reports Ready (or neither Reconciling nor
// Stalled); an object that failed (a failed Job, Stalled=True) stops the
// wait with an *payload.UpdateError.
//
// RBAC: on every resource of the payload, get, create and patch (server-side
// apply needs create as well as patch), and delete for manifests marked for
// deletion.
type Applier struct {
	cfg    ApplierConfig
	client ApplyClient
}

var (
	_ payload.Applier      = (*Applier)(nil)
	_ payload.Deleter      = (*Applier)(nil)
	_ payload.Readiness    = (*Applier)(nil)
	_ ApplyClient          = dynamicApply{}
	_ ManagedFieldsPatcher = dynamicApply{}
)

// NewApplier checks cfg and returns the applier on the dynamic client.
func NewApplier(cfg ApplierConfig) (*Applier, error) {
	if input.IsNil(cfg.Client) || input.IsNil(cfg.Mapper) {
		return nil, input.Invalidf("kube", "NewApplier arguments", "nil Client or Mapper")
	}
	client := dynamicApply{client: cfg.Client, mapper: cfg.Mapper}
	cfg.Client, cfg.Mapper = nil, nil
	return NewApplierFor(client, cfg)
}

// NewApplierFor checks cfg and returns the applier on client; cfg's Client
// and Mapper, which belong to NewApplier, must be nil.
func NewApplierFor(client ApplyClient, cfg ApplierConfig) (*Applier, error) {
	switch {
	case input.IsNil(client):
		return nil, input.Invalidf("kube", "NewApplierFor arguments", "nil apply client")
	case cfg.Client != nil || cfg.Mapper != nil:
		return nil, input.Invalidf("kube", "NewApplierFor arguments", "Client and Mapper are NewApplier's and must be nil")
	case cfg.FieldManager == "":
		return nil, input.Invalidf("kube", "ApplierConfig", "empty FieldManager")
	case len(cfg.TakeOver) > 0 && !isPatcher(client):
		return nil, input.Invalidf("kube", "ApplierConfig", "TakeOver needs an apply client that is a ManagedFieldsPatcher")
	case slices.Contains(cfg.TakeOver, "") || slices.Contains(cfg.TakeOver, cfg.FieldManager):
		return nil, input.Invalidf("kube", "ApplierConfig", "TakeOver names an empty manager or FieldManager itself")
	}
	cfg.TakeOver = slices.Clone(cfg.TakeOver)
	return &Applier{cfg: cfg, client: client}, nil
}

func isPatcher(client ApplyClient) bool {
	_, ok := client.(ManagedFieldsPatcher)
	return ok
}

// Apply applies m with server-side apply.
func (a *Applier) Apply(ctx context.Context, m *manifest.Manifest, _ payload.State) error {
	if err := a.check("Apply", m); err != nil {
		return err
	}
	if m.GVK.Group == "batch" && m.GVK.Kind == "Job" {
		_, err := a.client.Get(ctx, m.GVK, m.Namespace(), m.Name())
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	if err := a.takeOver(ctx, m); err != nil {
		return err
	}
	return a.client.Apply(ctx, m.Object, a.cfg.FieldManager, a.cfg.Force)
}

// takeOver makes the fields of the ApplierConfig.TakeOver managers on m's
// object FieldManager's (csaupgrade.UpgradeManagedFieldsPatch), so that the
// apply that follows removes those the manifest does not set. An object
// that does not exist yet, or that no such manager touched, is left as it is.
func (a *Applier) takeOver(ctx context.Context, m *manifest.Manifest) error {
	if len(a.cfg.TakeOver) == 0 {
		return nil
	}
	obj, err := a.client.Get(ctx, m.GVK, m.Namespace(), m.Name())
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, sets.New(a.cfg.TakeOver...), a.cfg.FieldManager)
	if err != nil || patch == nil {
		return err
	}
	if err := a.client.(ManagedFieldsPatcher).PatchJSON(ctx, m.GVK, m.Namespace(), m.Name(), patch); err != nil {
		return fmt.Errorf("kube: taking over the fields of %v on %s: %w", a.cfg.TakeOver, m.Ref(), err)
	}
	return nil
}

// Delete deletes the object of m in the background. It reads the object first:
// an object already gone is the API server's NotFound, returned as it is, and so
// is an object already being deleted (a finalizer holds it), which is not
// deleted again: the worker counts either as done, not as a deletion, so that
// it reports only what it removed.
func (a *Applier) Delete(ctx context.Context, m *manifest.Manifest) error {
	if err := a.check("Delete", m); err != nil {
		return err
	}
	obj, err := a.client.Get(ctx, m.GVK, m.Namespace(), m.Name())
	if err != nil {
		return err
	}
	if obj.GetDeletionTimestamp() != nil {
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound,
			Reason: metav1.StatusReasonNotFound, Message: fmt.Sprintf("%s %q is being deleted", m.GVK.Kind, m.Name())}}
	}
	return a.client.Delete(ctx, m.GVK, m.Namespace(), m.Name())
}

// Ready reads the object of m and judges it with ObjectReady: nil once it is
// ready, an error matching ErrNotReady that says what it waits for, and for
// an object that failed (ErrObjectFailed) an *payload.UpdateError with
// EffectFail and Reason "<Kind>Failed", which stops payload's wait at once.
// An object that is not there is the client's NotFound, which payload waits
// on as it does on any other error.
func (a *Applier) Ready(ctx context.Context, m *manifest.Manifest) error {
	if err := a.check("Ready", m); err != nil {
		return err
	}
	obj, err := a.client.Get(ctx, m.GVK, m.Namespace(), m.Name())
	if err != nil {
		return err
	}
	err = ObjectReady(obj)
	if errors.Is(err, ErrObjectFailed) {
		return &payload.UpdateError{
			Nested: err, Effect: payload.EffectFail, Reason: obj.GetKind() + "Failed", Name: objectName(obj), Message: err.Error(),
		}
	}
	return err
}

// check returns an error matching converge.ErrInvalid for an Applier not made by NewApplier or
// NewApplierFor, and for a nil manifest or one without an object.
func (a *Applier) check(method string, m *manifest.Manifest) error {
	switch {
	case a == nil || a.client == nil:
		return input.Invalidf("kube", "Applier."+method+" call", "applier not made by NewApplier or NewApplierFor")
	case m == nil || m.Object == nil:
		return input.Invalidf("kube", "Applier."+method+" call", "nil manifest or manifest object")
	}
	return nil
}

// dynamicApply is the ApplyClient of the dynamic client and a REST mapper.
type dynamicApply struct {
	client dynamic.Interface
	mapper meta.RESTMapper
}

// resource returns the client of gvk's resource, namespaced when the resource is. A
// kind the mapper does not know is looked up once more after a Reset of a mapper
// that caches discovery (meta.ResettableRESTMapper, as
// restmapper.NewDeferredDiscoveryRESTMapper is), so that a kind a CRD of the
// payload registered is found by the next apply.
func (d dynamicApply) resource(gvk schema.GroupVersionKind, namespace string) (dynamic.ResourceInterface, error) {
	mapping, err := d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if resettable, ok := d.mapper.(meta.ResettableRESTMapper); ok && meta.IsNoMatchError(err) {
		resettable.Reset()
		mapping, err = d.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("kube: mapping %s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return d.client.Resource(mapping.Resource).Namespace(namespace), nil
	}
	return d.client.Resource(mapping.Resource), nil
}

func (d dynamicApply) Get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	ri, err := d.resource(gvk, namespace)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, name, metav1.GetOptions{})
}

func (d dynamicApply) Apply(ctx context.Context, obj *unstructured.Unstructured, fieldManager string, force bool) error {
	ri, err := d.resource(obj.GroupVersionKind(), obj.GetNamespace())
	if err != nil {
		return err
	}
	_, err = ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: force})
	return err
}

func (d dynamicApply) PatchJSON(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string, patch []byte) error {
	ri, err := d.resource(gvk, namespace)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
	return err
}

func (d dynamicApply) Delete(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	ri, err := d.resource(gvk, namespace)
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	return ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &background})
}
