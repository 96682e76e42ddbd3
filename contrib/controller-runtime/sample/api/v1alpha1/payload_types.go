package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/payload"
)

// PayloadSpec is the release whose manifests the operator applies.
type PayloadSpec struct {
	// Release names the release to apply.
	// +kubebuilder:validation:MinLength=1
	Release string `json:"release"`
	// Policy tunes the apply: parallelism, backoff, intervals.
	// +optional
	Policy payload.Policy `json:"policy,omitempty"`
}

// Payload is a release of many manifests that the payload engine applies as a
// task graph.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Payload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PayloadSpec `json:"spec"`
	// +optional
	Status payload.Status `json:"status,omitempty"`
}

// PayloadRelease is the release to apply (crconverge.PayloadObject).
func (p *Payload) PayloadRelease() payload.Release { return payload.Release{Version: p.Spec.Release} }

// PayloadPolicy is the Payload's policy (crconverge.PayloadObject).
func (p *Payload) PayloadPolicy() payload.Policy { return p.Spec.Policy }

// PayloadStatus is the Payload's status field (crconverge.PayloadObject).
func (p *Payload) PayloadStatus() *payload.Status { return &p.Status }

// PayloadList is a list of Payloads.
//
// +kubebuilder:object:root=true
type PayloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Payload `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Payload{}, &PayloadList{})
}
