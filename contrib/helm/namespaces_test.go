package helmconverge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// revisions counts the revisions of release mesh kept in storageNamespace.
func (w *world) revisions(storageNamespace string) int {
	w.t.Helper()
	cfg, err := w.cluster.Helm(storageNamespace, "tke", nil)
	require.NoError(w.t, err)
	h, err := action.NewHistory(cfg).Run("mesh")
	if err != nil {
		return 0
	}
	return len(h)
}

// TestReleaseStorageNamespace: a release whose records are kept apart from
// its namespace is installed, checked, inspected, upgraded, rolled back and
// uninstalled there, its objects in its own namespace; the release's
// namespace holds none of its records.
func TestReleaseStorageNamespace(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{Release: func(addon.Request) (helmconverge.Release, error) {
		return helmconverge.Release{Namespace: "tke", Name: "mesh", StorageNamespace: "helm-system"}, nil
	}})
	v1, v2 := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2})
	installed, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	w.rollOut()
	h, err := w.driver.Health(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, addon.HealthHealthy, h, "health reads the records where they are kept")
	inst, err := w.driver.Inspect(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, addon.Installed{Version: v1, Revision: "1"}, inst)
	_, err = w.driver.Upgrade(ctx, req(v1, v2))
	require.NoError(t, err)
	assert.Equal(t, int64(2), replicas(t, w.get(deployments, "mesh")), "the objects go to the release's namespace")
	r := req(v2, v1)
	r.Rollback, r.Revision = true, installed
	_, err = w.driver.Upgrade(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, 3, w.revisions("helm-system"))
	assert.Zero(t, w.revisions("tke"), "the release's namespace keeps none of its records")

	require.NoError(t, w.driver.Uninstall(ctx, req(v1, v1)))
	assert.Zero(t, w.revisions("helm-system"))
	assert.Nil(t, w.get(deployments, "mesh"))
}

// TestCreateNamespace: an install creates the release's namespace only
// when the chart says so.
func TestCreateNamespace(t *testing.T) {
	ctx := context.Background()
	for _, create := range []bool{true, false} {
		w := newWorld(t, helmconverge.Config{})
		w.settings.CreateNamespace = create
		_, err := w.driver.Install(ctx, req("", w.version(nil)))
		require.NoError(t, err)
		_, err = w.objects.Resource(namespaces).Get(ctx, "tke", metav1.GetOptions{})
		assert.Equal(t, create, err == nil, "CreateNamespace %v: %v", create, err)
	}
}

// TestReleaseFuncIsChecked: a release without a namespace is bad input.
func TestReleaseFuncIsChecked(t *testing.T) {
	w := newWorld(t, helmconverge.Config{Release: func(addon.Request) (helmconverge.Release, error) {
		return helmconverge.Release{Name: "mesh", StorageNamespace: "helm-system"}, nil
	}})
	_, err := w.driver.Install(context.Background(), req("", w.version(nil)))
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, `helm: invalid request: release "mesh" has no namespace`)
}
