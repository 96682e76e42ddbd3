package crconverge

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// newApplyClient returns controller-runtime's fake client, whose REST
// mapper knows ConfigMaps and Deployments as namespaced and ClusterRoles as
// cluster-scoped.
func newApplyClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	mapper.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), meta.RESTScopeRoot)
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithObjects(objs...).Build()
}

func manifestOf(t *testing.T, obj map[string]any) *manifest.Manifest {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	return &manifest.Manifest{File: "0000_10_x.yaml", GVK: u.GroupVersionKind(), Object: u}
}

func TestApplierOnAControllerRuntimeClient(t *testing.T) {
	ctx := context.Background()
	c := newApplyClient(t)
	a, err := NewApplier(c, "op", true)
	require.NoError(t, err)
	cm := manifestOf(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "cm"}, "data": map[string]any{"k": "v"}})
	role := manifestOf(t, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"namespace": "ns", "name": "reader"}})

	require.NoError(t, a.Apply(ctx, cm, payload.StateReconciling))
	require.NoError(t, a.Apply(ctx, role, payload.StateReconciling))
	assert.Equal(t, "ns", role.Object.GetNamespace(), "Apply leaves the manifest as it is")
	got := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "cm"}, got))
	assert.Equal(t, map[string]string{"k": "v"}, got.Data)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "reader"}, &rbacv1.ClusterRole{}), "a cluster-scoped object drops the manifest's namespace")
	require.NoError(t, a.Ready(ctx, cm), "a ConfigMap is ready once it exists")

	require.NoError(t, a.Delete(ctx, role))
	assert.True(t, apierrors.IsNotFound(a.Delete(ctx, role)), "deleting what is gone is NotFound, which the worker counts as gone")
	err = c.Get(ctx, client.ObjectKey{Name: "reader"}, &rbacv1.ClusterRole{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestApplierReadinessReadsTheObject(t *testing.T) {
	replicas := int32(2)
	rolling := &appsv1.Deployment{}
	rolling.Namespace, rolling.Name, rolling.Generation = "ns", "web", 1
	rolling.Spec.Replicas = &replicas
	rolling.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 2}
	a, err := NewApplier(newApplyClient(t, rolling), "op", false)
	require.NoError(t, err)
	web := manifestOf(t, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"namespace": "ns", "name": "web"}})
	assert.ErrorIs(t, a.Ready(context.Background(), web), kube.ErrNotReady)
	unknown := manifestOf(t, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"namespace": "ns", "name": "j"}})
	assert.ErrorContains(t, a.Apply(context.Background(), unknown, payload.StateReconciling), "crconverge: mapping batch/v1, Kind=Job",
		"a kind the REST mapper does not know is an error")
}

func TestApplierForcesOwnershipOnlyWhenAsked(t *testing.T) {
	for _, force := range []bool{false, true} {
		rec := &applyRecorder{Client: newApplyClient(t)}
		a, err := NewApplier(rec, "op", force)
		require.NoError(t, err)
		cm := manifestOf(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"namespace": "ns", "name": "cm"}})
		require.NoError(t, a.Apply(context.Background(), cm, payload.StateReconciling))
		assert.Equal(t, "op", rec.opts.FieldManager)
		assert.Equal(t, force, rec.opts.Force != nil && *rec.opts.Force, "force=%t", force)
	}
}

// applyRecorder records the options of the last Apply.
type applyRecorder struct {
	client.Client
	opts client.ApplyOptions
}

func (r *applyRecorder) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	r.opts = client.ApplyOptions{}
	r.opts.ApplyOptions(opts)
	return r.Client.Apply(ctx, obj, opts...)
}

func TestNewApplierRejectsBadInput(t *testing.T) {
	var typedNil *fakeNilClient
	tests := []struct {
		name         string
		client       client.Client
		fieldManager string
	}{
		{name: "nil client", fieldManager: "op"},
		{name: "typed-nil client", client: typedNil, fieldManager: "op"},
		{name: "no field manager", client: newApplyClient(t)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewApplier(tt.client, tt.fieldManager, true)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}
