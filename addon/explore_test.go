package addon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

// exploreDepth bounds TestExploreDefaultTable so that it runs within CI's
// minute under -race on two cores.
const exploreDepth = 6

// TestExploreDefaultTable checks every state of the default table reachable
// within exploreDepth steps, and the rules of addon.Explore in each.
func TestExploreDefaultTable(t *testing.T) {
	start := time.Now()
	report, err := addon.Explore(addon.ExploreOptions{Depth: exploreDepth})
	require.NoError(t, err)
	t.Logf("explored %d states, %d transitions, depth %d, in %s", report.States, report.Transitions, report.Depth, time.Since(start).Round(time.Millisecond))
	require.Equal(t, exploreDepth, report.Depth)
}
