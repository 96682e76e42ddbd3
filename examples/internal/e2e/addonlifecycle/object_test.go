package addonlifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
)

func TestStatusRoundTripsThroughTheObject(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC).Local()) // metav1.Time reads back in Local
	st := addon.Status{
		Phase: addon.PhaseChecking, Reason: "UpgradeSucceeded", Message: "checking v2",
		PendingAction: addon.ActionCheckHealth, NextAttemptTime: &t0, Verifying: addon.ActionUpgrade,
		UpgradeFailures: 1, LastTransitionTime: t0, LastAttemptTime: &t0,
		InstalledVersion: "v2", LastGoodVersion: "v1", ObservedGeneration: 2,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Upgrading", LastTransitionTime: t0, ObservedGeneration: 2}},
	}
	store, err := kube.NewAddonObjects(kube.AddonObjectsConfig{Client: addonClient(newAddon("ns", "mesh", "v2")), Resource: AddonResource, Spec: SpecOf})
	require.NoError(t, err)
	read, err := store.Get(context.Background(), "ns/mesh")
	require.NoError(t, err)
	written, err := store.UpdateStatus(context.Background(), read, st)
	require.NoError(t, err)
	obj := written.Host.(*unstructured.Unstructured)
	got, err := statusOf(obj)
	require.NoError(t, err)
	assert.Equal(t, st, got, "kube.AddonObjects writes what statusOf reads")

	empty, err := statusOf(newAddon("ns", "mesh", "v1"))
	require.NoError(t, err)
	assert.Equal(t, addon.Status{}, empty, "no status yet is the zero Status")

	obj.Object["status"] = map[string]any{"failedVersion": int64(3)}
	_, err = statusOf(obj)
	assert.Error(t, err, "a status the engine cannot read")
}

func TestSpecOf(t *testing.T) {
	obj := newAddon("ns", "mesh", "v2")
	obj.SetGeneration(3)
	assert.Equal(t, addon.Spec{Name: "ns/mesh", Generation: 3, Version: "v2"}, SpecOf(obj))
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	assert.True(t, SpecOf(obj).Deleting)
	obj.SetAnnotations(map[string]string{resetAnnotation: "2026-11-29T12:00:00Z", forceAnnotation: "1"})
	assert.Equal(t, "2026-11-29T12:00:00Z", SpecOf(obj).ResetToken)
	assert.Equal(t, "1", SpecOf(obj).ForceToken)
}

func TestHasFinalizer(t *testing.T) {
	tests := []struct {
		name       string
		finalizers []string
		has        bool
	}{
		{name: "none", finalizers: nil, has: false},
		{name: "only ours", finalizers: []string{Finalizer}, has: true},
		{name: "ours among others", finalizers: []string{"a", Finalizer, "b"}, has: true},
		{name: "others", finalizers: []string{"a"}, has: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &metav1.ObjectMeta{Finalizers: tt.finalizers}
			assert.Equal(t, tt.has, hasFinalizer(obj))
		})
	}
}

// addonClient is a fake dynamic client serving objs as Addons.
func addonClient(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonResource: "AddonList"}, objs...)
}

// TestAddonStoreWritesOverTheReadResourceVersion checks kube.AddonObjects,
// with the example's spec, as the controller's addon.Store.
func TestAddonStoreWritesOverTheReadResourceVersion(t *testing.T) {
	ctx := context.Background()
	dyn := addonClient(newAddon("ns", "mesh", "v1"))
	var written []string // resource versions the writes went over
	dyn.PrependReactor("update", "addons", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		written = append(written, obj.GetResourceVersion())
		if obj.GetResourceVersion() == "stale" {
			return true, nil, apierrors.NewConflict(AddonResource.GroupResource(), obj.GetName(), nil)
		}
		out := obj.DeepCopy()
		out.SetResourceVersion(obj.GetResourceVersion() + "+")
		return true, out, nil
	})
	s, err := kube.NewAddonObjects(kube.AddonObjectsConfig{Client: dyn, Resource: AddonResource, Spec: SpecOf})
	require.NoError(t, err)

	_, err = s.UpdateStatus(ctx, addon.Object{Spec: addon.Spec{Name: "ns/mesh"}}, addon.Status{})
	assert.Error(t, err, "no Addon object to write")

	obj, err := s.Get(ctx, "ns/mesh")
	require.NoError(t, err)
	assert.Equal(t, "ns/mesh", obj.Spec.Name)
	require.IsType(t, &unstructured.Unstructured{}, obj.Host, "the Addon travels to the driver")
	obj.ResourceVersion = "7"
	first, err := s.UpdateStatus(ctx, obj, addon.Status{Phase: addon.PhaseInitializing})
	require.NoError(t, err)
	second, err := s.UpdateStatus(ctx, first, addon.Status{Phase: addon.PhaseChecking})
	require.NoError(t, err)
	assert.Equal(t, []string{"7", "7+"}, written, "the second write goes over the first one's result")
	assert.Equal(t, "7++", second.ResourceVersion)
	assert.Equal(t, addon.PhaseChecking, second.Status.Phase)

	obj.ResourceVersion = "stale"
	_, err = s.UpdateStatus(ctx, obj, addon.Status{Phase: addon.PhaseRunning})
	assert.True(t, apierrors.IsConflict(err), "the apiserver's own conflict reaches the engine: %v", err)
}
