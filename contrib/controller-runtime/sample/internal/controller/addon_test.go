package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
)

// addonFinalizer keeps an Addon until its add-on is uninstalled: the
// controller's default, its group and name.
const addonFinalizer = "sample.converge.dev/addon"

// newAddonController returns the Addon controller, with the
// ConfigMapDriver, on controller-runtime's fake client (which enforces
// resource versions) holding objs, whose Addons' generations move as the
// API server moves them (crtest.WithGenerations): the engine upgrades only
// under a new generation.
func newAddonController(t *testing.T, objs ...client.Object) (controller.Controller, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c := crtest.WithGenerations(fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&v1alpha1.Addon{}).WithObjects(objs...).Build(), &v1alpha1.Addon{})
	mgr, err := crtest.NewManager(c, events.NewFakeRecorder(100))
	require.NoError(t, err)
	r, err := crconverge.NewAddonController(mgr, AddonOptions(ConfigMapDriver{Client: c}))
	require.NoError(t, err)
	return r, c
}

// reconcileUntil reconciles the Addon ns/mesh at most ten times, until done
// holds for it, and returns it.
func reconcileUntil(t *testing.T, r reconcile.Reconciler, c client.Client, done func(*v1alpha1.Addon) bool) *v1alpha1.Addon {
	t.Helper()
	key := client.ObjectKey{Namespace: "ns", Name: "mesh"}
	for range 10 {
		_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
		require.NoError(t, err)
		a := &v1alpha1.Addon{}
		if err := c.Get(context.Background(), key, a); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			require.NoError(t, err)
		}
		if done(a) {
			return a
		}
	}
	t.Fatal("the Addon did not get there in ten reconciles")
	return nil
}

func TestAddonController(t *testing.T) {
	mesh := func(version string, policy addon.Policy) *v1alpha1.Addon {
		return &v1alpha1.Addon{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "mesh", Generation: 1},
			Spec:       v1alpha1.AddonSpec{Version: version, Policy: policy},
		}
	}
	running := func(a *v1alpha1.Addon) bool { return a.Status.Phase == addon.PhaseRunning }
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{name: "a new Addon is installed and runs, kept by the finalizer", run: func(t *testing.T) {
			r, c := newAddonController(t, mesh("v1", addon.Policy{}))
			a := reconcileUntil(t, r, c, running)
			assert.Equal(t, "v1", a.Status.InstalledVersion)
			assert.Contains(t, a.Finalizers, addonFinalizer)
			cm := &corev1.ConfigMap{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "addon-mesh"}, cm))
			assert.Equal(t, "v1", cm.Data["version"])
			assert.Equal(t, "mesh", cm.OwnerReferences[0].Name, "the Addon owns its ConfigMap")
		}},
		{name: "a new version is upgraded to", run: func(t *testing.T) {
			r, c := newAddonController(t, mesh("v1", addon.Policy{}))
			a := reconcileUntil(t, r, c, running)
			a.Spec.Version = "v2"
			require.NoError(t, c.Update(context.Background(), a))
			a = reconcileUntil(t, r, c, func(a *v1alpha1.Addon) bool { return running(a) && a.Status.InstalledVersion == "v2" })
			assert.Equal(t, int64(2), a.Generation)
			cm := &corev1.ConfigMap{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "addon-mesh"}, cm))
			assert.Equal(t, "v2", cm.Data["version"])
		}},
		{name: "a deleted Addon is uninstalled, then its finalizer goes", run: func(t *testing.T) {
			r, c := newAddonController(t, mesh("v1", addon.Policy{}))
			a := reconcileUntil(t, r, c, running)
			require.NoError(t, c.Delete(context.Background(), a))
			assert.Nil(t, reconcileUntil(t, r, c, func(*v1alpha1.Addon) bool { return false }), "the Addon is gone")
			err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "addon-mesh"}, &corev1.ConfigMap{})
			assert.True(t, apierrors.IsNotFound(err), "the add-on is uninstalled: %v", err)
		}},
		{name: "an invalid policy is a terminal error until the Addon changes", run: func(t *testing.T) {
			r, _ := newAddonController(t, mesh("v1", addon.Policy{MaxRetries: ptr.To[int32](-2)}))
			_, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "mesh"}})
			assert.ErrorIs(t, err, reconcile.TerminalError(nil))
			assert.ErrorIs(t, err, converge.ErrInvalid)
		}},
		{name: "a missing Addon is nothing to do", run: func(t *testing.T) {
			r, _ := newAddonController(t)
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "mesh"}})
			assert.NoError(t, err)
			assert.Zero(t, res)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.run)
	}
}
