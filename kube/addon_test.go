package kube

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

var addonsResource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "addons"}

func newAddons(t *testing.T, objs ...*unstructured.Unstructured) (*dynamicfake.FakeDynamicClient, *AddonObjects) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{addonsResource: "AddonList"})
	fake.EnforceResourceVersions(client)
	for _, o := range objs {
		_, err := client.Resource(addonsResource).Namespace(o.GetNamespace()).Create(context.Background(), o, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	s, err := NewAddonObjects(AddonObjectsConfig{Client: client, Resource: addonsResource})
	require.NoError(t, err)
	return client, s
}

func addonObject(version string, annotations map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Addon",
		"metadata": map[string]any{"name": "mesh", "namespace": "tke", "generation": int64(2), "annotations": annotations},
		"spec":     map[string]any{"version": version},
	}}
}

func TestDefaultAddonSpec(t *testing.T) {
	got := DefaultAddonSpec(addonObject("v2", map[string]any{AnnotationResetAt: "r1", AnnotationForceAt: "f1"}))
	assert.Equal(t, addon.Spec{Name: "tke/mesh", Generation: 2, Version: "v2", ResetToken: "r1", ForceToken: "f1"}, got)
	cluster := addonObject("v1", nil)
	cluster.SetNamespace("")
	assert.Equal(t, "mesh", DefaultAddonSpec(cluster).Name, "a cluster-scoped add-on is named by its name")
}

// A Machine driven through AddonObjects installs the add-on and persists
// its status in the custom resource's status.
func TestAddonObjectsDriveAMachine(t *testing.T) {
	ctx := context.Background()
	obj := addonObject("v1", nil)
	client, objects := newAddons(t, obj)
	clk := clocktesting.NewFakeClock(t0)
	m, err := addon.NewMachine(addon.Config{Driver: &fake.AddonDriver{}, Store: objects, Owner: "c0", Clock: clk, Jitter: func() float64 { return 0 }})
	require.NoError(t, err)
	for range 3 {
		o, err := objects.Get(ctx, "tke/mesh")
		require.NoError(t, err)
		res, err := m.Reconcile(ctx, o)
		require.NoError(t, err)
		clk.Step(res.RequeueAfter)
	}
	got, err := client.Resource(addonsResource).Namespace("tke").Get(ctx, "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
	installed, _, _ := unstructured.NestedString(got.Object, "status", "installedVersion")
	assert.Equal(t, string(addon.PhaseRunning), phase)
	assert.Equal(t, "v1", installed)
	version, _, _ := unstructured.NestedString(got.Object, "spec", "version")
	assert.Equal(t, "v1", version, "the spec is untouched")
}

func TestAddonObjectsUpdateStatus(t *testing.T) {
	ctx := context.Background()
	_, objects := newAddons(t, addonObject("v1", nil))
	o, err := objects.Get(ctx, "tke/mesh")
	require.NoError(t, err)
	written, err := objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseInitializing, ObservedGeneration: 2})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseInitializing, written.Status.Phase)
	assert.NotEqual(t, o.ResourceVersion, written.ResourceVersion)

	_, err = objects.UpdateStatus(ctx, o, addon.Status{Phase: addon.PhaseRunning})
	assert.True(t, apierrors.IsConflict(err), "a write over a stale copy is the API server's 409: %v", err)

	o.Host = "not an object"
	_, err = objects.UpdateStatus(ctx, o, addon.Status{})
	assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
	_, err = objects.Get(ctx, "tke/missing")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestAddonObjectsPassTheStoreConformanceCheck(t *testing.T) {
	_, objects := newAddons(t, addonObject("v1", nil))
	require.NoError(t, fake.TestAddonStore(context.Background(), objects, "tke/mesh"))
}

func TestNewAddonObjectsRejectsBadInput(t *testing.T) {
	var typedNil *dynamicfake.FakeDynamicClient
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	for name, cfg := range map[string]AddonObjectsConfig{
		"nil client":            {Resource: addonsResource},
		"typed-nil client":      {Client: typedNil, Resource: addonsResource},
		"no resource":           {Client: client},
		"a path outside status": {Client: client, Resource: addonsResource, StatusPath: []string{"spec"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewAddonObjects(cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// mapAddons is an AddonClient on a map of objects, with the API server's
// optimistic concurrency.
type mapAddons struct {
	objs map[string]*unstructured.Unstructured
}

func (m *mapAddons) Get(_ context.Context, namespace, name string) (*unstructured.Unstructured, error) {
	o, ok := m.objs[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(addonsResource.GroupResource(), name)
	}
	return o.DeepCopy(), nil
}

// Update writes obj as UpdateStatus does: a map keeps no subresources.
func (m *mapAddons) Update(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return m.UpdateStatus(ctx, obj)
}

func (m *mapAddons) UpdateStatus(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	key := obj.GetNamespace() + "/" + obj.GetName()
	cur, ok := m.objs[key]
	if !ok || cur.GetResourceVersion() != obj.GetResourceVersion() {
		return nil, apierrors.NewConflict(addonsResource.GroupResource(), obj.GetName(), errors.New("stale"))
	}
	out := obj.DeepCopy()
	out.SetResourceVersion(cur.GetResourceVersion() + "1")
	m.objs[key] = out
	return out.DeepCopy(), nil
}

func TestAddonObjectsForPassTheStoreConformanceCheck(t *testing.T) {
	o := addonObject("v1", nil)
	o.SetResourceVersion("1")
	objects, err := NewAddonObjectsFor(&mapAddons{objs: map[string]*unstructured.Unstructured{"tke/mesh": o}}, AddonObjectsConfig{})
	require.NoError(t, err)
	require.NoError(t, fake.TestAddonStore(context.Background(), objects, "tke/mesh"))
}

func TestNewAddonObjectsForRejectsBadInput(t *testing.T) {
	var typedNil *mapAddons
	tests := []struct {
		name   string
		client AddonClient
		cfg    AddonObjectsConfig
	}{
		{name: "nil client"},
		{name: "typed-nil client", client: typedNil},
		{name: "a dynamic client beside the add-on client", client: &mapAddons{}, cfg: AddonObjectsConfig{Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}},
		{name: "a resource beside the add-on client", client: &mapAddons{}, cfg: AddonObjectsConfig{Resource: addonsResource}},
		{name: "a path outside status", client: &mapAddons{}, cfg: AddonObjectsConfig{StatusPath: []string{"spec"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewAddonObjectsFor(tt.client, tt.cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// AddonObjects answers a nil object and its own nil or zero value with
// converge.ErrInvalid, never a panic.
func TestAddonObjectsRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	_, made := newAddons(t)
	_, err := made.Object(nil)
	assert.ErrorIs(t, err, converge.ErrInvalid, "a nil object")
	for name, s := range map[string]*AddonObjects{"nil store": nil, "zero store": {}} {
		t.Run(name, func(t *testing.T) {
			_, err := s.Object(addonObject("1", nil))
			assert.ErrorIs(t, err, converge.ErrInvalid)
			_, err = s.Get(ctx, "ns/x")
			assert.ErrorIs(t, err, converge.ErrInvalid)
			_, err = s.UpdateStatus(ctx, addon.Object{Host: addonObject("1", nil)}, addon.Status{})
			assert.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
}
