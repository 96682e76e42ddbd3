package crconverge

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
)

func TestAddonObjectsPassTheStoreConformanceCheck(t *testing.T) {
	c := newFakeClient(t, newWidget("tke", "mesh"))
	objects, err := NewAddonObjects(c, widgetGVK, kube.AddonObjectsConfig{})
	require.NoError(t, err)
	require.NoError(t, fake.TestAddonStore(context.Background(), objects, "tke/mesh"))
}

func TestAddonObjectsFromObjectReadsATypedObject(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t, newWidget("tke", "mesh"))
	objects, err := NewAddonObjects(c, widgetGVK, kube.AddonObjectsConfig{})
	require.NoError(t, err)
	typed := &widget{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "tke", Name: "mesh"}, typed))
	typed.Status = map[string]any{"phase": "Installed", "installedVersion": "v1"}

	got, err := objects.FromObject(typed)
	require.NoError(t, err)
	assert.Equal(t, addon.Spec{Name: "tke/mesh", Version: "v1"}, got.Spec)
	assert.Equal(t, addon.Status{Phase: "Installed", InstalledVersion: "v1"}, got.Status)
	assert.Equal(t, typed.ResourceVersion, got.ResourceVersion)
	host, ok := got.Host.(*unstructured.Unstructured)
	require.True(t, ok, "the host is unstructured, %T", got.Host)
	assert.Equal(t, widgetGVK, host.GroupVersionKind(), "the host carries its kind, for owner references")

	written, err := objects.UpdateStatus(ctx, got, addon.Status{Phase: "Installed", InstalledVersion: "v2"})
	require.NoError(t, err)
	assert.Equal(t, "v2", written.Status.InstalledVersion)
	_, err = objects.UpdateStatus(ctx, got, addon.Status{Phase: "Failed"})
	assert.True(t, converge.IsConflict(err), "a write over the version already written is a conflict: %v", err)
}

func TestNewAddonObjectsRejectsBadInput(t *testing.T) {
	var typedNil *fakeNilClient
	tests := []struct {
		name   string
		client client.Client
		gvk    schema.GroupVersionKind
		cfg    kube.AddonObjectsConfig
	}{
		{name: "nil client", gvk: widgetGVK},
		{name: "typed-nil client", client: typedNil, gvk: widgetGVK},
		{name: "no kind", client: newFakeClient(t), gvk: widgetGVK.GroupVersion().WithKind("")},
		{name: "a path outside status", client: newFakeClient(t), gvk: widgetGVK, cfg: kube.AddonObjectsConfig{StatusPath: []string{"spec"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAddonObjects(tt.client, tt.gvk, tt.cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
	objects, err := NewAddonObjects(newFakeClient(t), widgetGVK, kube.AddonObjectsConfig{})
	require.NoError(t, err)
	var nilWidget *widget
	_, err = objects.FromObject(nilWidget)
	assert.True(t, errors.Is(err, converge.ErrInvalid), "a typed-nil object: %v", err)
	_, err = objects.FromObject(&widget{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Status: map[string]any{"phase": 3}})
	assert.Error(t, err, "a status that is not an add-on's")
}
