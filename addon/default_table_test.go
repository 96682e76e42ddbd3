package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

func TestDefaultTableIsValid(t *testing.T) {
	require.NoError(t, addon.DefaultTable().Validate())
	_, err := addon.NewTable(addon.DefaultTable().Rows())
	require.NoError(t, err)
}

func TestDefaultTableCoversTheSeedLifecycle(t *testing.T) {
	tb := addon.DefaultTable()
	for _, tc := range []struct {
		from  addon.Phase
		event addon.Event
		to    addon.Phase
	}{
		{addon.PhaseInitializing, addon.EventInstallSucceeded, addon.PhaseChecking},
		{addon.PhaseInitializing, addon.EventInstallFailed, addon.PhaseReinitializing},
		{addon.PhaseReinitializing, addon.EventInstallSucceeded, addon.PhaseChecking},
		{addon.PhaseReinitializing, addon.EventRetriesExhausted, addon.PhaseFailed},
		{addon.PhaseChecking, addon.EventHealthy, addon.PhaseRunning},
		{addon.PhaseRunning, addon.EventUnhealthy, addon.PhaseChecking},
		{addon.PhaseRunning, addon.EventVersionChanged, addon.PhaseUpgrading},
		{addon.PhaseUpgrading, addon.EventUpgradeSucceeded, addon.PhaseChecking},
		{addon.PhaseChecking, addon.EventUpgradeFailed, addon.PhaseRemediating},
		{addon.PhaseRemediating, addon.EventRollbackSucceeded, addon.PhaseChecking},
		{addon.PhaseFailed, addon.EventSpecChanged, addon.PhaseInitializing},
		{addon.PhaseFailed, addon.EventRetryRequested, addon.PhaseInitializing},
		{addon.PhaseDeleting, addon.EventUninstallSucceeded, addon.PhaseDeleted},
	} {
		r, ok := tb.Next(tc.from, tc.event)
		require.True(t, ok, "%s + %s", tc.from, tc.event)
		assert.Equal(t, tc.to, r.To, "%s + %s", tc.from, tc.event)
	}
	_, ok := tb.Next(addon.PhaseDeleted, addon.EventSpecChanged)
	assert.False(t, ok, "Deleted is terminal")
	var nilTable *addon.Table
	_, ok = nilTable.Next(addon.PhaseRunning, addon.EventHealthy)
	assert.False(t, ok, "a nil table has no rows and does not panic")
}

func TestDefaultTableHasNoDeadEnds(t *testing.T) {
	tb := addon.DefaultTable()
	for _, p := range addon.Phases() {
		if p == addon.PhaseDeleted {
			continue
		}
		require.True(t, tb.Has(p), "%s is in the default table", p)
		if p != addon.PhaseDeleting {
			r, ok := tb.Next(p, addon.EventDeletionRequested)
			require.True(t, ok, "%s can be deleted", p)
			assert.Equal(t, addon.ActionUninstall, r.Action)
		}
	}
}
