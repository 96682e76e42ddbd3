package shop_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/converge-dev/converge/testenv"

	"example.com/shop"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

func TestReconcileAppliesTheSettings(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, shop.Reconcile(ctx, env.Config, "default", "3"))
	client := kubernetes.NewForConfigOrDie(env.Config)
	settings, err := client.CoreV1().ConfigMaps("default").Get(ctx, "shop-settings", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "3", settings.Data["level"])
}

// The kubeconfig reaches the same apiserver, for programs that take
// -kubeconfig.
func TestTheKubeconfigListsTheNamespaces(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	require.NoError(t, err)
	namespaces, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, ns := range namespaces.Items {
		names = append(names, ns.Name)
	}
	require.True(t, slices.Contains(names, "default"), "namespaces: %v", names)
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Under conflicts, internal errors and writes that time out after they
// committed, Reconcile retried as a controller retries it still applies
// the settings.
func TestReconcileUnderFaults(t *testing.T) {
	ctx := context.Background()
	for seed := uint64(1); seed <= 5; seed++ {
		proxy, err := testenv.NewFaultProxy(env.Config, testenv.FaultPlan{Seed: seed, Faults: []testenv.Fault{
			{Class: testenv.Conflict, Percent: 30},
			{Class: testenv.InternalError, Percent: 20},
			{Class: testenv.TimeoutAfterCommit, Percent: 30},
		}})
		require.NoError(t, err)
		level := fmt.Sprint(seed)
		for try := 1; shop.Reconcile(ctx, proxy.Config("shop"), "default", level) != nil; try++ {
			require.Less(t, try, 20, "seed %d: Reconcile never succeeds", seed)
		}
		snap, err := proxy.Snapshot(ctx, "default", configMaps)
		require.NoError(t, err)
		require.NoError(t, proxy.Close())
		settings := snap.Get(configMaps, "default", "shop-settings")
		require.NotNil(t, settings, "seed %d saw %s", seed, snap)
		require.Equal(t, level, settings.Object["data"].(map[string]any)["level"], "seed %d saw %s", seed, snap)
	}
}
