package crtest_test

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
)

// On the fake client wrapped with WithGenerations, a change of the spec
// moves the generation, and a change of labels does not.
func ExampleWithGenerations() {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	c := crtest.WithGenerations(fake.NewClientBuilder().WithScheme(scheme).Build(), &appsv1.Deployment{})

	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	_ = c.Create(ctx, web)
	fmt.Println("created:", web.Generation)
	web.Spec.Replicas = ptr.To[int32](3)
	_ = c.Update(ctx, web)
	fmt.Println("spec changed:", web.Generation)
	web.Labels = map[string]string{"tier": "web"}
	_ = c.Update(ctx, web)
	fmt.Println("labels changed:", web.Generation)
	// Output:
	// created: 1
	// spec changed: 2
	// labels changed: 2
}
