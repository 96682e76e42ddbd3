// Package testapi holds the custom resources crconverge's tests and examples
// reconcile: one per engine, each embedding the engine's Policy in its spec
// and the engine's Status as its status, and implementing crconverge's
// accessor interface for it. testdata/testapi.yaml holds their CRDs.
package testapi

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/rollout"
)

// GroupVersion is the group and version of the test resources.
var GroupVersion = schema.GroupVersion{Group: "test.converge.dev", Version: "v1"}

// AddToScheme registers the test resources with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Rollout{}, &RolloutList{}, &TenantRollout{}, &TenantRolloutList{},
		&Addon{}, &AddonList{}, &Payload{}, &PayloadList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Rollout is a node-by-node rollout of Spec.Revision.
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RolloutSpec    `json:"spec,omitempty"`
	Status            rollout.Status `json:"status,omitempty"`
}

// RolloutSpec is the revision to roll out and how; a TenantRollout's names
// its operand and nodes too.
type RolloutSpec struct {
	Revision     int32             `json:"revision,omitempty"`
	Policy       rollout.Policy    `json:"policy,omitempty"`
	Operand      string            `json:"operand,omitempty"`
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// RolloutPolicy implements crconverge.RolloutObject.
func (r *Rollout) RolloutPolicy() rollout.Policy { return r.Spec.Policy }

// RolloutRevision implements crconverge.RolloutObject.
func (r *Rollout) RolloutRevision() int32 { return r.Spec.Revision }

// RolloutStatus implements crconverge.RolloutObject.
func (r *Rollout) RolloutStatus() *rollout.Status { return &r.Status }

// DeepCopyObject implements runtime.Object.
func (r *Rollout) DeepCopyObject() runtime.Object {
	out := *r
	r.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	r.Spec.Policy.DeepCopyInto(&out.Spec.Policy)
	out.Spec.NodeSelector = maps.Clone(r.Spec.NodeSelector)
	r.Status.DeepCopyInto(&out.Status)
	return &out
}

// RolloutList is a list of Rollouts.
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *RolloutList) DeepCopyObject() runtime.Object {
	out := &RolloutList{TypeMeta: l.TypeMeta, Items: copyItems(l.Items)}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	return out
}

// TenantRollout is a namespaced Rollout that names its own operand: its
// installers and operand pods live in its namespace, their operand is
// Spec.Operand, their nodes those Spec.NodeSelector selects.
type TenantRollout struct {
	Rollout `json:",inline"`
}

// RolloutPods implements crconverge.RolloutPodsConfigurer.
func (r *TenantRollout) RolloutPods(base kube.RolloutPodsConfig) kube.RolloutPodsConfig {
	base.Namespace, base.Operand, base.OperandPodName = r.Namespace, r.Spec.Operand, nil
	if len(r.Spec.NodeSelector) > 0 {
		base.NodeSelector = labels.SelectorFromSet(r.Spec.NodeSelector)
	}
	return base
}

// DeepCopyObject implements runtime.Object.
func (r *TenantRollout) DeepCopyObject() runtime.Object {
	return &TenantRollout{Rollout: *r.Rollout.DeepCopyObject().(*Rollout)}
}

// TenantRolloutList is a list of TenantRollouts.
type TenantRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantRollout `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *TenantRolloutList) DeepCopyObject() runtime.Object {
	out := &TenantRolloutList{TypeMeta: l.TypeMeta, Items: copyItems(l.Items)}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	return out
}

// Addon is an add-on kept at Spec.Version.
type Addon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AddonSpec    `json:"spec,omitempty"`
	Status            addon.Status `json:"status,omitempty"`
}

// AddonSpec is the add-on's version and how to keep it.
type AddonSpec struct {
	Version string       `json:"version,omitempty"`
	Policy  addon.Policy `json:"policy,omitempty"`
}

// AddonPolicy implements crconverge.AddonObject.
func (a *Addon) AddonPolicy() addon.Policy { return a.Spec.Policy }

// AddonVersion implements crconverge.AddonObject.
func (a *Addon) AddonVersion() string { return a.Spec.Version }

// AddonStatus implements crconverge.AddonObject.
func (a *Addon) AddonStatus() *addon.Status { return &a.Status }

// DeepCopyObject implements runtime.Object.
func (a *Addon) DeepCopyObject() runtime.Object {
	out := *a
	a.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	a.Spec.Policy.DeepCopyInto(&out.Spec.Policy)
	a.Status.DeepCopyInto(&out.Status)
	return &out
}

// AddonList is a list of Addons.
type AddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Addon `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *AddonList) DeepCopyObject() runtime.Object {
	out := &AddonList{TypeMeta: l.TypeMeta, Items: copyItems(l.Items)}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	return out
}

// Payload is a release whose manifests are kept applied.
type Payload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PayloadSpec    `json:"spec,omitempty"`
	Status            payload.Status `json:"status,omitempty"`
}

// PayloadSpec is the release to apply and how.
type PayloadSpec struct {
	Release string         `json:"release,omitempty"`
	Policy  payload.Policy `json:"policy,omitempty"`
}

// PayloadRelease implements crconverge.PayloadObject.
func (p *Payload) PayloadRelease() payload.Release { return payload.Release{Version: p.Spec.Release} }

// PayloadPolicy implements crconverge.PayloadObject.
func (p *Payload) PayloadPolicy() payload.Policy { return p.Spec.Policy }

// PayloadStatus implements crconverge.PayloadObject.
func (p *Payload) PayloadStatus() *payload.Status { return &p.Status }

// DeepCopyObject implements runtime.Object.
func (p *Payload) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.Spec.Policy.DeepCopyInto(&out.Spec.Policy)
	p.Status.DeepCopyInto(&out.Status)
	return &out
}

// PayloadList is a list of Payloads.
type PayloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Payload `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *PayloadList) DeepCopyObject() runtime.Object {
	out := &PayloadList{TypeMeta: l.TypeMeta, Items: copyItems(l.Items)}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	return out
}

// copyItems deep-copies a list's items.
func copyItems[T any, P interface {
	*T
	runtime.Object
}](items []T) []T {
	if items == nil {
		return nil
	}
	out := make([]T, len(items))
	for i := range items {
		out[i] = *P(&items[i]).DeepCopyObject().(P)
	}
	return out
}
