package kube

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/payload"
)

// ApplierConfig says how Applier reaches the cluster.
type ApplierConfig struct {
	// Client applies, reads and deletes objects. Required.
	Client dynamic.Interface
	// Mapper maps a manifest's kind to its resource and scope (e.g.
	// restmapper.NewDeferredDiscoveryRESTMapper). Required.
	Mapper meta.RESTMapper
	// FieldManager names the applier in the objects' managedFields. Required.
	FieldManager string
	// Force takes over fields another manager owns (an operator that owns
	// its payload forces; the default, false, reports the conflict).
	Force bool
}

// Applier applies a payload's manifests with server-side apply on the
// dynamic client, deletes the objects of manifests marked for deletion, and
// checks readiness: it implements payload.Applier, payload.Deleter and
// payload.Readiness.
//
// Applying an unchanged manifest writes nothing (the API server keeps the
// object and its resource version as they are). A Job's pod template is
// immutable, so a Job is applied only when it does not exist yet. Readiness:
// a Job has completed (a failed Job stops the wait with an
// *payload.UpdateError); a Deployment, DaemonSet or StatefulSet has rolled
// out its current generation (every replica updated and available); a
// CustomResourceDefinition is Established; any other object is ready once
// applied.
//
// RBAC: on every resource of the payload, get, create and patch (server-side
// apply needs create as well as patch), and delete for manifests marked for
// deletion.
type Applier struct {
	cfg ApplierConfig
}

var (
	_ payload.Applier   = (*Applier)(nil)
	_ payload.Deleter   = (*Applier)(nil)
	_ payload.Readiness = (*Applier)(nil)
)

// NewApplier checks cfg and returns the applier.
func NewApplier(cfg ApplierConfig) (*Applier, error) {
	switch {
	case isNil(cfg.Client) || isNil(cfg.Mapper):
		return nil, fmt.Errorf("kube: NewApplier: nil Client or Mapper: %w", ErrInvalid)
	case cfg.FieldManager == "":
		return nil, fmt.Errorf("kube: NewApplier: empty FieldManager: %w", ErrInvalid)
	}
	return &Applier{cfg: cfg}, nil
}

// Apply applies m with server-side apply.
func (a *Applier) Apply(ctx context.Context, m *payload.Manifest, _ payload.State) error {
	client, err := a.resource(m)
	if err != nil {
		return err
	}
	if m.GVK.Group == "batch" && m.GVK.Kind == "Job" {
		_, err := client.Get(ctx, m.Name(), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	_, err = client.Apply(ctx, m.Name(), m.Object, metav1.ApplyOptions{FieldManager: a.cfg.FieldManager, Force: a.cfg.Force})
	return err
}

// Delete deletes the object of m in the background; an object already gone
// is success.
func (a *Applier) Delete(ctx context.Context, m *payload.Manifest) error {
	client, err := a.resource(m)
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	err = client.Delete(ctx, m.Name(), metav1.DeleteOptions{PropagationPolicy: &background})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Ready reports nil once the object of m is ready, and otherwise an error
// saying what it waits for.
func (a *Applier) Ready(ctx context.Context, m *payload.Manifest) error {
	check, ok := readinessChecks[m.GVK.GroupKind()]
	if !ok {
		return nil
	}
	client, err := a.resource(m)
	if err != nil {
		return err
	}
	obj, err := client.Get(ctx, m.Name(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	return check(obj)
}

// resource returns the client of m's resource, namespaced when the resource is.
func (a *Applier) resource(m *payload.Manifest) (dynamic.ResourceInterface, error) {
	mapping, err := a.cfg.Mapper.RESTMapping(m.GVK.GroupKind(), m.GVK.Version)
	if err != nil {
		return nil, fmt.Errorf("kube: manifest %s: %w", m.Ref(), err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.cfg.Client.Resource(mapping.Resource).Namespace(m.Namespace()), nil
	}
	return a.cfg.Client.Resource(mapping.Resource), nil
}

// ErrNotReady is wrapped by Ready's error while an object is not ready yet.
var ErrNotReady = errors.New("kube: not ready")

var readinessChecks = map[schema.GroupKind]func(*unstructured.Unstructured) error{
	{Group: "batch", Kind: "Job"}:                                     jobReady,
	{Group: "apps", Kind: "Deployment"}:                               deploymentReady,
	{Group: "apps", Kind: "DaemonSet"}:                                daemonSetReady,
	{Group: "apps", Kind: "StatefulSet"}:                              statefulSetReady,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}: crdReady,
}

func notReady(obj *unstructured.Unstructured, format string, args ...any) error {
	return fmt.Errorf("%s %s: %s: %w", obj.GetKind(), objectName(obj), fmt.Sprintf(format, args...), ErrNotReady)
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// condition returns the status and message of the condition of condType.
func condition(obj *unstructured.Unstructured, condType string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condType {
			status, _ = m["status"].(string)
			message, _ = m["message"].(string)
			return status, message
		}
	}
	return "", ""
}

func jobReady(obj *unstructured.Unstructured) error {
	if s, msg := condition(obj, "Failed"); s == "True" {
		return &payload.UpdateError{
			Reason: "JobFailed", Effect: payload.EffectFail, Name: objectName(obj),
			Message: fmt.Sprintf("Job %s failed: %s", objectName(obj), msg),
		}
	}
	if s, _ := condition(obj, "Complete"); s == "True" {
		return nil
	}
	return notReady(obj, "has not completed")
}

func int64At(obj *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, fields...)
	return v
}

// generationObserved is nil once the controller has seen the object's
// current generation.
func generationObserved(obj *unstructured.Unstructured) error {
	if observed := int64At(obj, "status", "observedGeneration"); observed < obj.GetGeneration() {
		return notReady(obj, "generation %d not observed yet (at %d)", obj.GetGeneration(), observed)
	}
	return nil
}

func deploymentReady(obj *unstructured.Unstructured) error {
	if err := generationObserved(obj); err != nil {
		return err
	}
	want, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	updated, available := int64At(obj, "status", "updatedReplicas"), int64At(obj, "status", "availableReplicas")
	if total := int64At(obj, "status", "replicas"); updated < want || total > updated || available < want {
		return notReady(obj, "%d of %d replicas updated, %d available, %d in total", updated, want, available, total)
	}
	return nil
}

func daemonSetReady(obj *unstructured.Unstructured) error {
	if err := generationObserved(obj); err != nil {
		return err
	}
	want := int64At(obj, "status", "desiredNumberScheduled")
	updated, available := int64At(obj, "status", "updatedNumberScheduled"), int64At(obj, "status", "numberAvailable")
	if updated < want || available < want {
		return notReady(obj, "%d of %d pods updated, %d available", updated, want, available)
	}
	return nil
}

func statefulSetReady(obj *unstructured.Unstructured) error {
	if err := generationObserved(obj); err != nil {
		return err
	}
	want, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	updated, ready := int64At(obj, "status", "updatedReplicas"), int64At(obj, "status", "readyReplicas")
	if updated < want || ready < want {
		return notReady(obj, "%d of %d replicas updated, %d ready", updated, want, ready)
	}
	current, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
	update, _, _ := unstructured.NestedString(obj.Object, "status", "updateRevision")
	if update != "" && current != update {
		return notReady(obj, "revision %s not rolled out yet (at %s)", update, current)
	}
	return nil
}

func crdReady(obj *unstructured.Unstructured) error {
	if s, _ := condition(obj, "Established"); s != "True" {
		return notReady(obj, "not established")
	}
	return nil
}
