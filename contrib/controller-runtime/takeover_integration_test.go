//go:build integration

package crconverge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestApplierTakesOverHandEditsOnTheAPIServer applies a ConfigMap, edits it
// as kubectl edit does (an Update as "kubectl-edit"), as kubectl's
// client-side apply does (a patch as "kubectl-client-side-apply") and as
// another controller does (a patch as "other-controller"), and applies the
// manifest again: the fields of the hand edits are gone, the controller's
// field stays.
func TestApplierTakesOverHandEditsOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c, ns := apiClient(t)
	a, err := NewApplierWith(c, kube.ApplierConfig{FieldManager: "payload-operator", TakeOver: kube.HandEditManagers()})
	require.NoError(t, err)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": ns},
		"data":     map[string]any{"mode": "fast"},
	}}
	m := &manifest.Manifest{File: "0000_10_x.yaml", Document: 1, GVK: cm.GroupVersionKind(), Object: cm}
	require.NoError(t, a.Apply(ctx, m, payload.StateInitializing))

	key := client.ObjectKey{Namespace: ns, Name: "settings"}
	live := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, key, live))
	live.Data["edited"] = "by hand"
	require.NoError(t, c.Update(ctx, live, client.FieldOwner("kubectl-edit")))
	for manager, field := range map[string]string{"kubectl-client-side-apply": "applied", "other-controller": "theirs"} {
		require.NoError(t, c.Get(ctx, key, live))
		before := live.DeepCopy()
		live.Data[field] = "x"
		require.NoError(t, c.Patch(ctx, live, client.MergeFrom(before), client.FieldOwner(manager)))
	}

	require.NoError(t, a.Apply(ctx, m, payload.StateReconciling))
	require.NoError(t, c.Get(ctx, key, live))
	assert.Equal(t, map[string]string{"mode": "fast", "theirs": "x"}, live.Data,
		"the hand edits are removed, the other controller's field stays")
	var managers []string
	for _, f := range live.GetManagedFields() {
		managers = append(managers, f.Manager)
	}
	assert.ElementsMatch(t, []string{"payload-operator", "other-controller"}, managers)
}
