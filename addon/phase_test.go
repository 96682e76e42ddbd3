package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge/addon"
)

func TestPhasesEventsActionsAreKnown(t *testing.T) {
	for _, p := range addon.Phases() {
		assert.True(t, p.Known(), p)
	}
	for _, e := range addon.Events() {
		assert.True(t, e.Known(), e)
	}
	for _, a := range []addon.Action{addon.ActionNone, addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback,
		addon.ActionUninstall, addon.ActionCheckHealth, addon.ActionRemediate} {
		assert.True(t, a.Known(), a)
	}
	assert.False(t, addon.Phase("Paused").Known())
	assert.False(t, addon.Phase("").Known())
	assert.False(t, addon.Event("Exploded").Known())
	assert.False(t, addon.Action("Reboot").Known())
	assert.Len(t, addon.Phases(), 9)
	assert.Len(t, addon.Events(), 16)
}

func TestPhasesReturnsACopy(t *testing.T) {
	p := addon.Phases()
	p[0] = "Mutated"
	assert.Equal(t, addon.PhaseInitializing, addon.Phases()[0])
	e := addon.Events()
	e[0] = "Mutated"
	assert.Equal(t, addon.EventInstallSucceeded, addon.Events()[0])
}
