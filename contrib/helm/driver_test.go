package helmconverge_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

func replicas(t *testing.T, obj *unstructured.Unstructured) int64 {
	t.Helper()
	require.NotNil(t, obj)
	n, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	return n
}

// TestDriverLifecycle: install, upgrade, rollback to the recorded revision
// and uninstall each leave the release and its objects as Helm would, and
// each returns the revision that carries its version.
func TestDriverLifecycle(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1, v2 := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 3})

	rev, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	assert.Equal(t, "1", rev)
	dep := w.get(deployments, "mesh")
	assert.Equal(t, int64(1), replicas(t, dep))
	ns, n, ok := helmconverge.ReleaseOf(dep)
	assert.True(t, ok, "Helm's annotations name the release")
	assert.Equal(t, []string{"tke", "mesh"}, []string{ns, n})
	assert.NotNil(t, w.get(secrets, "mesh-db"))

	h, err := w.driver.Health(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, addon.HealthUnhealthy, h, "the Deployment has not rolled out: install does not wait for it")
	w.rollOut()
	h, err = w.driver.Health(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, addon.HealthHealthy, h)

	rev, err = w.driver.Upgrade(ctx, req(v1, v2))
	require.NoError(t, err)
	assert.Equal(t, "2", rev)
	assert.Equal(t, int64(3), replicas(t, w.get(deployments, "mesh")))
	h, err = w.driver.Health(ctx, req(v2, v2))
	require.NoError(t, err)
	assert.Equal(t, addon.HealthUnhealthy, h, "3 replicas wanted, 1 available")
	h, err = w.driver.Health(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, addon.HealthUnhealthy, h, "the release carries v2, not the v1 the engine thinks installed")

	rb := req(v2, v1)
	rb.Rollback, rb.Revision = true, "1"
	rev, err = w.driver.Upgrade(ctx, rb)
	require.NoError(t, err)
	assert.Equal(t, "3", rev, "a rollback is a new revision")
	assert.Equal(t, int64(1), replicas(t, w.get(deployments, "mesh")))
	rels := w.releases()
	require.Len(t, rels, 3)
	assert.Equal(t, 1, rels[2].Info.RollbackRevision, "it rolled back to revision 1")
	assert.Equal(t, []string{"superseded", "superseded", "deployed"}, w.statuses())

	require.NoError(t, w.driver.Uninstall(ctx, req(v1, "")))
	assert.Nil(t, w.get(deployments, "mesh"))
	assert.Nil(t, w.get(secrets, "mesh-db"))
	assert.Empty(t, w.releases(), "without KeepHistory the records go too")
	require.NoError(t, w.driver.Uninstall(ctx, req(v1, "")), "uninstalling what is gone succeeds")
	h, err = w.driver.Health(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, addon.HealthUnhealthy, h, "no release")
}

// TestDriverInstallAndUpgradeAreIdempotent: an install whose outcome was
// lost runs again onto the release it made; an upgrade of a release that
// is gone installs it; with KeepHistory an install after an uninstall
// reuses the name.
func TestDriverInstallAndUpgradeAreIdempotent(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{KeepHistory: true})
	v1 := w.version(nil)

	rev, err := w.driver.Upgrade(ctx, req("", v1))
	require.NoError(t, err)
	assert.Equal(t, "1", rev, "an upgrade of nothing installs")
	rev, err = w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	assert.Equal(t, "2", rev, "an install onto the release it made upgrades it")

	require.NoError(t, w.driver.Uninstall(ctx, req(v1, "")))
	assert.Equal(t, []string{"superseded", "uninstalled"}, w.statuses(), "KeepHistory keeps the records")
	require.NoError(t, w.driver.Uninstall(ctx, req(v1, "")))
	rev, err = w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	assert.Equal(t, "3", rev)
	assert.NotNil(t, w.get(deployments, "mesh"))
}

// TestDriverRollbackTarget: a rollback goes to the revision the engine
// recorded when Helm keeps it and it carries the target version; otherwise
// to the newest deployed revision that carried it; never to a revision of
// another version; and with none it fails with ErrRollbackTargetMissing.
func TestDriverRollbackTarget(t *testing.T) {
	ctx := context.Background()
	// setup makes revisions 1 v1, 2 v2, 3 v1, 4 v3.
	setup := func(t *testing.T) (w *world, v1, v2, v3 string) {
		w = newWorld(t, helmconverge.Config{})
		v1, v2, v3 = w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2}), w.version(map[string]any{"replicas": 3})
		for _, r := range []addon.Request{req("", v1), req(v1, v2), req(v2, v1), req(v1, v3)} {
			_, err := w.driver.Upgrade(ctx, r)
			require.NoError(t, err)
		}
		return w, v1, v2, v3
	}
	for _, tc := range []struct {
		name     string
		to       func(v1, v2 string) string
		rev      string
		want     int
		replicas int64
	}{
		{name: "the recorded revision", to: func(v1, _ string) string { return v1 }, rev: "1", want: 1, replicas: 1},
		{name: "a recorded revision of another version is not used", to: func(_, v2 string) string { return v2 }, rev: "3", want: 2, replicas: 2},
		{name: "no recorded revision: the newest that carried it", to: func(v1, _ string) string { return v1 }, rev: "", want: 3, replicas: 1},
		{name: "a recorded revision Helm no longer has", to: func(v1, _ string) string { return v1 }, rev: "99", want: 3, replicas: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, v1, v2, v3 := setup(t)
			rb := req(v3, tc.to(v1, v2))
			rb.Rollback, rb.Revision = true, tc.rev
			rev, err := w.driver.Upgrade(ctx, rb)
			require.NoError(t, err)
			assert.Equal(t, "5", rev)
			rels := w.releases()
			assert.Equal(t, tc.want, rels[len(rels)-1].Info.RollbackRevision)
			assert.Equal(t, tc.replicas, replicas(t, w.get(deployments, "mesh")))
		})
	}
	w, _, _, v3 := setup(t)
	rb := req(v3, "never-installed")
	rb.Rollback = true
	_, err := w.driver.Upgrade(ctx, rb)
	require.ErrorIs(t, err, helmconverge.ErrRollbackTargetMissing)
}

// pend leaves the last revision of the release in status st, as a process
// that crashed mid-action leaves it.
func (w *world) pend(st rcommon.Status) {
	w.t.Helper()
	rels := w.releases()
	last := rels[len(rels)-1]
	last.SetStatus(st, "crashed")
	cfg, err := w.cluster.Helm("tke", "tke", nil)
	require.NoError(w.t, err)
	require.NoError(w.t, cfg.Releases.Update(last))
}

// TestDriverRecoversAReleaseLeftPending: a revision left pending by a
// crash is reported (health unknown, ErrReleasePending), and the next
// action marks it failed and goes on: never "another operation is in
// progress".
func TestDriverRecoversAReleaseLeftPending(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		status rcommon.Status
		next   func(w *world, v1, v2 string) (string, error)
		want   []string
	}{
		{status: rcommon.StatusPendingInstall, want: []string{"superseded", "deployed"},
			next: func(w *world, v1, _ string) (string, error) { return w.driver.Install(ctx, req("", v1)) }},
		{status: rcommon.StatusPendingUpgrade, want: []string{"superseded", "deployed"},
			next: func(w *world, v1, v2 string) (string, error) { return w.driver.Upgrade(ctx, req(v1, v2)) }},
		{status: rcommon.StatusPendingRollback,
			next: func(w *world, v1, _ string) (string, error) {
				rb := req(v1, v1)
				rb.Rollback, rb.Revision = true, "1"
				return w.driver.Upgrade(ctx, rb)
			}},
	} {
		t.Run(string(tc.status), func(t *testing.T) {
			w := newWorld(t, helmconverge.Config{})
			v1, v2 := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2})
			_, err := w.driver.Install(ctx, req("", v1))
			require.NoError(t, err)
			w.rollOut()
			w.pend(tc.status)

			h, err := w.driver.Health(ctx, req(v1, v1))
			assert.Equal(t, addon.HealthUnknown, h)
			require.ErrorIs(t, err, helmconverge.ErrReleasePending)
			drifted, _, err := w.driver.Drift(ctx, req(v1, v1))
			require.ErrorIs(t, err, helmconverge.ErrReleasePending)
			assert.False(t, drifted)

			if tc.status == rcommon.StatusPendingRollback {
				rev, err := tc.next(w, v1, v2)
				require.ErrorIs(t, err, helmconverge.ErrRollbackTargetMissing, "revision 1 itself was left pending: never deployed")
				assert.Empty(t, rev)
				assert.Equal(t, []string{"failed"}, w.statuses(), "unlocked all the same")
				return
			}
			rev, err := tc.next(w, v1, v2)
			require.NoError(t, err)
			assert.Equal(t, "2", rev)
			assert.Equal(t, tc.want, w.statuses())
		})
	}
}

// TestDriverUnlocksBeforeRollingBack: a rollback after a crashed upgrade
// unlocks the pending revision and rolls back to the recorded one.
func TestDriverUnlocksBeforeRollingBack(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1, v2 := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2})
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	_, err = w.driver.Upgrade(ctx, req(v1, v2))
	require.NoError(t, err)
	w.pend(rcommon.StatusPendingUpgrade)
	rb := req(v1, v1)
	rb.Rollback, rb.Revision = true, "1"
	rev, err := w.driver.Upgrade(ctx, rb)
	require.NoError(t, err)
	assert.Equal(t, "3", rev)
	assert.Equal(t, []string{"superseded", "failed", "deployed"}, w.statuses())
	assert.Equal(t, int64(1), replicas(t, w.get(deployments, "mesh")))
}

// TestDriverHookFailureFailsTheUpgrade: a pre-upgrade hook that fails fails
// the upgrade, leaves a failed revision (which the driver returns) and keeps
// the objects of the revision before.
func TestDriverHookFailureFailsTheUpgrade(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1, bad := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2, "failHook": true})
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	rev, err := w.driver.Upgrade(ctx, req(v1, bad))
	require.ErrorIs(t, err, errHookExited)
	assert.ErrorContains(t, err, "pre-upgrade hooks failed")
	assert.Equal(t, "2", rev)
	assert.Equal(t, []string{"deployed", "failed"}, w.statuses())
	assert.Equal(t, int64(1), replicas(t, w.get(deployments, "mesh")), "the hook runs before the objects change")
}

// TestDriverTestRunsTheChartsTestHooks: Test is helm test: it passes when
// the chart's test pods succeed and fails when one fails.
func TestDriverTestRunsTheChartsTestHooks(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1 := w.version(nil)
	require.ErrorIs(t, w.driver.Test(ctx, req(v1, v1)), helmconverge.ErrReleaseMissing)
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	require.NoError(t, w.driver.Test(ctx, req(v1, v1)))
	hook := w.cluster.Hook
	w.cluster.Hook = func(obj *unstructured.Unstructured) error {
		if obj.GetName() == "mesh-test" {
			return errHookExited
		}
		return hook(obj)
	}
	err = w.driver.Test(ctx, req(v1, v1))
	require.ErrorIs(t, err, errHookExited)
	assert.ErrorContains(t, err, "tests of "+v1)
}

// TestDriverDrift: drift is an object changed or deleted behind Helm's
// back; the detail names the object and the field, never a value; a
// re-apply (the engine's correction) removes it.
func TestDriverDrift(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1 := w.version(map[string]any{"replicas": 2, "password": "s3cr3t-password"})
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	w.rollOut()
	drifted, detail, err := w.driver.Drift(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.False(t, drifted, "a status written by a controller is no drift: %s", detail)

	dep := w.get(deployments, "mesh")
	require.NoError(t, unstructured.SetNestedField(dep.Object, int64(5), "spec", "replicas"))
	_, err = w.objects.Resource(deployments).Namespace("tke").Update(ctx, dep, metav1.UpdateOptions{})
	require.NoError(t, err)
	secret := w.get(secrets, "mesh-db")
	require.NoError(t, unstructured.SetNestedField(secret.Object, "hunter2", "stringData", "password"))
	_, err = w.objects.Resource(secrets).Namespace("tke").Update(ctx, secret, metav1.UpdateOptions{})
	require.NoError(t, err)
	drifted, detail, err = w.driver.Drift(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.True(t, drifted)
	assert.Equal(t, "Deployment tke/mesh: spec.replicas changed; Secret tke/mesh-db: stringData.password changed", detail)
	assert.NotContains(t, detail, "hunter2")
	assert.NotContains(t, detail, "s3cr3t")

	require.NoError(t, w.objects.Resource(secrets).Namespace("tke").Delete(ctx, "mesh-db", metav1.DeleteOptions{}))
	_, detail, err = w.driver.Drift(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.Equal(t, "Deployment tke/mesh: spec.replicas changed; Secret tke/mesh-db: missing", detail)

	_, err = w.driver.Upgrade(ctx, req(v1, v1))
	require.NoError(t, err, "the engine corrects drift by a re-apply of the installed version")
	drifted, detail, err = w.driver.Drift(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.False(t, drifted, detail)
	assert.Equal(t, int64(2), replicas(t, w.get(deployments, "mesh")))
}

// An upgrade that succeeded stays deployed when its context ends after it
// returned, as addon.Machine's action deadline does: Helm watches an
// upgrade's context beside the upgrade and marks the release failed when it
// sees the context done, so the driver gives Helm one that only the caller's
// cancellation during the action can end.
func TestDriverUpgradeSurvivesItsContextEndingAfterward(t *testing.T) {
	w := newWorld(t, helmconverge.Config{})
	v1 := w.version(nil)
	_, err := w.driver.Install(context.Background(), req("", v1))
	require.NoError(t, err)
	from := v1
	for i := range 40 {
		to := w.version(map[string]any{"replicas": i + 2})
		ctx, cancel := context.WithCancel(context.Background())
		_, err := w.driver.Upgrade(ctx, req(from, to))
		cancel()
		require.NoError(t, err)
		from = to
	}
	statuses := w.statuses()
	assert.Equal(t, "deployed", statuses[len(statuses)-1])
	assert.NotContains(t, statuses, "failed", "no successful upgrade is marked failed")
}

// TestDriftIgnoreRules: a field an ignore rule names is no drift, whoever
// changed it, on the objects the rule covers only, and the rule works on
// both sides: the chart's value there is not compared either.
func TestDriftIgnoreRules(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		rules   []helmconverge.IgnoreRule
		drifted string // the detail; "" for no drift
	}{
		{name: "no rule: another writer's replicas are drift",
			drifted: "Deployment tke/mesh: spec.replicas changed"},
		{name: "a rule of the kind ignores another writer's replicas",
			rules: []helmconverge.IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}}}},
		{name: "a rule of the kind and name ignores them",
			rules: []helmconverge.IgnoreRule{{Kind: "Deployment", Name: "mesh", Paths: []string{"/spec/replicas"}}}},
		{name: "a rule of another name does not",
			rules:   []helmconverge.IgnoreRule{{Kind: "Deployment", Name: "other", Paths: []string{"/spec/replicas"}}},
			drifted: "Deployment tke/mesh: spec.replicas changed"},
		{name: "a rule of another kind does not",
			rules:   []helmconverge.IgnoreRule{{Kind: "Secret", Paths: []string{"/spec/replicas"}}},
			drifted: "Deployment tke/mesh: spec.replicas changed"},
		{name: "a rule of a path the object lacks changes nothing",
			rules:   []helmconverge.IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/paused"}}},
			drifted: "Deployment tke/mesh: spec.replicas changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, helmconverge.Config{})
			w.settings.DriftIgnore = tc.rules
			v1 := w.version(map[string]any{"replicas": 2, "password": "s3cr3t-password"})
			_, err := w.driver.Install(ctx, req("", v1))
			require.NoError(t, err)
			w.rollOut()
			dep := w.get(deployments, "mesh")
			require.NoError(t, unstructured.SetNestedField(dep.Object, int64(5), "spec", "replicas"), "an HPA scales it")
			_, err = w.objects.Resource(deployments).Namespace("tke").Update(ctx, dep, metav1.UpdateOptions{})
			require.NoError(t, err)
			drifted, detail, err := w.driver.Drift(ctx, req(v1, v1))
			require.NoError(t, err)
			assert.Equal(t, tc.drifted != "", drifted)
			assert.Equal(t, tc.drifted, detail)
		})
	}
}

// TestDriftIgnoreRulesAreChecked: a rule with a malformed pointer fails the
// install and the drift check as bad input.
func TestDriftIgnoreRulesAreChecked(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	v1 := w.version(map[string]any{"replicas": 1})
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	w.settings.DriftIgnore = []helmconverge.IgnoreRule{{Kind: "Deployment", Paths: []string{"spec/replicas"}}}
	_, err = w.driver.Upgrade(ctx, req(v1, v1))
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, `drift ignore rule 0: JSON pointer "spec/replicas" does not start with /`)
	_, _, err = w.driver.Drift(ctx, req(v1, v1))
	require.ErrorIs(t, err, converge.ErrInvalid)
}
