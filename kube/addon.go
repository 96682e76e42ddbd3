package kube

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/internal/input"
)

// The annotations DefaultAddonSpec reads a reset or a forced re-apply from,
// as Flux's reconcile.fluxcd.io/resetAt and forceAt: any new value is one
// request.
const (
	AnnotationResetAt = "converge.dev/reset-at"
	AnnotationForceAt = "converge.dev/force-at"
)

// DefaultAddonSpec reads an add-on's Spec from a custom resource: Name is
// "namespace/name" (or the name of a cluster-scoped object), Generation is
// metadata.generation, Version is spec.version, Deleting is a deletion
// timestamp, and the reset and force tokens are the
// AnnotationResetAt and AnnotationForceAt annotations.
func DefaultAddonSpec(obj *unstructured.Unstructured) addon.Spec {
	version, _, _ := unstructured.NestedString(obj.Object, "spec", "version")
	name := obj.GetName()
	if obj.GetNamespace() != "" {
		name = obj.GetNamespace() + "/" + name
	}
	return addon.Spec{
		Name: name, Generation: obj.GetGeneration(), Version: version,
		Deleting:   obj.GetDeletionTimestamp() != nil,
		ResetToken: obj.GetAnnotations()[AnnotationResetAt],
		ForceToken: obj.GetAnnotations()[AnnotationForceAt],
	}
}

// AddonObjectsConfig says which custom resources AddonObjects serves.
type AddonObjectsConfig struct {
	// Client reads the objects and writes their status. Required by
	// NewAddonObjects; left nil for NewAddonObjectsFor.
	Client dynamic.Interface
	// Resource is the add-on custom resource. Required by NewAddonObjects;
	// left empty for NewAddonObjectsFor.
	Resource schema.GroupVersionResource
	// Spec reads an add-on's Spec from its object; nil means DefaultAddonSpec.
	Spec func(obj *unstructured.Unstructured) addon.Spec
	// StatusPath is where the add-on's Status lives, under status; nil
	// means the whole status.
	StatusPath []string
	// Finalizer is the finalizer WithFinalizer keeps on an add-on until the
	// engine has uninstalled it (a qualified name such as
	// "example.com/uninstall"); required by WithFinalizer only.
	Finalizer string
}

// AddonClient reads add-on objects and writes them and their status
// subresource: the dynamic client through NewAddonObjects, or any other
// client (the controller-runtime module adapts its client.Client) through
// NewAddonObjectsFor.
type AddonClient interface {
	// Get reads the object name in namespace (empty for a cluster-scoped
	// resource) from the API server.
	Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	// Update writes obj (its finalizers, for WithFinalizer) with the
	// optimistic concurrency of obj's resource version, and returns the
	// object as written.
	Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	// UpdateStatus writes obj through the status subresource, with the
	// optimistic concurrency of obj's resource version, and returns the
	// object as written.
	UpdateStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// AddonObjects is addon.Store on a custom resource with a status
// subresource, read and written through an AddonClient: Get reads the
// object named "namespace/name" afresh; UpdateStatus writes the status at
// StatusPath through the status subresource over the resource version the
// engine read, so a write over a stale copy is the API server's own 409.
// The object travels as addon.Object.Host (an *unstructured.Unstructured)
// for the driver's owner references. WithFinalizer runs a Machine's
// Reconcile behind the Finalizer of its config.
//
// RBAC (shipped as kube/rbac/addon.yaml): get on the resource (list and
// watch for the host's informer), update on its status subresource, update
// on the resource to keep a finalizer until Result.Deleted, and update on
// its finalizers subresource for driver objects owned by the add-on with
// blockOwnerDeletion (the OwnerReferencesPermissionEnforcement admission
// plugin checks it).
type AddonObjects struct {
	cfg    AddonObjectsConfig
	client AddonClient
}

var (
	_ addon.Store = (*AddonObjects)(nil)
	_ AddonClient = dynamicAddons{}
)

// NewAddonObjects checks cfg and returns the store on the dynamic client.
func NewAddonObjects(cfg AddonObjectsConfig) (*AddonObjects, error) {
	if input.IsNil(cfg.Client) || cfg.Resource.Resource == "" {
		return nil, input.Invalidf("kube", "NewAddonObjects arguments", "nil Client or empty Resource")
	}
	client := dynamicAddons{ri: cfg.Client.Resource(cfg.Resource)}
	cfg.Client, cfg.Resource = nil, schema.GroupVersionResource{}
	return NewAddonObjectsFor(client, cfg)
}

// NewAddonObjectsFor checks cfg and returns the store on client; cfg's
// Client and Resource, which belong to NewAddonObjects, must be unset.
func NewAddonObjectsFor(client AddonClient, cfg AddonObjectsConfig) (*AddonObjects, error) {
	switch {
	case input.IsNil(client):
		return nil, input.Invalidf("kube", "NewAddonObjectsFor arguments", "nil add-on client")
	case cfg.Client != nil || !cfg.Resource.Empty():
		return nil, input.Invalidf("kube", "NewAddonObjectsFor arguments", "Client and Resource are NewAddonObjects' and must be unset")
	}
	if cfg.Spec == nil {
		cfg.Spec = DefaultAddonSpec
	}
	if len(cfg.StatusPath) == 0 {
		cfg.StatusPath = []string{"status"}
	}
	if cfg.StatusPath[0] != "status" {
		return nil, input.Invalidf("kube", "AddonObjectsConfig", "status path %v is not under status", cfg.StatusPath)
	}
	if cfg.Finalizer != "" {
		if problems := validation.IsQualifiedName(cfg.Finalizer); len(problems) > 0 {
			return nil, input.Invalidf("kube", "AddonObjectsConfig", "Finalizer %q: %s", cfg.Finalizer, strings.Join(problems, "; "))
		}
	}
	return &AddonObjects{cfg: cfg, client: client}, nil
}

// check returns an error matching converge.ErrInvalid for an AddonObjects not made by NewAddonObjects
// or NewAddonObjectsFor.
func (s *AddonObjects) check(method string) error {
	if s == nil || s.client == nil {
		return input.Invalidf("kube", "AddonObjects."+method+" call", "store not made by NewAddonObjects or NewAddonObjectsFor")
	}
	return nil
}

// dynamicAddons is the AddonClient of one resource on the dynamic client.
type dynamicAddons struct {
	ri dynamic.NamespaceableResourceInterface
}

func (d dynamicAddons) resource(namespace string) dynamic.ResourceInterface {
	if namespace == "" {
		return d.ri
	}
	return d.ri.Namespace(namespace)
}

func (d dynamicAddons) Get(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	return d.resource(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (d dynamicAddons) Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return d.resource(obj.GetNamespace()).Update(ctx, obj, metav1.UpdateOptions{})
}

func (d dynamicAddons) UpdateStatus(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return d.resource(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
}

// Object is the engine's view of an add-on object (from an informer's
// cache, or read afresh): its Spec, its Status at StatusPath, its resource
// version, and the object itself as Host.
func (s *AddonObjects) Object(obj *unstructured.Unstructured) (addon.Object, error) {
	if err := s.check("Object"); err != nil {
		return addon.Object{}, err
	}
	if obj == nil {
		return addon.Object{}, input.Invalidf("kube", "AddonObjects.Object call", "nil object")
	}
	var st addon.Status
	raw, found, err := unstructured.NestedFieldNoCopy(obj.Object, s.cfg.StatusPath...)
	if err != nil {
		return addon.Object{}, fmt.Errorf("kube: add-on %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	if found && raw != nil {
		if err := convert(raw, &st); err != nil {
			return addon.Object{}, fmt.Errorf("kube: decoding the status of add-on %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return addon.Object{Spec: s.cfg.Spec(obj), Status: st, ResourceVersion: obj.GetResourceVersion(), Host: obj}, nil
}

// Get reads the add-on named "namespace/name" ("name" when cluster-scoped).
func (s *AddonObjects) Get(ctx context.Context, name string) (addon.Object, error) {
	if err := s.check("Get"); err != nil {
		return addon.Object{}, err
	}
	ns, n, ok := strings.Cut(name, "/")
	if !ok {
		ns, n = "", name
	}
	obj, err := s.client.Get(ctx, ns, n)
	if err != nil {
		return addon.Object{}, err
	}
	return s.Object(obj)
}

// UpdateStatus writes st as the status of obj's object at obj.ResourceVersion
// and returns the add-on as written.
func (s *AddonObjects) UpdateStatus(ctx context.Context, obj addon.Object, st addon.Status) (addon.Object, error) {
	if err := s.check("UpdateStatus"); err != nil {
		return addon.Object{}, err
	}
	host, ok := obj.Host.(*unstructured.Unstructured)
	if !ok || host == nil {
		return addon.Object{}, input.Invalidf("kube", "add-on "+obj.Spec.Name, "no object to write (Host is %T)", obj.Host)
	}
	var val any
	if err := convert(st, &val); err != nil {
		return addon.Object{}, fmt.Errorf("kube: encoding the status of add-on %s: %w", obj.Spec.Name, err)
	}
	u := host.DeepCopy()
	if err := unstructured.SetNestedField(u.Object, val, s.cfg.StatusPath...); err != nil {
		return addon.Object{}, fmt.Errorf("kube: setting the status of add-on %s: %w", obj.Spec.Name, err)
	}
	u.SetResourceVersion(obj.ResourceVersion)
	out, err := s.client.UpdateStatus(ctx, u)
	if err != nil {
		return addon.Object{}, err
	}
	return s.Object(out)
}
