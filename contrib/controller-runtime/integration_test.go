//go:build integration

package crconverge

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

// apiClient returns a controller-runtime client of the test apiserver,
// without a cache, and a new namespace of its own (so that the test runs
// again with -count on the same apiserver).
func apiClient(t *testing.T) (client.Client, string) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "crconverge-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	return c, ns.Name
}

func TestObjectStatusStoreOnTheAPIServer(t *testing.T) {
	tests := []struct {
		name string
		path []string
		want map[string]any
	}{
		{name: "the whole status", want: map[string]any{"revision": int64(3), "nodes": []any{"a", "b"}}},
		{name: "a field of the status", path: []string{"status", "engine"},
			want: map[string]any{"observedGeneration": int64(1), "engine": map[string]any{"revision": int64(3), "nodes": []any{"a", "b"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c, ns := apiClient(t)
			w := newWidget(ns, "w")
			require.NoError(t, c.Create(ctx, w))
			require.NoError(t, unstructured.SetNestedField(w.Object, int64(1), "status", "observedGeneration"))
			require.NoError(t, c.Status().Update(ctx, w))

			s, err := NewObjectStatusStore[engineStatus](c, widgetGVK, client.ObjectKeyFromObject(w), tt.path...)
			require.NoError(t, err)
			got, rv, err := s.GetStatus(ctx)
			require.NoError(t, err)
			assert.Zero(t, got)
			rv1, err := s.UpdateStatus(ctx, engineStatus{Revision: 3, Nodes: []string{"a", "b"}}, rv)
			require.NoError(t, err)

			got, rv2, err := s.GetStatus(ctx)
			require.NoError(t, err)
			assert.Equal(t, engineStatus{Revision: 3, Nodes: []string{"a", "b"}}, got)
			assert.Equal(t, rv1, rv2)
			stored := newWidget(w.GetNamespace(), w.GetName())
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(w), stored))
			assert.Equal(t, tt.want, stored.Object["status"])

			// Another writer changes the spec: the store's next write is the API
			// server's 409, and a write after reading again succeeds.
			require.NoError(t, unstructured.SetNestedField(stored.Object, "v2", "spec", "version"))
			require.NoError(t, c.Update(ctx, stored))
			_, err = s.UpdateStatus(ctx, engineStatus{Revision: 4}, rv2)
			assert.True(t, apierrors.IsConflict(err), "%v", err)
			_, rv3, err := s.GetStatus(ctx)
			require.NoError(t, err)
			_, err = s.UpdateStatus(ctx, engineStatus{Revision: 4}, rv3)
			require.NoError(t, err)
		})
	}
}

// kube.LatestStatusWriter over either store of this package is a payload
// status writer that passes fake.TestPayloadStatusWriter on the API server.
func TestLatestStatusWriterConformsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := apiClient(t)
	w := newWidget(ns, "w")
	require.NoError(t, c.Create(ctx, w))
	tests := []struct {
		name     string
		newStore func() (kube.StatusReadWriter[payload.Status], error)
	}{
		{name: "ConfigMap, created by the first write", newStore: func() (kube.StatusReadWriter[payload.Status], error) {
			return NewConfigMapStatusStore[payload.Status](c, client.ObjectKey{Namespace: ns, Name: "payload-status"}, "")
		}},
		{name: "custom resource, status.payload", newStore: func() (kube.StatusReadWriter[payload.Status], error) {
			return NewObjectStatusStore[payload.Status](c, widgetGVK, client.ObjectKeyFromObject(w), "status", "payload")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stores := make([]kube.StatusReadWriter[payload.Status], 3)
			for i := range stores {
				s, err := tt.newStore()
				require.NoError(t, err)
				stores[i] = s
			}
			read := func(ctx context.Context) (payload.Status, error) {
				st, _, err := stores[2].GetStatus(ctx)
				return st, err
			}
			require.NoError(t, fake.TestPayloadStatusWriter(ctx,
				kube.LatestStatusWriter[payload.Status]{Store: stores[0]},
				kube.LatestStatusWriter[payload.Status]{Store: stores[1]}, read))
		})
	}
}

func TestConfigMapStatusStoreOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := apiClient(t)
	key := client.ObjectKey{Namespace: ns, Name: "engine-status"}
	s, err := NewConfigMapStatusStore[engineStatus](c, key, "")
	require.NoError(t, err)

	got, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Zero(t, got)
	assert.Empty(t, rv)
	rv1, err := s.UpdateStatus(ctx, engineStatus{Revision: 1}, "")
	require.NoError(t, err)
	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 9}, "")
	assert.True(t, apierrors.IsConflict(err), "a second create is a 409: %v", err)

	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, key, cm))
	cm.Data["other"] = "kept"
	require.NoError(t, c.Update(ctx, cm))
	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv1)
	assert.True(t, apierrors.IsConflict(err), "a write over another writer's change is a 409: %v", err)

	_, rv2, err := s.GetStatus(ctx)
	require.NoError(t, err)
	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv2)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, key, cm))
	assert.Equal(t, "kept", cm.Data["other"])
	assert.JSONEq(t, `{"revision":2}`, cm.Data["status.json"])
}

// TestLeaderElectedRunsUnderTheManagersLease runs a worker under a manager
// that elects itself leader on the real API server, records an engine event
// with the manager's recorder, and checks that the manager's Start returns
// only after the worker has stopped.
func TestLeaderElectedRunsUnderTheManagersLease(t *testing.T) {
	c, ns := apiClient(t)
	mgr, err := manager.New(env.Config, manager.Options{
		LeaderElection:                true,
		LeaderElectionID:              "crconverge-test",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
	})
	require.NoError(t, err)

	regarding := &corev1.ConfigMap{}
	require.NoError(t, c.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "regarding"}}))
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "regarding"}, regarding))

	running, stopped := make(chan struct{}), make(chan struct{})
	require.NoError(t, mgr.Add(LeaderElected(func(ctx context.Context) error {
		kube.RecordEvents(mgr.GetEventRecorder("crconverge-test"), regarding, "Apply",
			[]converge.Event{{Type: "Normal", Reason: "PayloadApplied", Message: "applied 3 of 3 manifests"}})
		close(running)
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	})))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	select {
	case <-running:
	case err := <-done:
		t.Fatalf("the manager stopped before electing itself: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the worker did not start within a minute of the manager")
	}
	lease := &coordinationv1.Lease{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "crconverge-test"}, lease),
		"the worker runs once the manager holds the lease")

	var evs eventsv1.EventList
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "PayloadApplied" {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the engine's event reaches the API server through the manager's recorder")

	cancel()
	require.NoError(t, <-done)
	select {
	case <-stopped:
	default:
		t.Fatal("the manager returned before the worker stopped")
	}
}
