package kube

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/payload"
)

// patchingApply is a recordingApply that is a ManagedFieldsPatcher and
// records its patches.
type patchingApply struct {
	recordingApply
	patches [][]byte
}

func (p *patchingApply) PatchJSON(_ context.Context, _ schema.GroupVersionKind, _, _ string, patch []byte) error {
	p.patches = append(p.patches, patch)
	return nil
}

// managed is a managedFields entry of manager, by operation, owning the
// data keys keys.
func managed(manager string, op metav1.ManagedFieldsOperationType, keys ...string) metav1.ManagedFieldsEntry {
	data := map[string]any{}
	for _, k := range keys {
		data["f:"+k] = map[string]any{}
	}
	raw, _ := json.Marshal(map[string]any{"f:data": data})
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}
}

// owners reads the managedFields a take-over patch writes: each manager's
// data keys.
func owners(t *testing.T, patch []byte) map[string][]string {
	t.Helper()
	var ops []struct {
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	require.NoError(t, json.Unmarshal(patch, &ops))
	out := map[string][]string{}
	for _, op := range ops {
		if op.Path != "/metadata/managedFields" {
			continue
		}
		var entries []metav1.ManagedFieldsEntry
		require.NoError(t, json.Unmarshal(op.Value, &entries))
		for _, e := range entries {
			var fields map[string]map[string]any
			require.NoError(t, json.Unmarshal(e.FieldsV1.Raw, &fields))
			for k := range fields["f:data"] {
				out[e.Manager+" "+string(e.Operation)] = append(out[e.Manager+" "+string(e.Operation)], strings.TrimPrefix(k, "f:"))
			}
		}
	}
	return out
}

// TestApplierTakesOverTheFieldsOfHandEdits: before it applies, the applier
// makes the fields that kubectl edit, kubectl's client-side apply and the
// edits before the first apply set its own, so that the apply removes those
// the manifest does not set; a controller's fields stay the controller's;
// an object nobody edited by hand, or not created yet, is not patched.
func TestApplierTakesOverTheFieldsOfHandEdits(t *testing.T) {
	ctx := context.Background()
	edited := obj("v1", "ConfigMap", 1, nil, nil)
	edited.SetResourceVersion("7")
	edited.SetManagedFields([]metav1.ManagedFieldsEntry{
		managed("op", metav1.ManagedFieldsOperationApply, "kept"),
		managed("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "edited"),
		managed("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, "applied"),
		managed("other-controller", metav1.ManagedFieldsOperationUpdate, "theirs"),
	})
	untouched := obj("v1", "Secret", 1, nil, nil)
	untouched.SetManagedFields([]metav1.ManagedFieldsEntry{
		managed("op", metav1.ManagedFieldsOperationApply, "kept"), managed("other-controller", metav1.ManagedFieldsOperationUpdate, "theirs"),
	})
	client := &patchingApply{recordingApply: recordingApply{objs: map[string]*unstructured.Unstructured{"ConfigMap ns/x": edited, "Secret ns/x": untouched}}}
	a, err := NewApplierFor(client, ApplierConfig{FieldManager: "op", TakeOver: HandEditManagers()})
	require.NoError(t, err)

	require.NoError(t, a.Apply(ctx, manifestOf(edited), payload.StateReconciling))
	require.Len(t, client.patches, 1)
	got := owners(t, client.patches[0])
	assert.ElementsMatch(t, []string{"kept", "edited", "applied"}, got["op Apply"], "the hand edits are the applier's")
	assert.Equal(t, []string{"theirs"}, got["other-controller Update"], "a controller's fields stay its own")
	assert.Len(t, got, 2, "no entry of kubectl's is left")
	assert.Contains(t, string(client.patches[0]), `"/metadata/resourceVersion","value":"7"`, "a stale read is the API server's Conflict")

	require.NoError(t, a.Apply(ctx, manifestOf(untouched), payload.StateReconciling))
	require.NoError(t, a.Apply(ctx, manifestOf(obj("v1", "ServiceAccount", 1, nil, nil)), payload.StateReconciling))
	assert.Len(t, client.patches, 1, "nothing to take over, nothing patched")
	assert.Equal(t, []string{"ConfigMap ns/x as op force=false", "Secret ns/x as op force=false", "ServiceAccount ns/x as op force=false"}, client.applied)
}
