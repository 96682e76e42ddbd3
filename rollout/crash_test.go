package rollout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

// dyingHost is a process that dies at its next EnsureInstaller when die is
// set: that call and every later host call of the sync fail. hidden names
// installers its pod cache has not seen yet.
type dyingHost struct {
	store   *fake.RolloutStatusStore
	cluster *fake.RolloutCluster
	die     bool
	dead    bool
	hidden  map[string]bool
}

var errDied = errors.New("process died")

func (h *dyingHost) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	return h.store.GetStatus(ctx)
}

func (h *dyingHost) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	if h.dead {
		return "", errDied
	}
	return h.store.UpdateStatus(ctx, st, rv)
}

func (h *dyingHost) GetInstaller(ctx context.Context, i rollout.Installer) (rollout.InstallerState, error) {
	if h.hidden[i.Name] {
		return rollout.InstallerState{}, nil
	}
	return h.cluster.GetInstaller(ctx, i)
}

func (h *dyingHost) EnsureInstaller(ctx context.Context, i rollout.Installer) error {
	h.dead = h.dead || h.die
	if h.dead {
		return errDied
	}
	return h.cluster.EnsureInstaller(ctx, i)
}

func (h *dyingHost) DeleteInstaller(ctx context.Context, i rollout.Installer) error {
	if h.dead {
		return errDied
	}
	return h.cluster.DeleteInstaller(ctx, i)
}

// TestCrashAfterOrderingIsNoFailedAttempt: only what the world showed is a
// failed attempt. An installer ordered by a write after which the process
// died, before EnsureInstaller, or one the pod cache has not seen yet, is
// created by the next sync (a fresh Controller) under the same name: no
// failure, Warning, backoff or retry suffix, whatever MaxInstallerRetries.
func TestCrashAfterOrderingIsNoFailedAttempt(t *testing.T) {
	tests := []struct {
		name    string
		crashes int  // syncs that die after their first write
		lag     bool // the pod cache misses installer-2-a for one sync after it was created
	}{
		{name: "a crash before EnsureInstaller", crashes: 1},
		{name: "two crashes before EnsureInstaller", crashes: 2},
		{name: "a pod cache that has not seen the new installer", lag: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a", "b", "c")
			store := fake.NewRolloutStatusStore(2, 1, "a", "b", "c")
			host := &dyingHost{store: store, cluster: cluster}
			var events []string
			sync := func() {
				c, err := rollout.NewController(rollout.Config{Status: host, Installers: host, Operands: cluster, Nodes: cluster,
					Clock: clk, Policy: rollout.Policy{MaxInstallerRetries: 1}})
				require.NoError(t, err)
				res, err := c.Sync(ctx)
				if host.dead {
					require.ErrorIs(t, err, errDied)
				} else {
					require.NoError(t, err)
				}
				for _, e := range res.Events {
					events = append(events, e.Type+" "+e.Reason)
				}
				host.die, host.dead = false, false
				clk.Step(time.Second)
			}
			for range tt.crashes {
				host.die = true
				sync()
				a, _ := store.Current().Node("a")
				require.Equal(t, int32(2), a.TargetRevision, "the order is persisted")
				require.Empty(t, cluster.CreatedInstallers(), "the process died before creating it")
			}
			sync()
			if tt.lag {
				host.hidden = map[string]bool{"installer-2-a": true}
				sync()
				host.hidden = nil
			}
			a, _ := store.Current().Node("a")
			assert.Zero(t, a.LastFailedCount, "no failed attempt")
			assert.Empty(t, a.LastFailedReason)
			assert.Nil(t, a.RetryTime, "no backoff")
			assert.True(t, a.InstallerNotSeen, "no observation showed the installer yet")
			assert.Equal(t, []rollout.Installer{{Name: "installer-2-a", Node: "a", Revision: 2}}, cluster.CreatedInstallers(),
				"the same name, no retry suffix")
			assert.Equal(t, []string{"Normal NodeTargetRevisionChanged"}, events, "one event for the one start, no Warning")

			sync() // the installer shows: it is seen, and from now on a disappearance is a failure
			a, _ = store.Current().Node("a")
			assert.False(t, a.InstallerNotSeen)
			assert.False(t, conditions.IsTrue(store.Current().Conditions, conditions.TypeDegraded))
		})
	}
}

// TestRefusedCreateIsAFailedAttempt: a create the host refuses is recorded
// by the sync's last write as its node's failed attempt
// (InstallerCreateFailed, a Warning, the backoff), so a refusal that never
// ends (RBAC, quota) is retried only after each backoff and gives up after
// MaxInstallerRetries: no hot loop.
func TestRefusedCreateIsAFailedAttempt(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	store := fake.NewRolloutStatusStore(2, 1, "a")
	quota := errors.New(`pods "installer-2-a" is forbidden: exceeded quota`)
	cluster.SetError(fake.RolloutEnsureInstaller, quota)
	h := newController(t, store, cluster, clk, rollout.Policy{MaxInstallerRetries: 2})

	_, err := h.sync(ctx)
	require.ErrorIs(t, err, quota)
	a, _ := store.Current().Node("a")
	assert.Equal(t, rollout.ReasonInstallerCreateFailed, a.LastFailedReason)
	assert.Equal(t, int32(1), a.LastFailedCount)
	assert.Equal(t, []string{`creating installer installer-2-a: pods "installer-2-a" is forbidden: exceeded quota`}, a.LastFailedErrors)
	assert.Equal(t, t0.Add(15*time.Second), a.RetryTime.Time)
	degraded, _ := conditions.Get(store.Current().Conditions, conditions.TypeDegraded)
	assert.Equal(t, rollout.ReasonInstallerCreateFailed, degraded.Reason, "the conditions agree with the failure in the same write")

	calls := func() int {
		n := 0
		for _, c := range cluster.Recorded() {
			if c.Method == fake.RolloutEnsureInstaller {
				n++
			}
		}
		return n
	}
	clk.Step(10 * time.Second)
	_, err = h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, calls(), "no create within the backoff")

	for range 10 {
		clk.Step(10 * time.Minute)
		_, _ = h.sync(ctx)
	}
	assert.Equal(t, 3, calls(), "the first create and MaxInstallerRetries retries")
	a, _ = store.Current().Node("a")
	assert.Equal(t, int32(3), a.LastFailedCount)
	degraded, _ = conditions.Get(store.Current().Conditions, conditions.TypeDegraded)
	assert.Equal(t, rollout.ReasonInstallerRetriesExhausted, degraded.Reason)
	assert.Equal(t, []string{rollout.ReasonNodeTargetRevisionChanged, rollout.ReasonInstallerCreateFailed,
		rollout.ReasonInstallerCreateFailed, rollout.ReasonInstallerCreateFailed, rollout.ReasonInstallerRetriesExhausted}, h.reasons())
}
