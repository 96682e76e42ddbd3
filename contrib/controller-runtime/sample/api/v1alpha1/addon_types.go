package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

// AddonSpec is the add-on the operator keeps installed.
type AddonSpec struct {
	// Version is the add-on version to run.
	// +kubebuilder:validation:MinLength=1
	Version string `json:"version"`
	// Policy tunes retries, remediation and deadlines, pauses the add-on
	// (policy.paused) and gives its maintenance windows (policy.windows).
	// +optional
	Policy addon.Policy `json:"policy,omitempty"`
}

// Addon is an add-on whose lifecycle the add-on engine drives: installed,
// checked, upgraded, retried, rolled back and uninstalled.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
type Addon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AddonSpec `json:"spec"`
	// +optional
	Status addon.Status `json:"status,omitempty"`
}

// AddonPolicy is the Addon's policy (crconverge.AddonObject).
func (a *Addon) AddonPolicy() addon.Policy { return a.Spec.Policy }

// AddonVersion is the version to keep installed (crconverge.AddonObject).
func (a *Addon) AddonVersion() string { return a.Spec.Version }

// AddonStatus is the Addon's status field (crconverge.AddonObject).
func (a *Addon) AddonStatus() *addon.Status { return &a.Status }

// AddonList is a list of Addons.
//
// +kubebuilder:object:root=true
type AddonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Addon `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Addon{}, &AddonList{})
}
