package crconverge_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
)

// What a Reconciler returns for what an engine returned.
func ExampleResult() {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "example.com", Resource: "widgets"}, "w", errors.New("stale"))
	for _, c := range []struct {
		requeueAfter time.Duration
		err          error
	}{
		{30 * time.Second, nil},
		{0, nil},
		{time.Minute, conflict},
		{time.Minute, errors.New("install failed")},
	} {
		res, err := crconverge.Result(c.requeueAfter, c.err)
		fmt.Printf("requeueAfter=%v err=%v\n", res.RequeueAfter, err)
	}
	// Output:
	// requeueAfter=30s err=<nil>
	// requeueAfter=0s err=<nil>
	// requeueAfter=1s err=<nil>
	// requeueAfter=0s err=install failed
}

// An engine's status kept in a ConfigMap through a controller-runtime client
// (here the fake one).
func ExampleNewConfigMapStatusStore() {
	type status struct {
		Revision int64 `json:"revision"`
	}
	c := fake.NewClientBuilder().Build()
	store, err := crconverge.NewConfigMapStatusStore[status](c, client.ObjectKey{Namespace: "ops", Name: "rollout-status"}, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	st, rv, _ := store.GetStatus(ctx)
	fmt.Printf("read %+v at %q\n", st, rv)
	rv, err = store.UpdateStatus(ctx, status{Revision: 2}, rv)
	fmt.Println("created:", err == nil)
	_, err = store.UpdateStatus(ctx, status{Revision: 3}, "stale")
	fmt.Println("stale write is a conflict:", crconverge.IsConflict(err))

	cm := &corev1.ConfigMap{}
	_ = c.Get(ctx, client.ObjectKey{Namespace: "ops", Name: "rollout-status"}, cm)
	fmt.Println(cm.Data["status.json"])
	// Output:
	// read {Revision:0} at ""
	// created: true
	// stale write is a conflict: true
	// {"revision":2}
}

// A long-lived worker runs while the manager leads, and stops cleanly with
// the manager: mgr.Add(crconverge.LeaderElected(worker.Start)).
func ExampleLeaderElected() {
	worker := crconverge.LeaderElected(func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(worker.NeedLeaderElection(), worker.Start(ctx))
	// Output:
	// true <nil>
}
