package crtest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/testenv"
)

// startOperator starts an instance of the operator under test as
// identity; the function returned stops it and returns what its manager
// returned.
func startOperator(proxy *testenv.FaultProxy, identity string) (stop func() error, err error) {
	mgr, err := crtest.NewProxyManager(proxy, identity, manager.Options{})
	if err != nil {
		return nil, err
	}
	err = builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(reconcile.Func(
		func(context.Context, reconcile.Request) (reconcile.Result, error) { return reconcile.Result{}, nil }))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error { cancel(); return <-done }, nil
}

// An instance of the operator runs on a fault proxy identity and is cut
// off after its third write; a fresh instance then starts from what the
// cluster holds. Not run by go test: it needs an API server.
func ExampleNewProxyManager() {
	env := &envtest.Environment{}
	cfg, err := crtest.Start(context.Background(), env)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Stop()
	proxy, err := testenv.NewFaultProxy(cfg, testenv.FaultPlan{Seed: 7, Faults: []testenv.Fault{
		{Class: testenv.Conflict, Percent: 20},
		{Class: testenv.WatchClose, Percent: 10},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer proxy.Close()

	proxy.CrashAfter("instance-1", 3)
	stop, err := startOperator(proxy, "instance-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	<-proxy.Crashed("instance-1")
	fmt.Println("instance-1:", stop())
	stop, err = startOperator(proxy, "instance-2")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	// ... check the world on proxy.Snapshot until instance-2 is done.
}
