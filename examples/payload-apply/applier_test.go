package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/payload"
)

func manifestOf(t *testing.T, obj map[string]any) *payload.Manifest {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	return &payload.Manifest{File: "0000_20_test_00_object.yaml", Document: 1, GVK: u.GroupVersionKind(), Object: u}
}

func configMapManifest(t *testing.T, value string) *payload.Manifest {
	return manifestOf(t, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "demo"},
		"data":     map[string]any{"key": value},
	})
}

func jobManifest(t *testing.T) *payload.Manifest {
	return manifestOf(t, map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "migrate", "namespace": "demo"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never",
			"containers":    []any{map[string]any{"name": "migrate", "image": "busybox"}},
		}}},
	})
}

func TestClusterApplierServerSideApplies(t *testing.T) {
	c, err := memoryCluster(time.Now())
	require.NoError(t, err)
	applier := &clusterApplier{client: c.client, mapper: c.mapper, fieldManager: "test-manager"}
	ctx := context.Background()
	configMaps := c.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("demo")

	require.NoError(t, applier.Apply(ctx, configMapManifest(t, "one"), payload.StateInitializing))
	live, err := configMaps.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"key": "one"}, live.Object["data"])
	require.Len(t, live.GetManagedFields(), 1)
	assert.Equal(t, "test-manager", live.GetManagedFields()[0].Manager)
	assert.Equal(t, metav1.ManagedFieldsOperationApply, live.GetManagedFields()[0].Operation)

	// Another writer changes the field; the applier forces it back.
	live.Object["data"] = map[string]any{"key": "changed"}
	_, err = configMaps.Update(ctx, live, metav1.UpdateOptions{FieldManager: "someone-else"})
	require.NoError(t, err)
	require.NoError(t, applier.Apply(ctx, configMapManifest(t, "two"), payload.StateReconciling))
	live, err = configMaps.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"key": "two"}, live.Object["data"])
}

func TestClusterApplierWaitsForJobs(t *testing.T) {
	tests := []struct {
		name string
		// existing is the status of a Job already in the cluster; nil applies a new one,
		// which the in-memory cluster completes.
		existing  []any
		wantErr   error
		wantFatal bool
	}{
		{name: "a new Job is created and completes"},
		{name: "a running Job is waited for", existing: []any{}, wantErr: errJobRunning},
		{name: "a complete Job is done", existing: []any{map[string]any{"type": "Complete", "status": "True"}}},
		{name: "a failed Job fails the task", existing: []any{map[string]any{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}}, wantFatal: true},
		{name: "a false condition is no outcome", existing: []any{map[string]any{"type": "Complete", "status": "False"}}, wantErr: errJobRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := memoryCluster(time.Now())
			require.NoError(t, err)
			m := jobManifest(t)
			if tt.existing != nil {
				job := m.Object.DeepCopy()
				require.NoError(t, unstructured.SetNestedSlice(job.Object, tt.existing, "status", "conditions"))
				_, err := c.client.Resource(schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}).Namespace("demo").Create(context.Background(), job, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			var reported []error
			applier := &clusterApplier{client: c.client, mapper: c.mapper, fieldManager: "test", onError: func(_ *payload.Manifest, err error) { reported = append(reported, err) }}
			err = applier.Apply(context.Background(), m, payload.StateInitializing)
			switch {
			case tt.wantFatal:
				assert.Equal(t, payload.EffectFail, payload.EffectOf(err), "%v", err)
				assert.ErrorContains(t, err, "Job demo/migrate failed: BackoffLimitExceeded")
			case tt.wantErr != nil:
				assert.ErrorIs(t, err, tt.wantErr)
			default:
				require.NoError(t, err)
			}
			if err != nil {
				assert.Equal(t, []error{err}, reported)
			}
		})
	}
}

func TestClusterApplierUnknownKind(t *testing.T) {
	c, err := memoryCluster(time.Now())
	require.NoError(t, err)
	applier := &clusterApplier{client: c.client, mapper: c.mapper, fieldManager: "test"}
	m := manifestOf(t, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})
	assert.Error(t, applier.Apply(context.Background(), m, payload.StateUpdating))
}
