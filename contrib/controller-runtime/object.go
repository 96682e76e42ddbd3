package crconverge

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/rollout"
)

// RolloutObject is a custom resource that NewRolloutController rolls out:
// the accessors of its spec's policy and revision and of its status field.
// A kubebuilder type implements it in three one-line methods:
//
//	func (r *Rollout) RolloutPolicy() rollout.Policy  { return r.Spec.Policy }
//	func (r *Rollout) RolloutRevision() int32         { return r.Spec.Revision }
//	func (r *Rollout) RolloutStatus() *rollout.Status { return &r.Status }
//
// The kind needs a status subresource.
type RolloutObject interface {
	client.Object
	// RolloutPolicy is the rollout's policy (its spec's).
	RolloutPolicy() rollout.Policy
	// RolloutRevision is the latest revision available: the one every node
	// is to reach. The status' LatestAvailableRevision follows it up, never
	// down.
	RolloutRevision() int32
	// RolloutStatus is the object's status field, which the controller
	// reads and writes.
	RolloutStatus() *rollout.Status
}

// RolloutPodsConfigurer is implemented by a RolloutObject that says where
// its own installers run and what its operand is, as an operator's
// resource whose spec names its operand, installer image, node selector,
// namespace or owner; without it, every object of the kind has
// RolloutOptions.Pods. Installer pods are named after the revision and the
// node alone ("installer-<revision>-<node>", a retry's with its count), so
// two rollouts whose pods share a namespace and nodes would share
// installers: give each its own namespace or nodes.
type RolloutPodsConfigurer interface {
	// RolloutPods returns the object's pods configuration, given the
	// controller's (a copy of RolloutOptions.Pods, its own to change):
	// typically base with the fields the object's spec sets replaced. Its
	// Client, Pods and Nodes stay nil; an Owner left nil is the object
	// itself where it can own the pods (see NewRolloutController).
	RolloutPods(base kube.RolloutPodsConfig) kube.RolloutPodsConfig
}

// AddonObject is a custom resource that NewAddonController keeps installed:
// the accessors of its spec's policy and version and of its status field.
//
//	func (a *Addon) AddonPolicy() addon.Policy  { return a.Spec.Policy }
//	func (a *Addon) AddonVersion() string       { return a.Spec.Version }
//	func (a *Addon) AddonStatus() *addon.Status { return &a.Status }
//
// The rest of the engine's addon.Spec comes from the object's metadata: its
// name ("namespace/name", or "name" when cluster-scoped), generation and
// deletion timestamp, and a reset or forced re-apply requested with the
// annotations kube.AnnotationResetAt and kube.AnnotationForceAt. Its
// policy pauses it (addon.Policy.Paused) and gives its maintenance windows
// (addon.Policy.Windows). The kind needs a status subresource.
type AddonObject interface {
	client.Object
	// AddonPolicy is the add-on's policy (its spec's).
	AddonPolicy() addon.Policy
	// AddonVersion is the version to keep installed.
	AddonVersion() string
	// AddonStatus is the object's status field, which the controller reads
	// and writes.
	AddonStatus() *addon.Status
}

// PayloadObject is the custom resource whose release NewPayloadController
// keeps applied: the accessors of its spec's release and policy and of its
// status field.
//
//	func (p *Payload) PayloadRelease() payload.Release { return payload.Release{Version: p.Spec.Release} }
//	func (p *Payload) PayloadPolicy() payload.Policy   { return p.Spec.Policy }
//	func (p *Payload) PayloadStatus() *payload.Status  { return &p.Status }
//
// The kind needs a status subresource.
type PayloadObject interface {
	client.Object
	// PayloadRelease is the release to apply; a zero release is none yet.
	PayloadRelease() payload.Release
	// PayloadPolicy is the worker's policy (its spec's).
	PayloadPolicy() payload.Policy
	// PayloadStatus is the object's status field, which the worker writes.
	PayloadStatus() *payload.Status
}

// kind is the kind of a controller's resource, as the manager's scheme
// knows it: it makes the empty objects (and lists) reads go into.
type kind[O client.Object] struct {
	scheme *runtime.Scheme
	gvk    schema.GroupVersionKind
}

// kindOf resolves the kind of prototype in scheme. It needs the kind and its
// list kind ("<Kind>List") registered, with Go types that are O's.
func kindOf[O client.Object](scheme *runtime.Scheme, prototype O) (kind[O], error) {
	gvk, err := apiutil.GVKForObject(prototype, scheme)
	if err != nil {
		return kind[O]{}, fmt.Errorf("the manager's scheme does not know %T: %v", prototype, err)
	}
	k := kind[O]{scheme: scheme, gvk: gvk}
	obj, err := scheme.New(gvk)
	if err != nil {
		return kind[O]{}, fmt.Errorf("the manager's scheme makes no %s: %v", gvk.Kind, err)
	}
	if reflect.TypeOf(obj) != reflect.TypeOf(prototype) {
		return kind[O]{}, fmt.Errorf("the manager's scheme makes %T for %s, not %T", obj, gvk.Kind, prototype)
	}
	if _, err := k.newList(); err != nil {
		return kind[O]{}, err
	}
	return k, nil
}

// newObject returns an empty object of the kind.
func (k kind[O]) newObject() O {
	obj, _ := k.scheme.New(k.gvk) // kindOf checked it
	return obj.(O)
}

// newList returns an empty list of the kind.
func (k kind[O]) newList() (client.ObjectList, error) {
	gvk := k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List")
	obj, err := k.scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("the manager's scheme makes no %s: %v", gvk.Kind, err)
	}
	list, ok := obj.(client.ObjectList)
	if !ok {
		return nil, fmt.Errorf("the manager's scheme makes %T for %s, which is no list", obj, gvk.Kind)
	}
	return list, nil
}

// defaultName is the builder's default name of a controller of the kind:
// its kind in lower case.
// unstructured returns obj as an unstructured object of k's kind.
func (k kind[O]) unstructured(obj O) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("crconverge: converting %s %s: %w", k.gvk.Kind, client.ObjectKeyFromObject(obj), err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(k.gvk)
	return u, nil
}

// typed returns u as a new object of k's kind.
func (k kind[O]) typed(u *unstructured.Unstructured) (O, error) {
	obj := k.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		var zero O
		return zero, fmt.Errorf("crconverge: converting %s %s: %w", k.gvk.Kind, client.ObjectKeyFromObject(u), err)
	}
	return obj, nil
}

// resource names k's resource as the apiserver would guess it from the
// kind ("addons.sample.converge.dev").
func (k kind[O]) resource() string {
	plural, _ := meta.UnsafeGuessKindToResource(k.gvk)
	return plural.GroupResource().String()
}

func (k kind[O]) defaultName() string { return strings.ToLower(k.gvk.Kind) }
