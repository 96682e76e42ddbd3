package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// engineStatus stands for an engine's Status: nested lists, conditions,
// omitted empty fields and an int64 beyond float64's exact range.
type engineStatus struct {
	Revision   int64              `json:"revision,omitempty"`
	Nodes      []string           `json:"nodes,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

func newWidgets(t *testing.T, status map[string]any) *dynamicfake.FakeDynamicClient {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns"},
		"spec":     map[string]any{"size": int64(3)},
	}}
	if status != nil {
		obj.Object["status"] = status
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{widgets: "WidgetList"})
	fake.EnforceResourceVersions(client)
	_, err := client.Resource(widgets).Namespace("ns").Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	return client
}

func TestObjectStatusStoreRoundTripsAtItsPath(t *testing.T) {
	tests := []struct {
		name      string
		path      []string
		existing  map[string]any
		wantOther bool
	}{
		{name: "the whole status of an object without one", path: nil},
		{name: "the whole status replaces what was there", path: []string{"status"}, existing: map[string]any{"old": "gone"}},
		{name: "a sub-path keeps the rest of the status", path: []string{"status", "engine"}, existing: map[string]any{"other": "kept"}, wantOther: true},
		{name: "a sub-path of an object without status", path: []string{"status", "engine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			client := newWidgets(t, tt.existing)
			s, err := NewObjectStatusStore[engineStatus](client, widgets, "ns", "w", tt.path...)
			require.NoError(t, err)

			got, rv, err := s.GetStatus(ctx)
			require.NoError(t, err)
			require.NotEmpty(t, rv)
			if len(tt.path) > 1 {
				assert.Zero(t, got)
			}
			want := engineStatus{Revision: 1<<53 + 1, Nodes: []string{"a", "b"}, Conditions: []metav1.Condition{{
				Type: "Ready", Status: metav1.ConditionTrue, Reason: "AsExpected", LastTransitionTime: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			}}}
			rv1, err := s.UpdateStatus(ctx, want, rv)
			require.NoError(t, err)
			assert.NotEqual(t, rv, rv1)

			got, rv2, err := s.GetStatus(ctx)
			require.NoError(t, err)
			assert.Equal(t, rv1, rv2)
			assert.True(t, equality.Semantic.DeepEqual(want, got), "read back %+v, wrote %+v", got, want)

			obj, err := client.Resource(widgets).Namespace("ns").Get(ctx, "w", metav1.GetOptions{})
			require.NoError(t, err)
			other, _, _ := unstructured.NestedString(obj.Object, "status", "other")
			assert.Equal(t, tt.wantOther, other == "kept")
			_, hasOld, _ := unstructured.NestedString(obj.Object, "status", "old")
			assert.False(t, hasOld, "the whole status is replaced")
			size, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
			assert.Equal(t, int64(3), size, "the spec is untouched")
		})
	}
}

func TestObjectStatusStoreConflicts(t *testing.T) {
	ctx := context.Background()
	client := newWidgets(t, nil)
	s, err := NewObjectStatusStore[engineStatus](client, widgets, "ns", "w")
	require.NoError(t, err)
	_, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)

	t.Run("a stale version is the API server's 409", func(t *testing.T) {
		_, err := s.UpdateStatus(ctx, engineStatus{Revision: 1}, "1")
		assert.True(t, apierrors.IsConflict(err), "%v", err)
	})
	t.Run("another writer between the read and the write is a 409", func(t *testing.T) {
		other, err := NewObjectStatusStore[engineStatus](client, widgets, "ns", "w")
		require.NoError(t, err)
		_, orv, err := other.GetStatus(ctx)
		require.NoError(t, err)
		_, err = other.UpdateStatus(ctx, engineStatus{Revision: 7}, orv)
		require.NoError(t, err)

		_, err = s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv)
		assert.True(t, apierrors.IsConflict(err), "%v", err)
		got, _, err := s.GetStatus(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(7), got.Revision, "the losing write changed nothing")
	})
	t.Run("a missing object is NotFound", func(t *testing.T) {
		gone, err := NewObjectStatusStore[engineStatus](client, widgets, "ns", "missing")
		require.NoError(t, err)
		_, _, err = gone.GetStatus(ctx)
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	})
}

func TestNewObjectStatusStoreForRejectsANilClient(t *testing.T) {
	var typedNil *dynamicObject
	for _, c := range []ObjectClient{nil, typedNil} {
		_, err := NewObjectStatusStoreFor[engineStatus](c, "widget w")
		assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
	}
}

func TestNewObjectStatusStoreRejectsBadInput(t *testing.T) {
	var typedNil *dynamicfake.FakeDynamicClient
	client := newWidgets(t, nil)
	tests := []struct {
		name   string
		client dynamic.Interface
		gvr    schema.GroupVersionResource
		obj    string
		path   []string
	}{
		{name: "nil client", client: nil, gvr: widgets, obj: "w"},
		{name: "typed-nil client", client: typedNil, gvr: widgets, obj: "w"},
		{name: "empty name", client: client, gvr: widgets},
		{name: "empty resource", client: client, obj: "w"},
		{name: "a path outside status", client: client, gvr: widgets, obj: "w", path: []string{"spec"}},
		{name: "an empty path element", client: client, gvr: widgets, obj: "w", path: []string{"status", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewObjectStatusStore[engineStatus](tt.client, tt.gvr, "ns", tt.obj, tt.path...)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// staticObject is an ObjectClient whose object is always obj.
type staticObject struct{ obj *unstructured.Unstructured }

func (s staticObject) Get(context.Context) (*unstructured.Unstructured, error) {
	return s.obj.DeepCopy(), nil
}

func (s staticObject) UpdateStatus(_ context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return obj.DeepCopy(), nil
}

// namedObject is an ObjectClient that names its resource.
type namedObject struct {
	ObjectClient
	resource schema.GroupResource
}

func (n namedObject) GroupResource() schema.GroupResource { return n.resource }

// The store's own 409, for a version it knows is stale, is the API server's:
// it names the resource (widgets.example.com "w"), never the kind.
func TestObjectStatusStoreConflictNamesTheResource(t *testing.T) {
	object := func(apiVersion, kind string) staticObject {
		return staticObject{&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": "w", "namespace": "ns", "resourceVersion": "5"},
		}}}
	}
	dynamicStore := func(t *testing.T) *ObjectStatusStore[engineStatus] {
		s, err := NewObjectStatusStore[engineStatus](newWidgets(t, nil), widgets, "ns", "w")
		require.NoError(t, err)
		return s
	}
	storeFor := func(c ObjectClient) func(t *testing.T) *ObjectStatusStore[engineStatus] {
		return func(t *testing.T) *ObjectStatusStore[engineStatus] {
			s, err := NewObjectStatusStoreFor[engineStatus](c, "ns/w")
			require.NoError(t, err)
			return s
		}
	}
	tests := []struct {
		name  string
		store func(t *testing.T) *ObjectStatusStore[engineStatus]
		want  schema.GroupResource
	}{
		{name: "the dynamic client's resource", store: dynamicStore, want: schema.GroupResource{Group: "example.com", Resource: "widgets"}},
		{name: "a client's own name for its resource wins over the kind",
			store: storeFor(namedObject{ObjectClient: object("example.com/v1", "Widget"), resource: schema.GroupResource{Group: "example.com", Resource: "gizmos"}}),
			want:  schema.GroupResource{Group: "example.com", Resource: "gizmos"}},
		{name: "a client naming no resource falls back to the kind",
			store: storeFor(namedObject{ObjectClient: object("example.com/v1", "Widget")}),
			want:  schema.GroupResource{Group: "example.com", Resource: "widgets"}},
		{name: "a kind ending in y is guessed as the API server's plural", store: storeFor(object("example.com/v1", "Policy")),
			want: schema.GroupResource{Group: "example.com", Resource: "policies"}},
		{name: "a core kind has no group", store: storeFor(object("v1", "ConfigMap")), want: schema.GroupResource{Resource: "configmaps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := tt.store(t)
			_, rv, err := s.GetStatus(ctx)
			require.NoError(t, err)
			_, err = s.UpdateStatus(ctx, engineStatus{Revision: 1}, rv+"0")
			require.True(t, apierrors.IsConflict(err), "%v", err)
			var status apierrors.APIStatus
			require.True(t, errors.As(err, &status))
			want := apierrors.NewConflict(tt.want, "w", errors.New("stale")).Status()
			assert.Equal(t, want.Details, status.Status().Details)
			assert.Equal(t, want.Reason, status.Status().Reason)
			assert.Equal(t, want.Code, status.Status().Code)
			assert.Contains(t, err.Error(), "Operation cannot be fulfilled on "+tt.want.String()+` "w": `)
		})
	}
}
