package helmconverge_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// under is r run under the claim with fencing token fence.
func under(r addon.Request, fence int64) addon.Request {
	r.Fence = fence
	return r
}

// fences lists each revision's fence label, oldest first.
func (w *world) fences() []string {
	var out []string
	for _, r := range w.releases() {
		out = append(out, r.Labels["converge.dev/fence"])
	}
	return out
}

// TestDriverRefusesAnOlderFence: every revision the driver writes carries
// the fencing token of the claim it ran under, and a call whose token is
// older than the latest revision's (a replica that paused past its claim)
// writes nothing and fails with ErrFenced: no upgrade, rollback, uninstall
// or test, and no unlocking of a newer claim's pending revision. A call
// under the same or a newer token writes; a call without one is not
// fenced; a call whose context ended writes nothing.
func TestDriverRefusesAnOlderFence(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (w *world, v1, v2 string) {
		w = newWorld(t, helmconverge.Config{})
		v1, v2 = w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2})
		_, err := w.driver.Install(ctx, under(req("", v1), 5))
		require.NoError(t, err)
		return w, v1, v2
	}
	rollback := func(v1, v2 string) addon.Request {
		rb := req(v2, v1)
		rb.Rollback, rb.Revision = true, "1"
		return rb
	}
	for _, tc := range []struct {
		name string
		call func(w *world, v1, v2 string) error
	}{
		{"an upgrade", func(w *world, v1, v2 string) error {
			_, err := w.driver.Upgrade(ctx, under(req(v1, v2), 4))
			return err
		}},
		{"a re-install", func(w *world, v1, _ string) error {
			_, err := w.driver.Install(ctx, under(req("", v1), 4))
			return err
		}},
		{"a rollback", func(w *world, v1, v2 string) error {
			_, err := w.driver.Upgrade(ctx, under(rollback(v1, v2), 4))
			return err
		}},
		{"an uninstall", func(w *world, v1, _ string) error { return w.driver.Uninstall(ctx, under(req(v1, ""), 4)) }},
		{"a test", func(w *world, v1, _ string) error { return w.driver.Test(ctx, under(req(v1, v1), 4)) }},
	} {
		t.Run(tc.name+" under an older token writes nothing", func(t *testing.T) {
			w, v1, v2 := setup(t)
			err := tc.call(w, v1, v2)
			require.ErrorIs(t, err, helmconverge.ErrFenced)
			assert.ErrorContains(t, err, "revision 1 was written under fencing token 5, newer than this call's 4")
			assert.Equal(t, []string{"deployed"}, w.statuses())
			assert.Equal(t, int64(1), replicas(t, w.get(deployments, "mesh")))
		})
	}

	t.Run("the same or a newer token writes, and labels its revision", func(t *testing.T) {
		w, v1, v2 := setup(t)
		_, err := w.driver.Upgrade(ctx, under(req(v1, v2), 5))
		require.NoError(t, err)
		_, err = w.driver.Upgrade(ctx, under(rollback(v1, v2), 9))
		require.NoError(t, err)
		assert.Equal(t, []string{"5", "5", "9"}, w.fences(), "the rollback carries its own token, not its target's")
		assert.Equal(t, int64(1), replicas(t, w.get(deployments, "mesh")))
	})
	t.Run("a newer claim's pending revision is not unlocked by an older token", func(t *testing.T) {
		w, v1, v2 := setup(t)
		_, err := w.driver.Upgrade(ctx, under(req(v1, v2), 7))
		require.NoError(t, err)
		w.pend(rcommon.StatusPendingUpgrade)
		_, err = w.driver.Upgrade(ctx, under(rollback(v1, v2), 6))
		require.ErrorIs(t, err, helmconverge.ErrFenced)
		assert.Equal(t, []string{"superseded", "pending-upgrade"}, w.statuses())
	})
	t.Run("a call without a token is not fenced", func(t *testing.T) {
		w, v1, v2 := setup(t)
		_, err := w.driver.Upgrade(ctx, req(v1, v2))
		require.NoError(t, err)
		assert.Equal(t, []string{"superseded", "deployed"}, w.statuses())
	})
	t.Run("a call whose context ended writes nothing", func(t *testing.T) {
		w, v1, v2 := setup(t)
		ended, cancel := context.WithCancel(ctx)
		cancel()
		_, err := w.driver.Upgrade(ended, under(req(v1, v2), 6))
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"deployed"}, w.statuses())
	})
}

// pauser is a Driver whose Upgrade, the first time, lets the world move on
// before it runs: a replica paused past its claim that resumes.
type pauser struct {
	*helmconverge.Driver
	pause func()
}

func (d *pauser) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	if pause := d.pause; pause != nil {
		d.pause = nil
		pause()
	}
	return d.Driver.Upgrade(ctx, req)
}

// TestMachineFencesOutAPausedReplica plays the report on Helm: a
// replica claims the upgrade v1 → v2 and pauses past its claim's expiry;
// another takes over (the Inspector finds v1: the attempt is lost, and, with
// MaxLostRetries 0, failed), rolls back to v1 under a newer token and runs
// it; the paused replica resumes and its upgrade, under the older token,
// writes nothing (ErrFenced): the cluster and the status both say v1.
func TestMachineFencesOutAPausedReplica(t *testing.T) {
	w := newWorld(t, helmconverge.Config{})
	v1, v2 := w.version(map[string]any{"replicas": 1}), w.version(map[string]any{"replicas": 2})
	policy := addon.Policy{MaxLostRetries: ptr[int32](0)}
	h := newMachine(t, w, policy, v1)
	h.run(1)
	w.rollOut()
	h.run(1)
	require.Equal(t, addon.PhaseRunning, h.status().Phase, h.status().Message)
	_, ok := h.store.Update(name.Name, func(s *addon.Spec) { s.Version = v2 })
	require.True(t, ok)

	clock := clocktesting.NewFakeClock(h.clock.Now())
	b, err := addon.NewMachine(addon.Config{Driver: w.driver, Store: h.store, Owner: "b", Policy: policy, Clock: clock, Jitter: func() float64 { return 0 }})
	require.NoError(t, err)
	drv := &pauser{Driver: w.driver, pause: func() {
		clock.Step(2*time.Minute + addon.ClaimGrace)
		for range 3 {
			obj, err := h.store.Get(context.Background(), name.Name)
			require.NoError(t, err)
			res, err := b.Reconcile(context.Background(), obj)
			require.NoError(t, err)
			clock.Step(res.RequeueAfter)
		}
		require.Equal(t, addon.PhaseRunning, h.status().Phase, "b rolled back to v1: %s", h.status().Message)
	}}
	a, err := addon.NewMachine(addon.Config{Driver: drv, Store: h.store, Owner: "a", Policy: policy, Clock: clock, Jitter: func() float64 { return 0 }})
	require.NoError(t, err)
	obj, err := h.store.Get(context.Background(), name.Name)
	require.NoError(t, err)
	res, err := a.Reconcile(context.Background(), obj)
	require.NoError(t, err)

	st := h.status()
	assert.Contains(t, eventReasons(res.Events), "OutcomeDiscarded")
	assert.Equal(t, addon.PhaseRunning, st.Phase)
	assert.Equal(t, v1, st.InstalledVersion)
	assert.Nil(t, st.Mismatch, "the late upgrade wrote nothing")
	assert.Equal(t, []string{"superseded", "deployed"}, w.statuses(), "revision 1 (v1), then the rollback to it; no revision of v2")
	assert.Equal(t, []string{"1", "3"}, w.fences())
	assert.Equal(t, int64(1), replicas(t, w.get(deployments, "mesh")))
	ready := meta.FindStatusCondition(st.Conditions, conditions.TypeReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
}

func eventReasons(events []converge.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}
