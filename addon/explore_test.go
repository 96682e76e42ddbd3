package addon_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/addon"
)

// exploreDepth bounds TestExploreDefaultTable: 5 (15,608 states) runs in
// seconds under -race on two cores; deeper runs are for a workstation
// (depth 8: 324,832 states, about a minute without -race).
var exploreDepth = flag.Int("explore-depth", 5, "TestExploreDefaultTable: how many steps from a new add-on to explore")

// TestExploreDefaultTable checks every state of the default table reachable
// within exploreDepth steps, and the rules of addon.Explore in each.
func TestExploreDefaultTable(t *testing.T) {
	start := time.Now()
	report, err := addon.Explore(addon.ExploreOptions{Depth: *exploreDepth})
	require.NoError(t, err)
	t.Logf("explored %d states, %d transitions, depth %d, in %s", report.States, report.Transitions, report.Depth, time.Since(start).Round(time.Millisecond))
	require.Equal(t, *exploreDepth, report.Depth)
}

// TestExploreOtherPoliciesAndTables runs the same checks on the default
// table under other policies, and on a small table of one's own.
func TestExploreOtherPoliciesAndTables(t *testing.T) {
	minimalTable, err := addon.NewTable(minimal())
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		table  *addon.Table
		policy addon.Policy
	}{
		{"no retries, uninstall after a failed upgrade", nil, addon.Policy{MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall}},
		{"no remediation, unlimited retries", nil, addon.Policy{MaxRetries: ptr.To[int32](-1), InstallRemediation: addon.RemediationNone, UpgradeRemediation: addon.RemediationNone}},
		{"tests and drift correction, last failure kept", nil, addon.Policy{Test: addon.TestPolicy{Enable: true}, Drift: addon.DriftCorrect, RemediateLastFailure: ptr.To(false)}},
		{"a table of one's own", minimalTable, addon.Policy{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report, err := addon.Explore(addon.ExploreOptions{Table: tc.table, Policy: tc.policy, Depth: 4})
			require.NoError(t, err)
			t.Logf("%d states", report.States)
		})
	}
}
