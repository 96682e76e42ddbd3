package addon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
)

func TestScenarioFullLifecycle(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.driver.Push(fake.AddonInstall, fake.AddonOutcome{Err: errors.New("image pull backoff")})

	h.reconcile()
	assert.Equal(t, addon.PhaseReinitializing, h.status.Phase)
	assert.Equal(t, 1, h.status.InstallFailures)
	assert.Equal(t, addon.ActionUninstall, h.status.PendingAction, "default install remediation")

	h.reconcile()
	assert.Equal(t, addon.PhaseReinitializing, h.status.Phase)
	assert.Equal(t, addon.ActionInstall, h.status.PendingAction)
	assert.Equal(t, addon.DefaultBackoffBase, h.last.RequeueAfter, "retry waits for the backoff")

	h.until(addon.PhaseRunning, 5)
	assert.Equal(t, "v1", h.status.LastGoodVersion)
	assert.Zero(t, h.status.InstallFailures, "counters reset after success")
	assert.True(t, conditions.IsTrue(h.status.Conditions, conditions.TypeReady))
	assert.Equal(t, addon.DefaultRunningInterval, h.last.RequeueAfter)

	h.spec.Version, h.spec.Generation = "v2", 2
	h.reconcile()
	assert.Equal(t, addon.PhaseChecking, h.status.Phase, "upgrade ran, now verifying")
	assert.Equal(t, "v1", h.status.LastGoodVersion, "not good before it is healthy")
	h.until(addon.PhaseRunning, 3)
	assert.Equal(t, "v2", h.status.LastGoodVersion)

	h.spec.Version, h.spec.Generation = "v3", 3
	h.reconcile()
	require.Equal(t, addon.PhaseChecking, h.status.Phase)
	checkStart := h.clock.Now()
	healthBefore := h.driver.Count(fake.AddonHealth)
	for range 61 { // every 5 s for 5 min, both ends included
		h.driver.Push(fake.AddonHealth, fake.AddonOutcome{Health: addon.HealthUnhealthy})
	}
	h.until(addon.PhaseRemediating, 100)
	assert.Equal(t, addon.ActionRollback, h.status.PendingAction)
	assert.Equal(t, checkStart.Add(addon.DefaultCheckTimeout), h.clock.Now(), "Failed-or-remediate is written exactly at the deadline")
	assert.Equal(t, 61, h.driver.Count(fake.AddonHealth)-healthBefore)
	h.until(addon.PhaseRunning, 3)
	assert.Equal(t, "v2", h.status.InstalledVersion)
	assert.Equal(t, "v3", h.status.FailedVersion)
	assert.True(t, conditions.IsTrue(h.status.Conditions, conditions.TypeDegraded))

	h.spec.Deleting = true
	h.reconcile()
	assert.Equal(t, addon.PhaseDeleted, h.status.Phase)
	assert.True(t, h.last.Deleted)
}

// story runs the example's lifecycle. With restart, every reconcile gets a
// new Machine and a status that went through JSON, as after a process
// restart. It returns one line per reconcile and the driver's calls.
func story(t *testing.T, restart bool) ([]string, []fake.AddonCall) {
	t.Helper()
	h := newHarness(t, addon.Policy{})
	h.driver.Push(fake.AddonInstall, fake.AddonOutcome{Err: errors.New("image pull backoff")})
	h.driver.Push(fake.AddonUninstall, fake.AddonOutcome{}, fake.AddonOutcome{Err: errors.New("apiserver timeout")})
	var lines []string
	stage := 0
	for i := 0; i < 200 && h.status.Phase != addon.PhaseDeleted; i++ {
		if h.status.Phase == addon.PhaseRunning {
			switch stage {
			case 0:
				h.spec.Version, h.spec.Generation = "v2", 2
			case 1:
				h.spec.Version, h.spec.Generation = "v3", 3
				for range 61 {
					h.driver.Push(fake.AddonHealth, fake.AddonOutcome{Health: addon.HealthUnhealthy})
				}
			case 2:
				h.spec.Deleting = true
			}
			stage++
		}
		if restart {
			b, err := json.Marshal(h.status)
			require.NoError(t, err)
			h.status = addon.Status{}
			require.NoError(t, json.Unmarshal(b, &h.status))
			h.restart()
		}
		h.wait()
		res := h.reconcile()
		lines = append(lines, fmt.Sprintf("%s %s %s %s", h.clock.Since(t0), res.Action, h.status.Phase, h.status.Reason))
	}
	require.Equal(t, addon.PhaseDeleted, h.status.Phase)
	return lines, h.driver.Recorded()
}

func TestScenarioRestartBeforeEveryReconcileChangesNothing(t *testing.T) {
	plain, plainCalls := story(t, false)
	restarted, restartedCalls := story(t, true)
	assert.Equal(t, plain, restarted)
	assert.Equal(t, plainCalls, restartedCalls)
	phases := map[string]bool{}
	for _, l := range restarted {
		phases[strings.Fields(l)[2]] = true
	}
	for _, p := range []addon.Phase{addon.PhaseReinitializing, addon.PhaseChecking, addon.PhaseRunning,
		addon.PhaseRemediating, addon.PhaseDeleting, addon.PhaseDeleted} {
		assert.True(t, phases[string(p)], "the story restarts in %s", p)
	}
}

func TestScenarioRestartInEveryPhaseContinues(t *testing.T) {
	v2 := addon.Spec{Name: "tke/mesh-manager", Generation: 2, Version: "v2"}
	for _, tc := range []struct {
		name      string
		spec      addon.Spec
		status    addon.Status
		wantCalls []fake.AddonCall
		wantPhase addon.Phase
	}{
		{"Initializing: the install runs", meshSpec,
			st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }),
			[]fake.AddonCall{{Method: fake.AddonInstall, Name: meshSpec.Name, Version: "v1"}}, addon.PhaseChecking},
		{"Reinitializing: the retry runs", meshSpec,
			st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures, s.NextAttemptTime = 2, at(t0) }),
			[]fake.AddonCall{{Method: fake.AddonInstall, Name: meshSpec.Name, Version: "v1"}}, addon.PhaseChecking},
		{"Checking: the check runs", meshSpec,
			st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying = addon.ActionInstall }),
			[]fake.AddonCall{{Method: fake.AddonHealth, Name: meshSpec.Name, Version: "v1"}}, addon.PhaseRunning},
		{"Running: the watch runs", meshSpec, st(addon.PhaseRunning, addon.ActionCheckHealth),
			[]fake.AddonCall{{Method: fake.AddonHealth, Name: meshSpec.Name, Version: "v1"}}, addon.PhaseRunning},
		{"Upgrading: the upgrade runs", v2, st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			[]fake.AddonCall{{Method: fake.AddonUpgrade, Name: v2.Name, Version: "v2", From: "v1", To: "v2"}}, addon.PhaseChecking},
		{"Remediating: the rollback runs", v2,
			st(addon.PhaseRemediating, addon.ActionRollback, func(s *addon.Status) { s.ObservedGeneration, s.InstalledVersion, s.FailedVersion = 2, "v2", "v2" }),
			[]fake.AddonCall{{Method: fake.AddonUpgrade, Name: v2.Name, Version: "v2", From: "v2", To: "v1"}}, addon.PhaseChecking},
		{"Failed: nothing runs", meshSpec, st(addon.PhaseFailed, addon.ActionNone), nil, addon.PhaseFailed},
		{"Deleting: the uninstall runs", addon.Spec{Name: meshSpec.Name, Generation: 1, Version: "v1", Deleting: true},
			st(addon.PhaseDeleting, addon.ActionUninstall),
			[]fake.AddonCall{{Method: fake.AddonUninstall, Name: meshSpec.Name, Version: "v1"}}, addon.PhaseDeleted},
		{"Deleted: nothing runs", addon.Spec{Name: meshSpec.Name, Generation: 1, Version: "v1", Deleting: true},
			st(addon.PhaseDeleted, addon.ActionNone), nil, addon.PhaseDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drv := &fake.AddonDriver{}
			m := newMachine(t, addon.Config{Driver: drv, Clock: clocktesting.NewFakeClock(tNow)})
			got, _, err := m.Reconcile(context.Background(), tc.spec, tc.status)
			require.NoError(t, err)
			assert.Equal(t, tc.wantCalls, drv.Recorded())
			assert.Equal(t, tc.wantPhase, got.Phase)
		})
	}
}

// A deletion whose uninstall keeps failing stops at DeleteTimeout instead of
// retrying forever, keeps the finalizer, and a retry request finishes it.
func TestScenarioDeletionStopsAtItsDeadlineUntilARetry(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.until(addon.PhaseRunning, 3)
	for range 100 {
		h.driver.Push(fake.AddonUninstall, fake.AddonOutcome{Err: errors.New("webhook down")})
	}
	h.spec.Deleting = true
	h.reconcile()
	require.Equal(t, addon.PhaseDeleting, h.status.Phase)
	start := h.clock.Now()
	for i := 0; i < 50 && h.status.PendingAction != addon.ActionNone; i++ {
		h.wait()
		h.reconcile()
		require.False(t, h.last.Deleted, "the finalizer stays")
	}
	assert.Equal(t, start.Add(addon.DefaultDeleteTimeout), h.clock.Now(), "stopped exactly at the deadline")
	assert.Equal(t, "DeadlinePassed", h.status.Reason)
	assert.True(t, conditions.IsTrue(h.status.Conditions, conditions.TypeStalled))
	assert.Zero(t, h.last.RequeueAfter)
	assert.False(t, h.last.Requeue)
	uninstalls := h.driver.Count(fake.AddonUninstall)

	h.clock.Step(time.Hour)
	h.reconcile()
	assert.Equal(t, uninstalls, h.driver.Count(fake.AddonUninstall), "no uninstall after the deadline")

	h.driver.Script[fake.AddonUninstall] = nil
	h.spec.RetryToken = "retry-1"
	h.reconcile()
	assert.Equal(t, addon.PhaseDeleted, h.status.Phase)
	assert.True(t, h.last.Deleted)
}
