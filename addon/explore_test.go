package addon_test

import (
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
