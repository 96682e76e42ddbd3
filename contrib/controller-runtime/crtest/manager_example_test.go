package crtest_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	cvfake "github.com/converge-dev/converge/fake"
)

// A configured controller built on the fake client, whose Reconcile the
// test calls: the add-on controller's first reconcile installs the add-on
// and records the engine's events with the manager's recorder.
func ExampleNewManager() {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = testapi.AddToScheme(scheme)
	mesh := &testapi.Addon{ObjectMeta: metav1.ObjectMeta{Namespace: "tke", Name: "mesh", Generation: 1}, Spec: testapi.AddonSpec{Version: "1.2.0"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(mesh).WithObjects(mesh).Build()
	recorder := events.NewFakeRecorder(10)
	mgr, err := crtest.NewManager(c, recorder)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctrl, err := crconverge.NewAddonController(mgr, crconverge.AddonOptions{For: &testapi.Addon{}, Engine: addon.Config{Driver: &cvfake.AddonDriver{}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mesh)})
	fmt.Println("reconcile:", err)
	_ = c.Get(context.Background(), client.ObjectKeyFromObject(mesh), mesh)
	fmt.Println("phase:", mesh.Status.Phase)
	fmt.Println("event:", <-recorder.Events)
	// Output:
	// reconcile: <nil>
	// phase: Checking
	// event: Normal Created -> Initializing: installing 1.2.0
}
