package addon_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	t.Log(h.trace)
}
