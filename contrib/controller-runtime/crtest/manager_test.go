package crtest

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
)

func TestNewManagerServesTheFakeClient(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	rec := events.NewFakeRecorder(1)
	mgr, err := NewManager(c, rec)
	require.NoError(t, err)
	assert.Same(t, c, mgr.GetClient())
	assert.Same(t, c, mgr.GetAPIReader(), "reads afresh from the fake client too")
	assert.Same(t, rec, mgr.GetEventRecorder("any"))
	assert.Same(t, c.Scheme(), mgr.GetScheme())
	assert.Equal(t, c.RESTMapper(), mgr.GetRESTMapper())

	_, err = NewManager(nil, nil)
	assert.ErrorIs(t, err, converge.ErrInvalid)
}

// Controllers build on it, under names that repeat, and never start;
// Start runs the other runnables until its context ends.
func TestNewManagerStartsRunnablesButNoController(t *testing.T) {
	mgr, err := NewManager(fake.NewClientBuilder().Build(), nil)
	require.NoError(t, err)
	reconciled := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, errors.New("a started controller would reconcile")
	})
	for range 2 {
		require.NoError(t, builder.ControllerManagedBy(mgr).Named("same").For(&corev1.ConfigMap{}).Complete(reconciled))
	}
	ran := make(chan struct{})
	require.NoError(t, mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		close(ran)
		<-ctx.Done()
		return nil
	})))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	<-ran
	assert.Error(t, mgr.Add(manager.RunnableFunc(func(context.Context) error { return nil })), "too late")
	cancel()
	require.NoError(t, <-done, "no controller started: none failed to reach an API server")
	assert.Error(t, mgr.Start(context.Background()), "it starts once")
}

func TestNewManagerStopsEveryRunnableWhenOneFails(t *testing.T) {
	mgr, err := NewManager(fake.NewClientBuilder().Build(), nil)
	require.NoError(t, err)
	boom := errors.New("boom")
	stopped := make(chan struct{})
	require.NoError(t, mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		close(stopped)
		return nil
	})))
	require.NoError(t, mgr.Add(manager.RunnableFunc(func(context.Context) error { return boom })))
	assert.ErrorIs(t, mgr.Start(context.Background()), boom)
	<-stopped
	assert.Error(t, mgr.Add(nil), "a nil runnable")
}
