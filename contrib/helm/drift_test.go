package helmconverge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

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
