package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/rollout"
)

// RolloutSpec is the revision the operator rolls out, node by node.
type RolloutSpec struct {
	// Revision is the revision every node should reach; it only goes up.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Revision int32 `json:"revision,omitempty"`
	// Policy tunes the rollout: how many nodes at once, backoff, pause.
	// +optional
	Policy rollout.Policy `json:"policy,omitempty"`
}

// Rollout is a node-by-node revision rollout that the rollout engine drives.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
type Rollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RolloutSpec `json:"spec,omitempty"`
	// +optional
	Status rollout.Status `json:"status,omitempty"`
}

// RolloutPolicy is the Rollout's policy (crconverge.RolloutObject).
func (r *Rollout) RolloutPolicy() rollout.Policy { return r.Spec.Policy }

// RolloutRevision is the revision to roll out (crconverge.RolloutObject).
func (r *Rollout) RolloutRevision() int32 { return r.Spec.Revision }

// RolloutStatus is the Rollout's status field (crconverge.RolloutObject).
func (r *Rollout) RolloutStatus() *rollout.Status { return &r.Status }

// RolloutList is a list of Rollouts.
//
// +kubebuilder:object:root=true
type RolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Rollout `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Rollout{}, &RolloutList{})
}
