package v1alpha1_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/rollout"
)

// A Rollout embeds the rollout engine's Policy in its spec and the engine's
// Status as its status; it is registered with the scheme as
// sample.converge.dev/v1alpha1 Rollout, and DeepCopy shares nothing with
// the original.
func ExampleRollout() {
	ro := &v1alpha1.Rollout{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd"},
		Spec:       v1alpha1.RolloutSpec{Revision: 3, Policy: rollout.Policy{MaxUnavailable: 1}},
	}
	scheme := runtime.NewScheme()
	_ = v1alpha1.AddToScheme(scheme)
	gvks, _, _ := scheme.ObjectKinds(ro)
	fmt.Println(gvks[0])

	cp := ro.DeepCopy()
	cp.Status.NodeStatuses = append(cp.Status.NodeStatuses, rollout.NodeStatus{NodeName: "master-0"})
	fmt.Println("original nodes:", len(ro.Status.NodeStatuses), "copy nodes:", len(cp.Status.NodeStatuses), "copy max unavailable:", cp.Spec.Policy.MaxUnavailable)
	// Output:
	// sample.converge.dev/v1alpha1, Kind=Rollout
	// original nodes: 0 copy nodes: 1 copy max unavailable: 1
}
