package addontest_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/addon/addontest"
)

// Explore checks every state of a table within a depth; the report says
// how much it covered.
func ExampleExplore() {
	report, err := addontest.Explore(addontest.ExploreOptions{Depth: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d states, %d decisions, depth %d\n", report.States, report.Transitions, report.Depth)
	// Output: 1595 states, 2541 decisions, depth 3
}

// A table of one's own that re-installs a running add-on from scratch on a
// new spec breaks a rule: the path to the break, and the Path to replay it.
func ExampleExplore_brokenRule() {
	rows := addon.DefaultTable().Rows()
	for i, r := range rows {
		if r.From == addon.PhaseRunning && r.Trigger == addon.TriggerSpecChanged {
			rows[i] = addon.Row{From: addon.PhaseRunning, Trigger: addon.TriggerSpecChanged, To: addon.PhaseReinitializing, Action: addon.ActionUninstall}
		}
	}
	table, err := addon.NewTable(rows)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = addontest.Explore(addontest.ExploreOptions{Table: table, Depth: 4})
	var broken *addontest.ExploreError
	if errors.As(err, &broken) {
		fmt.Println(broken.Rule)
		fmt.Println(strings.Join(broken.Steps, "\n"))
		fmt.Println("replay with Path", broken.Path)
	}
	// Output:
	// the healthy v1 is uninstalled, neither deleted nor remediating a failure of another version (last failed: "")
	// look: Install succeeds
	// look: healthy
	// new spec, same version
	// replay with Path 0.0
}
