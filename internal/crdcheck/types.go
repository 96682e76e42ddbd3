package crdcheck

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/rollout"
)

// Rollout is a host's resource driven by the rollout engine.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RolloutSpec    `json:"spec,omitempty"`
	Status rollout.Status `json:"status,omitempty"`
}

// RolloutSpec holds the rollout's policy beside the host's own fields.
type RolloutSpec struct {
	// Policy tunes the rollout.
	// +optional
	Policy rollout.Policy `json:"policy,omitempty"`
}

// Addon is a host's resource driven by the add-on engine.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Addon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddonSpec    `json:"spec,omitempty"`
	Status addon.Status `json:"status,omitempty"`
}

// AddonSpec holds the add-on's policy beside the host's own fields.
type AddonSpec struct {
	// Version is the add-on version to run.
	Version string `json:"version"`
	// Policy tunes retries, remediation and deadlines.
	// +optional
	Policy addon.Policy `json:"policy,omitempty"`
}

// Payload is a host's resource driven by the payload engine.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type Payload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PayloadSpec    `json:"spec,omitempty"`
	Status payload.Status `json:"status,omitempty"`
}

// PayloadSpec names the payload to apply.
type PayloadSpec struct {
	// Release is the payload to apply.
	Release payload.Release `json:"release"`
	// Policy paces the worker.
	Policy payload.Policy `json:"policy,omitempty"`
}
