package shop_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
