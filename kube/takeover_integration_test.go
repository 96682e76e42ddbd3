//go:build integration

package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestApplierTakesOverHandEditsOnTheAPIServer applies a ConfigMap, edits it
// as kubectl edit does (an Update as "kubectl-edit"), as kubectl's
// client-side apply does (a merge patch as "kubectl-client-side-apply") and
// as another controller does (a merge patch as "other-controller"), and
// applies the manifest again through the dynamic client: the fields of the
// hand edits are gone, the controller's field stays.
func TestApplierTakesOverHandEditsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-takeover")
	a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: mapper(t), FieldManager: "payload-operator", TakeOver: HandEditManagers()})
	require.NoError(t, err)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "kube-takeover"},
		"data":     map[string]any{"mode": "fast"},
	}}
	m := &manifest.Manifest{File: "0000_10_settings.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm}
	require.NoError(t, a.Apply(ctx, m, payload.StateInitializing))

	cms := c.typed.CoreV1().ConfigMaps("kube-takeover")
	live, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	live.Data["edited"] = "by hand"
	_, err = cms.Update(ctx, live, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)
	for manager, patch := range map[string]string{"kubectl-client-side-apply": `{"data":{"applied":"x"}}`, "other-controller": `{"data":{"theirs":"x"}}`} {
		_, err = cms.Patch(ctx, "settings", types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager})
		require.NoError(t, err)
	}

	require.NoError(t, a.Apply(ctx, m, payload.StateReconciling))
	live, err = cms.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"mode": "fast", "theirs": "x"}, live.Data, "the hand edits are removed, the other controller's field stays")
	var managers []string
	for _, f := range live.ManagedFields {
		managers = append(managers, f.Manager)
	}
	assert.ElementsMatch(t, []string{"payload-operator", "other-controller"}, managers)
}
