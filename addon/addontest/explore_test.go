package addontest_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/addon/addontest"
)

var (
	// exploreDepth bounds TestExploreDefaultTable: 5, the depth that kills
	// hack/mutants/addon, or 4 under -race, whose checks a search on one
	// goroutine does not need; deeper runs are for a workstation (see
	// docs/addon.md for the figures).
	exploreDepth  = flag.Int("explore-depth", defaultExploreDepth(), "TestExploreDefaultTable: how many steps from a new add-on to explore")
	exploreReplay = flag.String("explore-replay", "", "TestExploreDefaultTable: walk only this path (an ExploreError's Path)")
)

func defaultExploreDepth() int {
	if raceDetector {
		return 4
	}
	return 5
}

// explore runs addontest.Explore, walking only -explore-replay when it is
// set, and, when a rule breaks, fails with the command that walks the
// failing path again. Every reason the decisions wrote is one addon.Reasons
// lists.
func explore(t *testing.T, opts addontest.ExploreOptions) addontest.ExploreReport {
	t.Helper()
	opts.Replay = *exploreReplay
	start := time.Now()
	report, err := addontest.Explore(opts)
	var ee *addontest.ExploreError
	if errors.As(err, &ee) {
		var run []string
		for _, name := range strings.Split(t.Name(), "/") {
			run = append(run, "^"+regexp.QuoteMeta(name)+"$")
		}
		t.Fatalf("%v\nreplay: go test ./addon/addontest -run '%s' -args -explore-replay %s", err, strings.Join(run, "/"), ee.Path)
	}
	require.NoError(t, err)
	assert.Subset(t, addon.Reasons(), report.Reasons, "the decisions wrote a reason addon.Reasons does not list")
	t.Logf("explored %d states, %d transitions, depth %d, in %s", report.States, report.Transitions, report.Depth, time.Since(start).Round(time.Millisecond))
	return report
}

// TestExploreDefaultTable checks every state of the default table reachable
// within exploreDepth steps, and the rules of addontest.Explore in each.
func TestExploreDefaultTable(t *testing.T) {
	report := explore(t, addontest.ExploreOptions{Depth: *exploreDepth})
	if *exploreReplay == "" {
		require.Equal(t, *exploreDepth, report.Depth)
	}
}

// ownTable is a small valid table of one's own, kept as data: install (an
// upgrade once something is installed), check, run, retry a failed
// re-apply, fail, delete.
func ownTable(t *testing.T) *addon.Table {
	t.Helper()
	data, err := os.ReadFile("testdata/own-table.json")
	require.NoError(t, err)
	var rows []addon.Row
	require.NoError(t, json.Unmarshal(data, &rows))
	table, err := addon.NewTable(rows)
	require.NoError(t, err)
	return table
}

// TestExploreOtherPoliciesAndTables runs the same checks on the default
// table under other policies, one of them paused and resumed and its
// windows closed and opened (ExploreOptions.Gates), and on a small table
// of one's own.
func TestExploreOtherPoliciesAndTables(t *testing.T) {
	for _, tc := range []struct {
		name   string
		table  *addon.Table
		policy addon.Policy
		gates  bool
	}{
		{"no retries, uninstall after a failed upgrade", nil, addon.Policy{MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall}, false},
		{"no remediation, unlimited retries", nil, addon.Policy{MaxRetries: ptr.To[int32](-1), InstallRemediation: addon.RemediationNone, UpgradeRemediation: addon.RemediationNone}, false},
		{"tests and drift correction, last failure kept", nil, addon.Policy{Test: addon.TestPolicy{Enable: true}, Drift: addon.DriftCorrect, RemediateLastFailure: ptr.To(false)}, false},
		{"a table of its own", ownTable(t), addon.Policy{}, false},
		{"paused and closed windows, tests and drift correction", nil, addon.Policy{Test: addon.TestPolicy{Enable: true}, Drift: addon.DriftCorrect}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			explore(t, addontest.ExploreOptions{Table: tc.table, Policy: tc.policy, Depth: 4, Gates: tc.gates})
		})
	}
}

// TestExploreReplaysItsPath: the Path of an ExploreError walks to the same
// break, and a path that is no path of the exploration is bad input. A
// liveness bound too short to reach Running breaks on the first state that
// needs more steps.
func TestExploreReplaysItsPath(t *testing.T) {
	_, err := addontest.Explore(addontest.ExploreOptions{Depth: 4, Converge: 3})
	var first *addontest.ExploreError
	require.ErrorAs(t, err, &first)
	require.NotEmpty(t, first.Path)
	_, err = addontest.Explore(addontest.ExploreOptions{Depth: 4, Converge: 3, Replay: first.Path})
	var again *addontest.ExploreError
	require.ErrorAs(t, err, &again)
	assert.Equal(t, first, again)
	assert.Equal(t, fmt.Sprintf("addontest: explore: %s\n  after: %s\n  path: %s", first.Rule, strings.Join(first.Steps, " → "), first.Path), first.Error())

	for _, bad := range []string{"x", "0.99999"} {
		_, err := addontest.Explore(addontest.ExploreOptions{Depth: 2, Replay: bad})
		require.ErrorIs(t, err, converge.ErrInvalid, bad)
	}
}
