package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	complete := []any{map[string]any{"type": "Complete", "status": "True"}}
	failed := []any{map[string]any{"type": "Failed", "status": "True", "message": "BackoffLimitExceeded"}}
	tests := []struct {
		name string
		// existing is the status of a Job already in the cluster; nil applies a new one.
		existing []any
		// completeJobs has the applier play the job controller.
		completeJobs bool
		wantErr      error
		wantFatal    bool
	}{
		{name: "a new Job is created and waited for", wantErr: errJobRunning},
		{name: "a new Job is completed by the simulated controller", completeJobs: true},
		{name: "a running Job is waited for", existing: []any{}, wantErr: errJobRunning},
		{name: "a running Job is completed by the simulated controller", existing: []any{}, completeJobs: true},
		{name: "a complete Job is done", existing: complete},
		{name: "a failed Job fails the task", existing: failed, wantFatal: true},
		{name: "the simulated controller leaves a failed Job failed", existing: failed, completeJobs: true, wantFatal: true},
		{name: "a false condition is no outcome", existing: []any{map[string]any{"type": "Complete", "status": "False"}}, wantErr: errJobRunning},
	}
	jobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := memoryCluster(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
			require.NoError(t, err)
			m := jobManifest(t)
			if tt.existing != nil {
				job := m.Object.DeepCopy()
				require.NoError(t, unstructured.SetNestedSlice(job.Object, tt.existing, "status", "conditions"))
				_, err := c.client.Resource(jobs).Namespace("demo").Create(context.Background(), job, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			var reported, waited []error
			applier := &clusterApplier{
				client: c.client, mapper: c.mapper, fieldManager: "test", completeJobs: tt.completeJobs, clock: c.clock,
				onError: func(_ *payload.Manifest, err error) { reported = append(reported, err) },
				onWait:  func(_ *payload.Manifest, err error) { waited = append(waited, err) },
			}
			require.NoError(t, applier.Apply(context.Background(), m, payload.StateInitializing), "a Job is applied once, then waited for")
			err = applier.Ready(context.Background(), m)
			if tt.completeJobs && errors.Is(err, errJobRunning) {
				err = applier.Ready(context.Background(), m) // the next poll finds it complete
			}
			switch {
			case tt.wantFatal:
				var uErr *payload.UpdateError
				require.ErrorAs(t, err, &uErr)
				assert.Equal(t, payload.EffectFail, uErr.Effect, "%v", err)
				assert.ErrorContains(t, err, "Job demo/migrate failed: BackoffLimitExceeded")
			case tt.wantErr != nil:
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Len(t, waited, 1, "the wait is reported")
			default:
				require.NoError(t, err)
			}
			assert.Empty(t, reported, "waiting is no failed attempt")
			live, err := c.client.Resource(jobs).Namespace("demo").Get(context.Background(), "migrate", metav1.GetOptions{})
			require.NoError(t, err, "the Job is in the cluster")
			assert.Equal(t, err == nil && tt.wantErr == nil && !tt.wantFatal, jobOutcome(live) == nil, "the live Job's outcome")
		})
	}
}

func TestCompletedJob(t *testing.T) {
	job := jobManifest(t).Object
	done := completedJob(job, time.Date(2026, 1, 1, 12, 0, 0, 500, time.UTC))
	require.NoError(t, jobOutcome(done))
	assert.NotContains(t, job.Object, "status", "the Job given was changed")
	status := done.Object["status"].(map[string]any)
	assert.Equal(t, "2026-01-01T11:59:59Z", status["startTime"])
	assert.Equal(t, "2026-01-01T12:00:00Z", status["completionTime"])
	assert.Equal(t, int64(1), status["succeeded"])
}

func TestClusterApplierUnknownKind(t *testing.T) {
	c, err := memoryCluster(time.Now())
	require.NoError(t, err)
	applier := &clusterApplier{client: c.client, mapper: c.mapper, fieldManager: "test"}
	m := manifestOf(t, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})
	assert.Error(t, applier.Apply(context.Background(), m, payload.StateUpdating))
}

func TestClusterApplierDeletes(t *testing.T) {
	c, err := memoryCluster(time.Now())
	require.NoError(t, err)
	applier := &clusterApplier{client: c.client, mapper: c.mapper, fieldManager: "test"}
	removals, err := loadRemovals()
	require.NoError(t, err)
	require.Len(t, removals, 1)
	require.True(t, removals[0].Delete)
	require.NoError(t, applier.Delete(context.Background(), &removals[0]), "the in-memory cluster has the legacy settings")
	err = applier.Delete(context.Background(), &removals[0])
	assert.True(t, apierrors.IsNotFound(err), "gone already: the worker takes NotFound as success: %v", err)
}

func TestReleasePayloadKeepsFileOrder(t *testing.T) {
	manifests, err := loadManifests()
	require.NoError(t, err)
	removals, err := loadRemovals()
	require.NoError(t, err)
	p := releasePayload(manifests, removals, payload.Release{Version: "1.0.0"})
	require.Len(t, p.Manifests, 31)
	assert.True(t, slices.IsSortedFunc(p.Manifests, func(a, b payload.Manifest) int { return payload.CompareFiles(a.File, b.File) }))
	_, err = payload.BuildGraph(payload.NewTasks(p.Manifests), payload.OrderRunLevels)
	require.NoError(t, err)
}
