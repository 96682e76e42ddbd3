//go:build !integration

package payloadapply

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

func manifestOf(obj map[string]any) *manifest.Manifest {
	u := &unstructured.Unstructured{Object: obj}
	return &manifest.Manifest{File: "0000_20_test_00_object.yaml", Document: 1, GVK: u.GroupVersionKind(), Object: u}
}

func configMapManifest(value string) *manifest.Manifest {
	return manifestOf(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "demo"},
		"data":     map[string]any{"key": value},
	})
}

func jobManifest() *manifest.Manifest {
	return manifestOf(map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "migrate", "namespace": "demo"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never",
			"containers":    []any{map[string]any{"name": "migrate", "image": "busybox"}},
		}}},
	})
}

// newApplier is the example's applier on c.
func newApplier(t *testing.T, c *Cluster, fieldManager string) *Applier {
	t.Helper()
	ka, err := kube.NewApplier(kube.ApplierConfig{Client: c.Client, Mapper: c.Mapper, FieldManager: fieldManager, Force: true})
	require.NoError(t, err)
	return &Applier{Kube: ka, Cluster: c, FieldManager: fieldManager}
}

func TestApplierServerSideApplies(t *testing.T) {
	c, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	applier := newApplier(t, c, "test-manager")
	ctx := context.Background()
	configMaps := c.Client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("demo")

	require.NoError(t, applier.Apply(ctx, configMapManifest("one"), payload.StateInitializing))
	assert.Equal(t, int64(20), applier.Level(), "the run level of the manifest applied last")
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
	require.NoError(t, applier.Apply(ctx, configMapManifest("two"), payload.StateReconciling))
	live, err = configMaps.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"key": "two"}, live.Object["data"])
}

func TestApplierWaitsForJobs(t *testing.T) {
	complete := []any{map[string]any{"type": "Complete", "status": "True"}}
	failed := []any{map[string]any{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}}
	tests := []struct {
		name string
		// existing is the status of a Job already in the cluster; nil applies a new one.
		existing []any
		// simulate has the applier play the job controller.
		simulate  bool
		wantErr   error
		wantFatal bool
	}{
		{name: "a new Job is created and waited for", wantErr: kube.ErrNotReady},
		{name: "a new Job is completed by the simulated controller", simulate: true},
		{name: "a running Job is waited for", existing: []any{}, wantErr: kube.ErrNotReady},
		{name: "a running Job is completed by the simulated controller", existing: []any{}, simulate: true},
		{name: "a complete Job is done", existing: complete},
		{name: "a failed Job fails the task", existing: failed, wantFatal: true},
		{name: "the simulated controller leaves a failed Job failed", existing: failed, simulate: true, wantFatal: true},
		{name: "a false condition is no outcome", existing: []any{map[string]any{"type": "Complete", "status": "False"}}, wantErr: kube.ErrNotReady},
	}
	jobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := MemoryCluster(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
			require.NoError(t, err)
			m := jobManifest()
			if tt.existing != nil {
				job := m.Object.DeepCopy()
				require.NoError(t, unstructured.SetNestedSlice(job.Object, tt.existing, "status", "conditions"))
				_, err := c.Client.Resource(jobs).Namespace("demo").Create(context.Background(), job, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			var reported, waited []error
			applier := newApplier(t, c, "test")
			applier.Simulate = tt.simulate
			applier.OnError = func(_ *manifest.Manifest, err error) { reported = append(reported, err) }
			applier.OnWait = func(_ *manifest.Manifest, err error) { waited = append(waited, err) }
			require.NoError(t, applier.Apply(context.Background(), m, payload.StateInitializing), "a Job is applied once, then waited for")
			err = applier.Ready(context.Background(), m)
			if tt.simulate && err != nil && !tt.wantFatal {
				assert.ErrorIs(t, err, kube.ErrNotReady)
				err = applier.Ready(context.Background(), m) // the next poll finds it complete
			}
			switch {
			case tt.wantFatal:
				var uErr *payload.UpdateError
				require.ErrorAs(t, err, &uErr)
				assert.Equal(t, payload.EffectFail, uErr.Effect, "%v", err)
				assert.ErrorContains(t, err, "kube: Job demo/migrate failed: BackoffLimitExceeded: Job has reached the specified backoff limit")
				assert.Empty(t, waited, "a failed Job is no wait")
			case tt.wantErr != nil:
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Len(t, waited, 1, "the wait is reported")
			default:
				require.NoError(t, err)
			}
			assert.Empty(t, reported, "waiting is no failed attempt")
			_, err = c.Client.Resource(jobs).Namespace("demo").Get(context.Background(), "migrate", metav1.GetOptions{})
			require.NoError(t, err, "the Job is in the cluster")
			assert.Equal(t, tt.wantErr == nil && !tt.wantFatal, applier.Kube.Ready(context.Background(), m) == nil, "the live Job's outcome")
		})
	}
}

func TestApplierWaitsForADeployment(t *testing.T) {
	web := func() *manifest.Manifest {
		return manifestOf(map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "demo"},
			"spec":     map[string]any{"replicas": int64(2)},
		})
	}
	tests := []struct {
		name     string
		simulate bool
	}{
		{name: "no deployment controller runs: it stays not ready"},
		{name: "the simulated controller rolls it out", simulate: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := MemoryCluster(time.Now())
			require.NoError(t, err)
			applier := newApplier(t, c, "test")
			applier.Simulate = tt.simulate
			var waited []error
			applier.OnWait = func(_ *manifest.Manifest, err error) { waited = append(waited, err) }
			m := web()
			require.NoError(t, applier.Apply(context.Background(), m, payload.StateInitializing))
			assert.ErrorIs(t, applier.Ready(context.Background(), m), kube.ErrNotReady, "nothing rolled it out yet")
			err = applier.Ready(context.Background(), m) // the next poll
			if tt.simulate {
				assert.NoError(t, err, "rolled out")
				assert.Len(t, waited, 1)
			} else {
				assert.ErrorIs(t, err, kube.ErrNotReady)
				assert.Len(t, waited, 2)
			}
		})
	}
}

func TestNewApplierSimulatesInMemory(t *testing.T) {
	memory, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	ka := newApplier(t, memory, "test").Kube
	var out bytes.Buffer
	assert.True(t, NewApplier(ka, memory, "test", false, NewProgress(&out)).Simulate, "the in-memory cluster has no controllers")
	real := &Cluster{Client: memory.Client, Mapper: memory.Mapper, Clock: memory.Clock}
	assert.False(t, NewApplier(ka, real, "test", false, NewProgress(&out)).Simulate)
	assert.True(t, NewApplier(ka, real, "test", true, NewProgress(&out)).Simulate)
}

func TestApplierUnknownKind(t *testing.T) {
	c, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	var reported []error
	applier := newApplier(t, c, "test")
	applier.OnError = func(_ *manifest.Manifest, err error) { reported = append(reported, err) }
	m := manifestOf(map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}})
	assert.Error(t, applier.Apply(context.Background(), m, payload.StateUpdating))
	assert.Len(t, reported, 1, "the failed attempt is reported")
}

func TestApplierDeletes(t *testing.T) {
	c, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	applier := newApplier(t, c, "test")
	_, removals := loadExample(t)
	require.Len(t, removals, 1)
	require.True(t, removals[0].Delete)
	require.NoError(t, applier.Delete(context.Background(), &removals[0]), "the in-memory cluster has the legacy settings")
	_, err = c.Present(context.Background(), removals)
	assert.ErrorContains(t, err, "not found", "the legacy settings are gone")
	err = applier.Delete(context.Background(), &removals[0])
	assert.True(t, apierrors.IsNotFound(err), "gone already is NotFound, which the worker does not count as a deletion: %v", err)
}
