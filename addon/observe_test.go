package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

// One look fires at most one spec event, in this order: deletion, retry
// request, version change, spec change.
func TestSpecEventPriority(t *testing.T) {
	all := addon.Spec{Name: "mesh", Generation: 2, Version: "v2", RetryToken: "t"}
	for _, tc := range []struct {
		name string
		spec addon.Spec
		want string
	}{
		{"deletion beats everything", addon.Spec{Name: "mesh", Generation: 2, Version: "v2", RetryToken: "t", Deleting: true}, "DeletionRequested"},
		{"retry beats a version change", all, "RetryRequested"},
		{"a version change beats a spec change", addon.Spec{Name: "mesh", Generation: 2, Version: "v2"}, "VersionChanged"},
		{"spec change", addon.Spec{Name: "mesh", Generation: 2, Version: "v1"}, "SpecChanged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := addon.Decide(addon.Input{Spec: tc.spec, Status: st(addon.PhaseFailed, addon.ActionNone), Now: tNow})
			require.NoError(t, err)
			require.Len(t, d.Events, 1)
			assert.Equal(t, tc.want, d.Events[0].Reason)
		})
	}
}

// A health observation that is neither healthy nor unhealthy counts as
// unknown, so a driver bug cannot move the phase.
func TestOddHealthCountsAsUnknown(t *testing.T) {
	d, err := addon.Decide(addon.Input{Spec: meshSpec, Status: st(addon.PhaseRunning, addon.ActionCheckHealth), Now: tNow,
		Observation: addon.Observation{Action: addon.ActionCheckHealth, Health: "Sparkly"}})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseRunning, d.Status.Phase)
	assert.Empty(t, d.Events)
}
