package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

func TestDefaultTableIsValid(t *testing.T) {
	_, err := addon.NewTable(addon.DefaultTable().Rows())
	require.NoError(t, err)
}

func TestDefaultTableCoversTheSeedLifecycle(t *testing.T) {
	tb := addon.DefaultTable()
	for _, tc := range []struct {
		from    addon.Phase
		trigger addon.Trigger
		to      addon.Phase
	}{
		{addon.PhaseInitializing, addon.TriggerInstallSucceeded, addon.PhaseChecking},
		{addon.PhaseInitializing, addon.TriggerInstallFailed, addon.PhaseReinitializing},
		{addon.PhaseReinitializing, addon.TriggerInstallSucceeded, addon.PhaseChecking},
		{addon.PhaseReinitializing, addon.TriggerRetriesExhausted, addon.PhaseFailed},
		{addon.PhaseChecking, addon.TriggerHealthy, addon.PhaseRunning},
		{addon.PhaseRunning, addon.TriggerUnhealthy, addon.PhaseRunning},
		{addon.PhaseRunning, addon.TriggerSpecChanged, addon.PhaseUpgrading},
		{addon.PhaseRunning, addon.TriggerDriftDetected, addon.PhaseUpgrading},
		{addon.PhaseUpgrading, addon.TriggerVersionChanged, addon.PhaseUpgrading},
		{addon.PhaseRunning, addon.TriggerVersionChanged, addon.PhaseUpgrading},
		{addon.PhaseUpgrading, addon.TriggerUpgradeSucceeded, addon.PhaseChecking},
		{addon.PhaseChecking, addon.TriggerUpgradeFailed, addon.PhaseRemediating},
		{addon.PhaseRemediating, addon.TriggerRollbackSucceeded, addon.PhaseChecking},
		{addon.PhaseFailed, addon.TriggerSpecChanged, addon.PhaseInitializing},
		{addon.PhaseFailed, addon.TriggerResetRequested, addon.PhaseInitializing},
		{addon.PhaseFailed, addon.TriggerForceRequested, addon.PhaseInitializing},
		{addon.PhaseDeleting, addon.TriggerUninstallSucceeded, addon.PhaseDeleted},
	} {
		r, ok := tb.Next(tc.from, tc.trigger)
		require.True(t, ok, "%s + %s", tc.from, tc.trigger)
		assert.Equal(t, tc.to, r.To, "%s + %s", tc.from, tc.trigger)
	}
	_, ok := tb.Next(addon.PhaseDeleted, addon.TriggerSpecChanged)
	assert.False(t, ok, "Deleted is terminal")
	var nilTable *addon.Table
	_, ok = nilTable.Next(addon.PhaseRunning, addon.TriggerHealthy)
	assert.False(t, ok, "a nil table has no rows and does not panic")
}

func TestDefaultTableHasNoDeadEnds(t *testing.T) {
	tb := addon.DefaultTable()
	in := map[addon.Phase]bool{}
	for _, r := range tb.Rows() {
		in[r.From], in[r.To] = true, true
	}
	for _, p := range allPhases {
		if p == addon.PhaseDeleted {
			continue
		}
		require.True(t, in[p], "%s is in the default table", p)
		if p != addon.PhaseDeleting {
			r, ok := tb.Next(p, addon.TriggerDeletionRequested)
			require.True(t, ok, "%s can be deleted", p)
			assert.Equal(t, addon.ActionUninstall, r.Action)
		}
	}
}
