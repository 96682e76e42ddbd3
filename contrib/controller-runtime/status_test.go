package crconverge

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/converge-dev/converge"
	cvfake "github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

// engineStatus stands for an engine's Status.
type engineStatus struct {
	Revision int64    `json:"revision,omitempty"`
	Nodes    []string `json:"nodes,omitempty"`
}

var widgetGVK = schema.GroupVersionKind{Group: "test.converge.dev", Version: "v1", Kind: "Widget"}

func newWidget(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "v1", "spec", "version")
	return u
}

// widget is Widget as a Go type for the fake client's scheme: the fake
// client does not check the resource version of a status update of an
// unstructured object whose kind its scheme does not know (it shares the
// stored object's map with the update), while the API server does.
type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              map[string]any `json:"spec,omitempty"`
	Status            map[string]any `json:"status,omitempty"`
}

func (w *widget) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = runtime.DeepCopyJSON(w.Spec)
	out.Status = runtime.DeepCopyJSON(w.Status)
	return &out
}

// newFakeClient returns controller-runtime's fake client, which enforces
// resource versions, holding objs, with Widget's status as a subresource.
func newFakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(widgetGVK, meta.RESTScopeNamespace)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	scheme.AddKnownTypeWithName(widgetGVK, &widget{})
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithStatusSubresource(newWidget("", "")).WithObjects(objs...).Build()
}

func TestObjectStatusStoreRoundTripsAtItsPath(t *testing.T) {
	tests := []struct {
		name string
		path []string
		// want is the widget's status after the write.
		want map[string]any
	}{
		{
			name: "the whole status by default",
			want: map[string]any{"revision": int64(3), "nodes": []any{"a", "b"}},
		},
		{
			name: "a field of the status, beside the host's own fields",
			path: []string{"status", "engine"},
			want: map[string]any{"observedGeneration": int64(1), "engine": map[string]any{"revision": int64(3), "nodes": []any{"a", "b"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			w := newWidget("ns", "w")
			require.NoError(t, unstructured.SetNestedField(w.Object, int64(1), "status", "observedGeneration"))
			c := newFakeClient(t, w)
			s, err := NewObjectStatusStore[engineStatus](c, widgetGVK, client.ObjectKey{Namespace: "ns", Name: "w"}, tt.path...)
			require.NoError(t, err)

			got, rv, err := s.GetStatus(ctx)
			require.NoError(t, err)
			assert.Zero(t, got, "an empty path is the zero status")
			rv1, err := s.UpdateStatus(ctx, engineStatus{Revision: 3, Nodes: []string{"a", "b"}}, rv)
			require.NoError(t, err)
			assert.NotEqual(t, rv, rv1, "a write returns the new resource version")

			got, rv2, err := s.GetStatus(ctx)
			require.NoError(t, err)
			assert.Equal(t, engineStatus{Revision: 3, Nodes: []string{"a", "b"}}, got)
			assert.Equal(t, rv1, rv2)

			stored := newWidget("ns", "w")
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "w"}, stored))
			assert.Equal(t, tt.want, stored.Object["status"])
			assert.Equal(t, map[string]any{"version": "v1"}, stored.Object["spec"], "the spec is not the store's")
		})
	}
}

func TestObjectStatusStoreReturnsTheAPIServersConflict(t *testing.T) {
	tests := []struct {
		name string
		// race changes the widget behind the store's back.
		race func(ctx context.Context, c client.Client) error
	}{
		{
			name: "another writer's status",
			race: func(ctx context.Context, c client.Client) error {
				w := newWidget("ns", "w")
				if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
					return err
				}
				_ = unstructured.SetNestedField(w.Object, int64(9), "status", "revision")
				return c.Status().Update(ctx, w)
			},
		},
		{
			name: "a spec change",
			race: func(ctx context.Context, c client.Client) error {
				w := newWidget("ns", "w")
				if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
					return err
				}
				_ = unstructured.SetNestedField(w.Object, "v2", "spec", "version")
				return c.Update(ctx, w)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := newFakeClient(t, newWidget("ns", "w"))
			s, err := NewObjectStatusStore[engineStatus](c, widgetGVK, client.ObjectKey{Namespace: "ns", Name: "w"})
			require.NoError(t, err)
			_, rv, err := s.GetStatus(ctx)
			require.NoError(t, err)
			require.NoError(t, tt.race(ctx, c))

			_, err = s.UpdateStatus(ctx, engineStatus{Revision: 1}, rv)
			assert.True(t, apierrors.IsConflict(err), "a write at a stale version is the API server's 409: %v", err)
			assert.True(t, converge.IsConflict(err))

			_, rv, err = s.GetStatus(ctx)
			require.NoError(t, err)
			_, err = s.UpdateStatus(ctx, engineStatus{Revision: 1}, rv)
			assert.NoError(t, err, "a write after reading again succeeds")
		})
	}
}

func TestObjectStatusStoreOfAMissingObjectIsNotFound(t *testing.T) {
	s, err := NewObjectStatusStore[engineStatus](newFakeClient(t), widgetGVK, client.ObjectKey{Namespace: "ns", Name: "gone"})
	require.NoError(t, err)
	_, _, err = s.GetStatus(context.Background())
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestConfigMapStatusStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t)
	key := client.ObjectKey{Namespace: "ns", Name: "engine-status"}
	s, err := NewConfigMapStatusStore[engineStatus](c, key, "")
	require.NoError(t, err)

	got, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Zero(t, got, "no ConfigMap is the zero status")
	assert.Empty(t, rv)

	rv1, err := s.UpdateStatus(ctx, engineStatus{Revision: 1, Nodes: []string{"a"}}, rv)
	require.NoError(t, err, "version \"\" creates the ConfigMap")
	require.NotEmpty(t, rv1)

	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 9}, "")
	assert.True(t, apierrors.IsConflict(err), "a second create is a 409: %v", err)

	cm := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, key, cm))
	cm.Labels = map[string]string{"owner": "someone"}
	cm.Data["other"] = "kept"
	require.NoError(t, c.Update(ctx, cm))

	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv1)
	assert.True(t, apierrors.IsConflict(err), "a write over another writer's change is a 409: %v", err)

	got, rv2, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, engineStatus{Revision: 1, Nodes: []string{"a"}}, got)
	rv3, err := s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv2)
	require.NoError(t, err)
	assert.NotEqual(t, rv2, rv3)

	rv4, err := s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv3)
	require.NoError(t, err)
	assert.Equal(t, rv3, rv4, "an unchanged status writes nothing")

	cm = &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, key, cm))
	assert.Equal(t, "kept", cm.Data["other"])
	assert.Equal(t, "someone", cm.Labels["owner"])
	assert.JSONEq(t, `{"revision":2}`, cm.Data["status.json"])
}

func TestNewStoresRejectBadInput(t *testing.T) {
	var typedNil *fakeNilClient
	good := newFakeClient(t)
	tests := []struct {
		name   string
		client client.Client
		gvk    schema.GroupVersionKind
		key    client.ObjectKey
		// objectOK and configMapOK say which constructor accepts the input.
		objectOK, configMapOK bool
	}{
		{name: "nil client", gvk: widgetGVK, key: client.ObjectKey{Namespace: "ns", Name: "a"}},
		{name: "typed-nil client", client: typedNil, gvk: widgetGVK, key: client.ObjectKey{Namespace: "ns", Name: "a"}},
		{name: "empty name", client: good, gvk: widgetGVK, key: client.ObjectKey{Namespace: "ns"}},
		{name: "empty kind", client: good, gvk: widgetGVK.GroupVersion().WithKind(""), key: client.ObjectKey{Namespace: "ns", Name: "a"}, configMapOK: true},
		{name: "cluster-scoped object, no ConfigMap without a namespace", client: good, gvk: widgetGVK, key: client.ObjectKey{Name: "a"}, objectOK: true},
		{name: "namespaced", client: good, gvk: widgetGVK, key: client.ObjectKey{Namespace: "ns", Name: "a"}, objectOK: true, configMapOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewObjectStatusStore[engineStatus](tt.client, tt.gvk, tt.key)
			assert.Equal(t, tt.objectOK, err == nil, "NewObjectStatusStore: %v", err)
			if err != nil {
				assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
			}
			_, err = NewConfigMapStatusStore[engineStatus](tt.client, tt.key, "")
			assert.Equal(t, tt.configMapOK, err == nil, "NewConfigMapStatusStore: %v", err)
			if err != nil {
				assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
			}
		})
	}
}

// fakeNilClient is a client.Client only as a typed nil.
type fakeNilClient struct{ client.Client }

func TestConfigMapClientCreatesInItsNamespace(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t)
	cc, err := NewConfigMapClient(c, client.ObjectKey{Namespace: "ns", Name: "cm"})
	require.NoError(t, err)
	out, err := cc.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}})
	require.NoError(t, err)
	assert.Equal(t, "ns", out.Namespace)
	assert.NotEmpty(t, out.ResourceVersion, "Create returns the ConfigMap as created")
}

// The store's own 409 (a write over a version the object is no longer at)
// names the resource as the client's REST mapper maps the kind, as the API
// server's 409 does, even where the plural is not the kind's guessed one.
func TestObjectStatusStoreConflictNamesTheMappedResource(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.AddSpecific(widgetGVK, widgetGVK.GroupVersion().WithResource("widgetries"),
		widgetGVK.GroupVersion().WithResource("widgetry"), meta.RESTScopeNamespace)
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(widgetGVK, &widget{})
	c := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).
		WithStatusSubresource(newWidget("", "")).WithObjects(newWidget("ns", "w")).Build()
	s, err := NewObjectStatusStore[engineStatus](c, widgetGVK, client.ObjectKey{Namespace: "ns", Name: "w"})
	require.NoError(t, err)

	_, err = s.UpdateStatus(context.Background(), engineStatus{Revision: 1}, "12345")
	require.True(t, apierrors.IsConflict(err), "%v", err)
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	assert.Equal(t, "test.converge.dev", status.Status().Details.Group)
	assert.Equal(t, "widgetries", status.Status().Details.Kind, "the API server's 409 names the resource in Details.Kind")
	assert.Contains(t, err.Error(), `widgetries.test.converge.dev "w"`)
}

// kube.LatestStatusWriter over either store of this package is a payload
// status writer that passes fake.TestPayloadStatusWriter on the fake client.
func TestLatestStatusWriterConforms(t *testing.T) {
	tests := []struct {
		name     string
		newStore func(c client.Client) (kube.StatusReadWriter[payload.Status], error)
	}{
		{name: "ConfigMap, created by the first write", newStore: func(c client.Client) (kube.StatusReadWriter[payload.Status], error) {
			return NewConfigMapStatusStore[payload.Status](c, client.ObjectKey{Namespace: "ns", Name: "payload-status"}, "")
		}},
		{name: "custom resource, status.payload", newStore: func(c client.Client) (kube.StatusReadWriter[payload.Status], error) {
			return NewObjectStatusStore[payload.Status](c, widgetGVK, client.ObjectKey{Namespace: "ns", Name: "w"}, "status", "payload")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newFakeClient(t, newWidget("ns", "w"))
			stores := make([]kube.StatusReadWriter[payload.Status], 3)
			for i := range stores {
				s, err := tt.newStore(c)
				require.NoError(t, err)
				stores[i] = s
			}
			read := func(ctx context.Context) (payload.Status, error) {
				st, _, err := stores[2].GetStatus(ctx)
				return st, err
			}
			require.NoError(t, cvfake.TestPayloadStatusWriter(context.Background(),
				kube.LatestStatusWriter[payload.Status]{Store: stores[0]},
				kube.LatestStatusWriter[payload.Status]{Store: stores[1]}, read))
		})
	}
}
