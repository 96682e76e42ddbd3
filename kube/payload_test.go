package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

func obj(apiVersion, kind string, generation int64, status map[string]any, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "x", "namespace": "ns", "generation": generation}}}
	if status != nil {
		o.Object["status"] = status
	}
	if spec != nil {
		o.Object["spec"] = spec
	}
	return o
}

func conds(typ, status string) map[string]any {
	return map[string]any{"conditions": []any{map[string]any{"type": typ, "status": status, "message": "backoff limit exceeded"}}}
}

func applierFor(t *testing.T, objs ...runtime.Object) (*Applier, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	jobs := schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{jobs: "JobList", cms: "ConfigMapList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	a, err := NewApplier(ApplierConfig{Client: client, Mapper: mapper, FieldManager: "test"})
	require.NoError(t, err)
	return a, client
}

func manifestOf(o *unstructured.Unstructured) *manifest.Manifest {
	return &manifest.Manifest{File: "0000_10_x.yaml", Document: 1, GVK: o.GroupVersionKind(), Object: o}
}

// Ready judges the object the cluster holds, not the manifest's.
func TestApplierReadinessReadsTheObject(t *testing.T) {
	ctx := context.Background()
	a, _ := applierFor(t, obj("batch/v1", "Job", 1, conds("Complete", "True"), nil))
	require.NoError(t, a.Ready(ctx, manifestOf(obj("batch/v1", "Job", 1, nil, nil))), "the Job in the cluster has completed")
	err := a.Ready(ctx, manifestOf(obj("v1", "ConfigMap", 1, nil, nil)))
	assert.True(t, apierrors.IsNotFound(err), "an object that is not there is the API server's NotFound: %v", err)
	err = a.Ready(ctx, manifestOf(obj("apps/v1", "Deployment", 1, nil, nil)))
	assert.ErrorContains(t, err, "kube: mapping apps/v1, Kind=Deployment", "a kind the mapper does not know is an error")
}

// TestApplierDeleteOfAnObjectBeingDeletedIsNotFound: an object a finalizer holds
// after a delete is not deleted again: Delete answers NotFound, which the worker
// counts as no deletion, and sends no second delete.
func TestApplierDeleteOfAnObjectBeingDeletedIsNotFound(t *testing.T) {
	cm := obj("v1", "ConfigMap", 1, nil, nil)
	now := metav1.Now()
	cm.SetDeletionTimestamp(&now)
	cm.SetFinalizers([]string{"example.com/hold"})
	a, client := applierFor(t, cm)
	err := a.Delete(context.Background(), manifestOf(cm))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.ErrorContains(t, err, `ConfigMap "x" is being deleted`)
	for _, action := range client.Actions() {
		assert.NotEqual(t, "delete", action.GetVerb())
	}
}

// TestApplierDeleteOfAnObjectAlreadyGoneIsNotFound: the worker tells a deletion from
// an object already gone by the API server's NotFound, which Delete returns as it is.
func TestApplierDeleteOfAnObjectAlreadyGoneIsNotFound(t *testing.T) {
	cm := obj("v1", "ConfigMap", 1, nil, nil)
	a, client := applierFor(t, cm)
	ctx := context.Background()
	require.NoError(t, a.Delete(ctx, manifestOf(cm)))
	_, err := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("ns").Get(ctx, "x", metav1.GetOptions{})
	require.Error(t, err)
	err = a.Delete(ctx, manifestOf(cm))
	assert.True(t, apierrors.IsNotFound(err), "deleting what is gone is NotFound: %v", err)
}

// discoveringMapper is a mapper that caches discovery: it knows the Widget kind only
// after a Reset, as a deferred discovery mapper knows a CRD's kind once it re-reads.
type discoveringMapper struct {
	*meta.DefaultRESTMapper
	resets int
}

func (m *discoveringMapper) Reset() {
	m.resets++
	m.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
}

// TestApplierLooksAKindUpAgainAfterResettingTheMapper: a kind the mapper does not know
// is looked up once more after resetting a mapper that caches discovery, so that a
// kind a CRD registered since is found; a mapper that cannot reset answers NoMatch,
// naming the kind.
func TestApplierLooksAKindUpAgainAfterResettingTheMapper(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	widget := obj("example.com/v1", "Widget", 1, nil, nil)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgets: "WidgetList"}, widget)
	ctx := context.Background()

	mapper := &discoveringMapper{DefaultRESTMapper: meta.NewDefaultRESTMapper(nil)}
	got, err := dynamicApply{client: client, mapper: mapper}.Get(ctx, widget.GroupVersionKind(), "ns", "x")
	require.NoError(t, err)
	assert.Equal(t, "x", got.GetName())
	assert.Equal(t, 1, mapper.resets)

	_, err = dynamicApply{client: client, mapper: meta.NewDefaultRESTMapper(nil)}.Get(ctx, widget.GroupVersionKind(), "ns", "x")
	assert.True(t, meta.IsNoMatchError(err), "%v", err)
	assert.ErrorContains(t, err, `no matches for kind "Widget" in version "example.com/v1"`)
}

func TestNewApplierRejectsBadInput(t *testing.T) {
	var typedNil *dynamicfake.FakeDynamicClient
	mapper := meta.NewDefaultRESTMapper(nil)
	client := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	for name, cfg := range map[string]ApplierConfig{
		"nil client":       {Mapper: mapper, FieldManager: "m"},
		"typed-nil client": {Client: typedNil, Mapper: mapper, FieldManager: "m"},
		"nil mapper":       {Client: client, FieldManager: "m"},
		"no field manager": {Client: client, Mapper: mapper},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := NewApplier(cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

func TestLatestStatusWriterWritesOverTheCurrentVersion(t *testing.T) {
	ctx := context.Background()
	client := newConfigMaps(t)
	store, err := NewConfigMapStatusStore[engineStatus](client.CoreV1(), "ns", "s", "")
	require.NoError(t, err)
	w := LatestStatusWriter[engineStatus]{Store: store}
	require.NoError(t, w.WriteStatus(ctx, engineStatus{Revision: 1}), "the first write creates the ConfigMap")
	require.NoError(t, w.WriteStatus(ctx, engineStatus{Revision: 2}))
	got, _, err := store.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Revision)
	assert.True(t, errors.Is(LatestStatusWriter[engineStatus]{}.WriteStatus(ctx, engineStatus{}), converge.ErrInvalid))
}

// recordingApply is an ApplyClient on a map of objects that records what
// it applies and deletes.
type recordingApply struct {
	objs    map[string]*unstructured.Unstructured
	applied []string
	deleted []string
}

func (r *recordingApply) Get(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	if o, ok := r.objs[gvk.Kind+" "+namespace+"/"+name]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: gvk.Kind}, name)
}

func (r *recordingApply) Apply(_ context.Context, obj *unstructured.Unstructured, fieldManager string, force bool) error {
	r.applied = append(r.applied, fmt.Sprintf("%s %s/%s as %s force=%t", obj.GetKind(), obj.GetNamespace(), obj.GetName(), fieldManager, force))
	return nil
}

func (r *recordingApply) Delete(_ context.Context, gvk schema.GroupVersionKind, namespace, name string) error {
	r.deleted = append(r.deleted, gvk.Kind+" "+namespace+"/"+name)
	return apierrors.NewNotFound(schema.GroupResource{Resource: gvk.Kind}, name)
}

// TestApplierForKeepsEveryRuleOnAnyApplyClient drives the applier through
// an ApplyClient of its own: the field manager and force, the Job applied
// only while it does not exist and readiness are the Applier's own, not the
// client's; NotFound on delete is the client's, passed on.
func TestApplierForKeepsEveryRuleOnAnyApplyClient(t *testing.T) {
	ctx := context.Background()
	job := obj("batch/v1", "Job", 1, conds("Complete", "True"), nil)
	deploy := obj("apps/v1", "Deployment", 2, map[string]any{"observedGeneration": int64(1)}, nil)
	client := &recordingApply{objs: map[string]*unstructured.Unstructured{"Job ns/x": job, "Deployment ns/x": deploy}}
	a, err := NewApplierFor(client, ApplierConfig{FieldManager: "op", Force: true})
	require.NoError(t, err)

	require.NoError(t, a.Apply(ctx, manifestOf(obj("v1", "ConfigMap", 1, nil, nil)), payload.StateReconciling))
	require.NoError(t, a.Apply(ctx, manifestOf(job), payload.StateReconciling), "an existing Job is left as it is")
	assert.Equal(t, []string{"ConfigMap ns/x as op force=true"}, client.applied)
	assert.True(t, apierrors.IsNotFound(a.Delete(ctx, manifestOf(job))), "deleting what is gone is the client's NotFound")
	assert.Equal(t, []string{"Job ns/x"}, client.deleted)
	require.NoError(t, a.Ready(ctx, manifestOf(job)))
	assert.ErrorIs(t, a.Ready(ctx, manifestOf(deploy)), ErrNotReady)
}

func TestNewApplierForRejectsBadInput(t *testing.T) {
	var typedNil *recordingApply
	tests := []struct {
		name   string
		client ApplyClient
		cfg    ApplierConfig
	}{
		{name: "nil client", cfg: ApplierConfig{FieldManager: "m"}},
		{name: "typed-nil client", client: typedNil, cfg: ApplierConfig{FieldManager: "m"}},
		{name: "a dynamic client beside the apply client", client: &recordingApply{},
			cfg: ApplierConfig{Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), FieldManager: "m"}},
		{name: "a mapper beside the apply client", client: &recordingApply{}, cfg: ApplierConfig{Mapper: meta.NewDefaultRESTMapper(nil), FieldManager: "m"}},
		{name: "no field manager", client: &recordingApply{}},
		{name: "a take-over through a client that cannot patch", client: &recordingApply{}, cfg: ApplierConfig{FieldManager: "m", TakeOver: HandEditManagers()}},
		{name: "a take-over of the field manager itself", client: &patchingApply{}, cfg: ApplierConfig{FieldManager: "m", TakeOver: []string{"m"}}},
		{name: "a take-over of an empty manager", client: &patchingApply{}, cfg: ApplierConfig{FieldManager: "m", TakeOver: []string{""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewApplierFor(tt.client, tt.cfg)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// An Applier answers a nil manifest, a manifest without an object, and its
// own nil or zero value with converge.ErrInvalid, never a panic.
func TestApplierRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	made, err := NewApplierFor(&recordingApply{}, ApplierConfig{FieldManager: "m"})
	require.NoError(t, err)
	good := manifestOf(obj("v1", "ConfigMap", 1, nil, nil))
	tests := []struct {
		name string
		a    *Applier
		m    *manifest.Manifest
	}{
		{name: "nil manifest", a: made},
		{name: "manifest without an object", a: made, m: &manifest.Manifest{GVK: good.GVK}},
		{name: "nil applier", m: good},
		{name: "zero applier", a: &Applier{}, m: good},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorIs(t, tt.a.Apply(ctx, tt.m, payload.StateReconciling), converge.ErrInvalid)
			assert.ErrorIs(t, tt.a.Delete(ctx, tt.m), converge.ErrInvalid)
			assert.ErrorIs(t, tt.a.Ready(ctx, tt.m), converge.ErrInvalid)
		})
	}
}
