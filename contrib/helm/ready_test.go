package helmconverge

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObjectReady(t *testing.T) {
	obj := func(apiVersion, kind string, spec, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "x", "namespace": "ns", "generation": int64(2)}}}
		if spec != nil {
			u.Object["spec"] = spec
		}
		if status != nil {
			u.Object["status"] = status
		}
		return u
	}
	cond := func(typ, status string) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": typ, "status": status, "message": "m"}}}
	}
	rolled := map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "updatedReplicas": int64(2), "availableReplicas": int64(2), "readyReplicas": int64(2)}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want error // nil, errNotReady or errObjectFailed
	}{
		{"a rolled-out Deployment", obj("apps/v1", "Deployment", map[string]any{"replicas": int64(2)}, rolled), nil},
		{"a Deployment whose generation is not observed", obj("apps/v1", "Deployment", map[string]any{"replicas": int64(2)}, map[string]any{"observedGeneration": int64(1)}), errNotReady},
		{"a Deployment short of replicas", obj("apps/v1", "Deployment", map[string]any{"replicas": int64(3)}, rolled), errNotReady},
		{"a StatefulSet mid-revision", obj("apps/v1", "StatefulSet", map[string]any{"replicas": int64(2)}, map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "updatedReplicas": int64(2), "readyReplicas": int64(2), "currentRevision": "a", "updateRevision": "b"}), errNotReady},
		{"a DaemonSet rolled out", obj("apps/v1", "DaemonSet", nil, map[string]any{"observedGeneration": int64(2), "desiredNumberScheduled": int64(3), "updatedNumberScheduled": int64(3), "numberAvailable": int64(3)}), nil},
		{"a Job running", obj("batch/v1", "Job", nil, map[string]any{}), errNotReady},
		{"a Job complete", obj("batch/v1", "Job", nil, cond("Complete", "True")), nil},
		{"a Job failed", obj("batch/v1", "Job", nil, cond("Failed", "True")), errObjectFailed},
		{"a CRD not established", obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", nil, nil), errNotReady},
		{"anything Ready False", obj("example.dev/v1", "Widget", nil, cond("Ready", "False")), errNotReady},
		{"anything Ready True", obj("example.dev/v1", "Widget", nil, cond("Ready", "True")), nil},
		{"anything without status", obj("v1", "ConfigMap", nil, nil), nil},
		{"nothing", nil, errNotReady},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := objectReady(tc.obj)
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.want)
			assert.False(t, errors.Is(err, errNotReady) && errors.Is(err, errObjectFailed), "one verdict")
		})
	}
}

func TestChangedPaths(t *testing.T) {
	live := map[string]any{
		"metadata": map[string]any{"resourceVersion": "1", "managedFields": []any{"a"}, "labels": map[string]any{"a": "1"}},
		"spec":     map[string]any{"replicas": int64(1), "template": map[string]any{"spec": map[string]any{"containers": []any{"x"}}}},
	}
	applied := map[string]any{
		"metadata": map[string]any{"resourceVersion": "2", "managedFields": []any{"b"}, "labels": map[string]any{"a": "2"}},
		"spec":     map[string]any{"replicas": int64(2), "template": map[string]any{"spec": map[string]any{"containers": []any{"y"}}}},
		"data":     map[string]any{"password": "hunter2"},
	}
	assert.Equal(t, []string{"data", "metadata.labels.a", "spec.replicas", "spec.template.spec"}, changedPaths(live, applied, nil),
		"sorted, at most three deep, without the fields every write changes, and never a value")
	assert.Empty(t, changedPaths(live, live, nil))
}
