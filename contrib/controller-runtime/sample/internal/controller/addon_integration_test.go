//go:build integration

package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
)

// sampleScheme returns a scheme of the built-in types and the sample's.
func sampleScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	return scheme
}

// apiClient returns a client that reads from the API server.
func apiClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(env.Config, client.Options{Scheme: sampleScheme(t)})
	require.NoError(t, err)
	return c
}

// startManager runs a manager with the reconcilers setup registers until
// the test ends.
func startManager(t *testing.T, setup func(ctrl.Manager) error) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 sampleScheme(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, setup(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// newNamespace creates a namespace of the test's own, so that it runs again
// with -count on the same apiserver.
func newNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "sample-"}}
	require.NoError(t, c.Create(context.Background(), ns))
	return ns.Name
}

// eventually polls cond every 100ms until it holds, for at most a minute: the
// manager works asynchronously, and a minute is far beyond what it needs.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, cond)
	require.NoError(t, err, what)
}

// TestAddonControllerLifecycle installs, upgrades and uninstalls an add-on
// through the manager, on the real API server.
func TestAddonControllerLifecycle(t *testing.T) {
	startManager(t, func(mgr ctrl.Manager) error {
		_, err := crconverge.NewAddonController(mgr, AddonOptions(ConfigMapDriver{Client: mgr.GetClient()}))
		return err
	})
	ctx := context.Background()
	c := apiClient(t)
	ns := newNamespace(t, c)
	a := &v1alpha1.Addon{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mesh"},
		Spec:       v1alpha1.AddonSpec{Version: "v1"},
	}
	require.NoError(t, c.Create(ctx, a))
	key := client.ObjectKeyFromObject(a)

	running := func(version string) func(ctx context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			got := &v1alpha1.Addon{}
			if err := c.Get(ctx, key, got); err != nil {
				return false, err
			}
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon-mesh"}, cm); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return got.Status.Phase == addon.PhaseRunning && got.Status.InstalledVersion == version &&
				cm.Data["version"] == version, nil
		}
	}
	eventually(t, "the add-on runs v1, installed by the driver", running("v1"))

	require.NoError(t, c.Get(ctx, key, a))
	require.Contains(t, a.Finalizers, addonFinalizer, "the controller keeps the Addon until it is uninstalled")
	a.Spec.Version = "v2"
	require.NoError(t, c.Update(ctx, a))
	eventually(t, "the add-on is upgraded to v2", running("v2"))

	eventually(t, "the engine's events are recorded about the Addon", func(ctx context.Context) (bool, error) {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Addon" && e.Regarding.Name == "mesh" && e.ReportingController == "addon-controller" {
				return true, nil
			}
		}
		return false, nil
	})

	require.NoError(t, c.Delete(ctx, a))
	eventually(t, "the add-on is uninstalled and the Addon goes", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, key, &v1alpha1.Addon{})
		if !apierrors.IsNotFound(err) {
			return false, client.IgnoreNotFound(err)
		}
		err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "addon-mesh"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
