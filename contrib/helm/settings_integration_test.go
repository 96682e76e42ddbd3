//go:build integration

package helmconverge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/postrenderer"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// TestIntegrationReleaseSettings: on the real apiserver, an install creates
// the release's missing namespace (CreateNamespace), keeps the release's
// records as Secrets of its storage namespace only, applies what the
// post-renderer labelled, and drift ignores the replicas another field
// manager set once a rule names them (on both sides of the server-side
// dry-run), while a rule of another kind does not; the uninstall removes
// the records from the storage namespace.
func TestIntegrationReleaseSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	const target, store = "settings-target", "settings-store"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: store}}, metav1.CreateOptions{})
	require.NoError(t, err)
	cluster, err := helmconverge.NewCluster(env.Config)
	require.NoError(t, err)
	mesh, err := helmconverge.LoadDir("testdata/mesh")
	require.NoError(t, err)
	values := map[string]any{"replicas": 2, "password": "settings-password"}
	v1, err := helmconverge.Version(mesh, values)
	require.NoError(t, err)
	settings := helmconverge.Chart{
		CreateNamespace: true,
		PostRenderers:   []postrenderer.PostRenderer{&labeller{key: "converge.dev/post-rendered", value: "yes"}},
	}
	driver, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: cluster,
		Release: func(addon.Request) (helmconverge.Release, error) {
			return helmconverge.Release{Namespace: target, Name: "mesh", StorageNamespace: store}, nil
		},
		Charts: func(context.Context, addon.Request) (helmconverge.Chart, error) {
			ch := settings
			ch.Chart, ch.Values = mesh, values
			return ch, nil
		},
	})
	require.NoError(t, err)
	r := addon.Request{Spec: addon.Spec{Name: target + "/mesh", Generation: 1, Version: v1}, From: v1, To: v1}

	_, err = driver.Install(ctx, addon.Request{Spec: r.Spec, To: v1})
	require.NoError(t, err)
	ns, err := client.CoreV1().Namespaces().Get(ctx, target, metav1.GetOptions{})
	require.NoError(t, err, "the install created the release's namespace")
	assert.Equal(t, target, ns.Labels["name"])
	records := func(namespace string) int {
		s, err := client.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=mesh"})
		require.NoError(t, err)
		return len(s.Items)
	}
	assert.Equal(t, 1, records(store), "the records are kept in the storage namespace")
	assert.Zero(t, records(target), "and not in the release's namespace")
	dep, err := client.AppsV1().Deployments(target).Get(ctx, "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "yes", dep.Labels["converge.dev/post-rendered"], "the post-renderer's label is applied")

	patch := []byte(`{"spec":{"replicas":5}}`)
	_, err = client.AppsV1().Deployments(target).Patch(ctx, "mesh", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "horizontal-pod-autoscaler"})
	require.NoError(t, err)
	for _, tc := range []struct {
		rules   []helmconverge.IgnoreRule
		drifted bool
	}{
		{drifted: true},
		{rules: []helmconverge.IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}}}},
		{rules: []helmconverge.IgnoreRule{{Kind: "StatefulSet", Paths: []string{"/spec/replicas"}}}, drifted: true},
	} {
		settings.DriftIgnore = tc.rules
		drifted, detail, err := driver.Drift(ctx, r)
		require.NoError(t, err)
		assert.Equal(t, tc.drifted, drifted, "rules %v: %s", tc.rules, detail)
	}

	require.NoError(t, driver.Uninstall(ctx, r))
	assert.Zero(t, records(store), "the uninstall removed the records")
	_, err = client.AppsV1().Deployments(target).Get(ctx, "mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "and the Deployment")
}
