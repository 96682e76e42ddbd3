package helmconverge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rcommon "helm.sh/helm/v4/pkg/release/common"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// TestDriverInspect: Inspect reports the add-on version of the newest
// deployed revision, and that revision: not a failed or pending one above
// it, nothing once uninstalled; the version is named from the request's
// versions or the revision's description, and a revision of a version
// neither names is reported as such.
func TestDriverInspect(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{KeepHistory: true})
	v1, v2, bad := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2}), w.version(map[string]any{"replicas": 3, "failHook": true})
	inspect := func(r addon.Request) addon.Installed {
		t.Helper()
		inst, err := w.driver.Inspect(ctx, r)
		require.NoError(t, err)
		return inst
	}
	assert.Equal(t, addon.Installed{}, inspect(req("", v1)), "no release")

	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	assert.Equal(t, addon.Installed{Version: v1, Revision: "1"}, inspect(req(v1, v2)))

	_, err = w.driver.Upgrade(ctx, req(v1, bad))
	require.Error(t, err)
	assert.Equal(t, addon.Installed{Version: v1, Revision: "1"}, inspect(req(v1, bad)), "a failed revision does not run")

	_, err = w.driver.Upgrade(ctx, req(v1, v2))
	require.NoError(t, err)
	assert.Equal(t, addon.Installed{Version: v2, Revision: "3"}, inspect(req(v1, v1)), "named from the revision's description")
	other := req("", "")
	other.Spec.Version = "v9"
	assert.Equal(t, addon.Installed{Version: v2, Revision: "3"}, inspect(other))

	w.pend(rcommon.StatusPendingUpgrade)
	assert.Equal(t, addon.Installed{}, inspect(req(v2, v2)), "no revision is deployed: the one left pending runs no version Helm vouches for")

	_, err = w.driver.Upgrade(ctx, req(v2, v1))
	require.NoError(t, err)
	require.NoError(t, w.driver.Uninstall(ctx, req(v1, "")))
	assert.Equal(t, addon.Installed{}, inspect(req(v1, v1)), "uninstalled, its history kept")
}

// TestDriverInspectNamesWhatItCannotName: a deployed revision converge did
// not write, or whose version none of the request's names and its
// description does not give, is reported by its revision.
func TestDriverInspectNamesWhatItCannotName(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1 := w.version(nil)
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	rels := w.releases()
	last := rels[len(rels)-1]
	cfg, err := w.cluster.Helm("tke", "tke", nil)
	require.NoError(t, err)

	last.Info.Description = "upgraded by hand"
	require.NoError(t, cfg.Releases.Update(last))
	inst, err := w.driver.Inspect(ctx, req("", ""))
	require.NoError(t, err)
	assert.Equal(t, addon.Installed{Version: "revision 1 (another version)", Revision: "1"}, inst)

	delete(last.Labels, "converge.dev/version-digest")
	require.NoError(t, cfg.Releases.Update(last))
	inst, err = w.driver.Inspect(ctx, req("", v1))
	require.NoError(t, err)
	assert.Equal(t, addon.Installed{Version: "revision 1 (not written by converge)", Revision: "1"}, inst)
}
