package standin_test

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/testenv/standin"
)

// A test that reads a Deployment's readiness writes the status the
// deployment controller would.
func ExampleRolledOut() {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)}}
	dep.Status = standin.RolledOut(dep)
	fmt.Println(dep.Status.ObservedGeneration, dep.Status.AvailableReplicas, dep.Status.Conditions[0].Type, dep.Status.Conditions[0].Status)
	// Output: 2 3 Available True
}
