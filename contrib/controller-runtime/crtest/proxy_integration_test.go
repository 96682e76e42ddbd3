//go:build integration

package crtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/testenv"
)

// copier is the operator under test: it copies each ConfigMap's value to
// its copy.
type copier struct{ client client.Client }

func (c copier) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cm corev1.ConfigMap
	if err := c.client.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cm.Data["copy"] == cm.Data["value"] {
		return reconcile.Result{}, nil
	}
	cm.Data["copy"] = cm.Data["value"]
	return reconcile.Result{}, c.client.Update(ctx, &cm)
}

// startInstance starts an instance of the copier as identity on proxy; the
// function returned stops it and waits for it.
func startInstance(t *testing.T, proxy *testenv.FaultProxy, identity, ns string) (stop func()) {
	t.Helper()
	mgr, err := NewProxyManager(proxy, identity, manager.Options{Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}}})
	require.NoError(t, err)
	require.NoError(t, builder.ControllerManagedBy(mgr).For(&corev1.ConfigMap{}).Complete(copier{client: mgr.GetClient()}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() {
		cancel()
		require.NoError(t, <-done)
	}
}

// An instance cut off after its first write is stopped and a fresh one
// started from the cluster alone; under conflicts and closed watches the
// fresh one finishes the work, as a snapshot shows.
func TestProxyManagerInstancesCrashAndResume(t *testing.T) {
	ctx := context.Background()
	env := &envtest.Environment{}
	cfg, err := Start(ctx, env)
	require.NoError(t, err)
	defer func() { require.NoError(t, env.Stop()) }()
	proxy, err := testenv.NewFaultProxy(cfg, testenv.FaultPlan{Seed: 1, Faults: []testenv.Fault{
		{Class: testenv.Conflict, Percent: 30},
		{Class: testenv.WatchClose, Percent: 50, Events: 3},
	}})
	require.NoError(t, err)
	defer func() { require.NoError(t, proxy.Close()) }()
	admin, err := client.New(cfg, client.Options{})
	require.NoError(t, err)
	const ns = "copier"
	require.NoError(t, admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for _, name := range []string{"a", "b", "c", "d"} {
		require.NoError(t, admin.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"value": name}}))
	}

	proxy.CrashAfter("instance-1", 1)
	stop := startInstance(t, proxy, "instance-1", ns)
	select {
	case <-proxy.Crashed("instance-1"):
	case <-time.After(time.Minute):
		t.Fatal("instance-1 never wrote")
	}
	stop()
	stop = startInstance(t, proxy, "instance-2", ns)
	defer stop()

	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	var snap *testenv.Snapshot
	require.Eventually(t, func() bool {
		snap, err = proxy.Snapshot(ctx, ns, configMaps)
		require.NoError(t, err)
		for _, cm := range snap.Objects[configMaps] {
			if cm.Object["data"].(map[string]any)["copy"] != cm.GetName() {
				return false
			}
		}
		return true
	}, time.Minute, 50*time.Millisecond, "the fresh instance never finished: %s", snap)
	assert.Equal(t, 1, proxy.Counts()[testenv.Crash])
}
