package controller

import (
	"context"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/payload"
)

// TestPayloadWorkerOnTheFakeClientLeavesInitializing: on the fake client
// with crtest.WithGenerations, a Payload written with server-side apply
// gets a generation as on the API server, so the worker applies its release,
// completes the update and goes on Reconciling; its ConfigMap, applied with
// server-side apply too, holds the release.
func TestPayloadWorkerOnTheFakeClientLeavesInitializing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1alpha1.GroupVersion.WithKind("Payload"), meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	c := crtest.WithGenerations(fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithStatusSubresource(&v1alpha1.Payload{}).Build(), &v1alpha1.Payload{})
	mgr, err := crtest.NewManager(c, nil)
	require.NoError(t, err)
	key := types.NamespacedName{Namespace: "ns", Name: "cluster"}
	releases := fstest.MapFS{"1.0/0000_10_settings.yaml": configMap("ns", "settings", "1.0")}
	r, err := crconverge.NewPayloadController(mgr, PayloadOptions(key, releases))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "the manager stops its worker cleanly")
	})

	spec := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Payload",
		"metadata": map[string]any{"namespace": key.Namespace, "name": key.Name},
		"spec":     map[string]any{"release": "1.0"},
	}}
	require.NoError(t, c.Apply(ctx, client.ApplyConfigurationFromUnstructured(spec), client.FieldOwner("admin")))
	_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
	require.NoError(t, err)

	p := &v1alpha1.Payload{}
	deadline := time.Now().Add(time.Minute) // a bound on a wait for what comes, never a pace
	for {
		require.NoError(t, c.Get(ctx, key, p))
		if p.Status.State == payload.StateReconciling || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, int64(1), p.Generation, "server-side apply created the Payload at generation 1")
	assert.Equal(t, payload.StateReconciling, p.Status.State, "the worker left Initializing")
	assert.Equal(t, int64(1), p.Status.ObservedGeneration)
	require.NotEmpty(t, p.Status.History)
	assert.Equal(t, payload.UpdateCompleted, p.Status.History[0].State)
	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "settings"}, cm))
	assert.Equal(t, "1.0", cm.Data["version"])
}

// configMap is a release's manifest of the ConfigMap ns/name holding
// version.
func configMap(ns, name, version string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: " + ns +
		"\n  name: " + name + "\ndata:\n  version: \"" + version + "\"\n")}
}
