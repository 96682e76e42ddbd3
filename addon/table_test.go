package addon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/internal/input"
)

// minimal is a small valid table: install (an upgrade once something is
// installed), check, run, retry a failed re-apply, fail, delete.
func minimal() []addon.Row {
	return []addon.Row{
		{From: addon.PhaseInitializing, Trigger: addon.TriggerInstallSucceeded, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
		{From: addon.PhaseInitializing, Trigger: addon.TriggerInstallFailed, To: addon.PhaseFailed},
		{From: addon.PhaseInitializing, Trigger: addon.TriggerRetriesExhausted, To: addon.PhaseFailed},
		{From: addon.PhaseInitializing, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseUpgrading, Trigger: addon.TriggerUpgradeSucceeded, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
		{From: addon.PhaseUpgrading, Trigger: addon.TriggerUpgradeFailed, To: addon.PhaseFailed},
		{From: addon.PhaseUpgrading, Trigger: addon.TriggerReapplyFailed, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
		{From: addon.PhaseUpgrading, Trigger: addon.TriggerRetriesExhausted, To: addon.PhaseFailed},
		{From: addon.PhaseUpgrading, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseRunning, Trigger: addon.TriggerSpecChanged, To: addon.PhaseUpgrading, Action: addon.ActionUpgrade},
		{From: addon.PhaseRunning, Trigger: addon.TriggerReapplyDue, To: addon.PhaseUpgrading, Action: addon.ActionUpgrade},
		{From: addon.PhaseRunning, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseFailed, Trigger: addon.TriggerSpecChanged, To: addon.PhaseInitializing, Action: addon.ActionInstall},
		{From: addon.PhaseFailed, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseDeleting, Trigger: addon.TriggerUninstallSucceeded, To: addon.PhaseDeleted},
		{From: addon.PhaseDeleting, Trigger: addon.TriggerUninstallFailed, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
	}
}

func TestTableValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func([]addon.Row) []addon.Row
		want string // "" = valid
	}{
		{"minimal table is valid", func(r []addon.Row) []addon.Row { return r }, ""},
		{"no rows", func([]addon.Row) []addon.Row { return nil }, "no rows"},
		{"duplicate (from, event)", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseInitializing, Trigger: addon.TriggerInstallFailed, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, "duplicate (Initializing, InstallFailed)"},
		{"unknown phase", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseRunning, Trigger: addon.TriggerUnhealthy, To: "Limbo"})
		}, `unknown phase "Limbo"`},
		{"unknown trigger", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseRunning, Trigger: "Sneezed", To: addon.PhaseRunning})
		}, `unknown trigger "Sneezed"`},
		{"unknown action", func(r []addon.Row) []addon.Row {
			r[1].Action = "Dance"
			return r
		}, `unknown action "Dance"`},
		{"unreachable phase", func(r []addon.Row) []addon.Row {
			return append(r,
				addon.Row{From: addon.PhaseRemediating, Trigger: addon.TriggerUpgradeFailed, To: addon.PhaseFailed},
				addon.Row{From: addon.PhaseRemediating, Trigger: addon.TriggerRetriesExhausted, To: addon.PhaseFailed},
				addon.Row{From: addon.PhaseRemediating, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, "phase Remediating cannot be reached"},
		{"phase that cannot be left", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseRunning, Trigger: addon.TriggerUnhealthy, To: addon.PhaseChecking})
		}, "phase Checking cannot be left"},
		{"no way out of Failed", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseFailed, addon.TriggerSpecChanged)
		}, "no way out of Failed"},
		{"Failed's spec change loops back to Failed", func(r []addon.Row) []addon.Row {
			for i := range r {
				if r[i].From == addon.PhaseFailed && r[i].Trigger == addon.TriggerSpecChanged {
					r[i].To, r[i].Action = addon.PhaseFailed, addon.ActionNone
				}
			}
			return r
		}, "no way out of Failed"},
		{"a row that runs the test step", func(r []addon.Row) []addon.Row {
			r[0].Action = addon.ActionTest
			return r
		}, "Test runs only in Checking"},
		{"remediation without Failed", func(r []addon.Row) []addon.Row {
			var out []addon.Row
			for _, row := range r {
				if row.From != addon.PhaseFailed && row.To != addon.PhaseFailed {
					out = append(out, row)
				}
			}
			return append(out, addon.Row{From: addon.PhaseUpgrading, Trigger: addon.TriggerUpgradeFailed, To: addon.PhaseUpgrading, Action: addon.ActionRemediate},
				addon.Row{From: addon.PhaseUpgrading, Trigger: addon.TriggerRollbackFailed, To: addon.PhaseUpgrading, Action: addon.ActionUpgrade})
		}, "rows remediate but Failed"},
		{"a deletion request in Deleting", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleting, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting})
		}, "DeletionRequested in Deleting: deletion is already requested"},
		{"Failed's version change loops back to Failed", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseFailed, Trigger: addon.TriggerVersionChanged, To: addon.PhaseFailed})
		}, "no way out of Failed: its VersionChanged row stays in Failed"},
		{"Failed's reset request loops back to Failed", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseFailed, Trigger: addon.TriggerResetRequested, To: addon.PhaseFailed})
		}, "no way out of Failed: its ResetRequested row stays in Failed"},
		{"a failure row without a RetriesExhausted row", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseInitializing, addon.TriggerRetriesExhausted)
		}, "phase Initializing can fail with InstallFailed but has no RetriesExhausted row"},
		{"no deletion from a phase", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseRunning, addon.TriggerDeletionRequested)
		}, "phase Running has no DeletionRequested row"},
		{"Deleting never finishes", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseDeleting, addon.TriggerUninstallSucceeded)
		}, "phase Deleting has no UninstallSucceeded row to Deleted"},
		{"Deleted is terminal", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleted, Trigger: addon.TriggerSpecChanged, To: addon.PhaseInitializing, Action: addon.ActionInstall})
		}, "Deleted is terminal"},
		{"an entry action without its outcome rows", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseDeleting, addon.TriggerUninstallFailed)
		}, "Deleting is entered with Uninstall but has no UninstallFailed row"},
		{"remediation into Reinitializing needs its outcome rows", func(r []addon.Row) []addon.Row {
			r[1] = addon.Row{From: addon.PhaseInitializing, Trigger: addon.TriggerInstallFailed, To: addon.PhaseReinitializing, Action: addon.ActionRemediate}
			return append(r,
				addon.Row{From: addon.PhaseReinitializing, Trigger: addon.TriggerInstallSucceeded, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
				addon.Row{From: addon.PhaseReinitializing, Trigger: addon.TriggerDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, "Reinitializing is entered with Uninstall but has no UninstallSucceeded row"},
		{"a deadline in Deleting needs no RetriesExhausted row", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleting, Trigger: addon.TriggerDeadlinePassed, To: addon.PhaseDeleting},
				addon.Row{From: addon.PhaseDeleting, Trigger: addon.TriggerResetRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, ""},
		{"a deletion stopped at its deadline needs a retry row", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleting, Trigger: addon.TriggerDeadlinePassed, To: addon.PhaseDeleting})
		}, "phase Deleting stops at its deadline but has no ResetRequested row to Deleting / Uninstall"},
		{"an upgrade's deadline remediated into a phase without rollback rows", func(r []addon.Row) []addon.Row {
			return append(r,
				addon.Row{From: addon.PhaseUpgrading, Trigger: addon.TriggerDeadlinePassed, To: addon.PhaseRunning, Action: addon.ActionRemediate})
		}, "Running is entered with Rollback but has no RollbackFailed row"},
		{"an install's deadline remediated into Failed needs its uninstall rows", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseInitializing, Trigger: addon.TriggerDeadlinePassed, To: addon.PhaseFailed, Action: addon.ActionRemediate})
		}, "Failed is entered with Uninstall but has no UninstallFailed row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := addon.NewTable(tc.mod(minimal()))
			if tc.want == "" {
				require.NoError(t, err)
				require.NotNil(t, tb)
				return
			}
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, tb)
		})
	}
}

func without(rows []addon.Row, from addon.Phase, e addon.Trigger) []addon.Row {
	var out []addon.Row
	for _, r := range rows {
		if r.From != from || r.Trigger != e {
			out = append(out, r)
		}
	}
	return out
}

func TestTableValidateListsEveryProblemSorted(t *testing.T) {
	rows := without(without(minimal(), addon.PhaseRunning, addon.TriggerDeletionRequested), addon.PhaseFailed, addon.TriggerSpecChanged)
	_, err := addon.NewTable(rows)
	var ie *input.Error
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "table", ie.What)
	assert.IsNonDecreasing(t, ie.Problems)
	assert.GreaterOrEqual(t, len(ie.Problems), 2)
}

func TestCustomTableDrivesDecide(t *testing.T) {
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	s := st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }, claimed(addon.ActionInstall, "", "v1"))
	d, err := addon.Decide(addon.Input{Spec: meshSpec, Table: tb, Now: tNow, Status: s, Observation: ran(s, errBoom)})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseFailed, d.Status.Phase, "the custom table sends a failed install straight to Failed")
}

// TestNewVersionWithoutAVersionChangedRowIsASpecChange was found by
// TestExploreOtherPoliciesAndTables: Failed under the minimal table, which
// has no VersionChanged row, stayed Failed on a new version.
func TestNewVersionWithoutAVersionChangedRowIsASpecChange(t *testing.T) {
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 2, Version: "v2"}, Table: tb, Now: tNow,
		Status: st(addon.PhaseFailed, addon.ActionNone)})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseUpgrading, d.Status.Phase)
	assert.Equal(t, addon.ActionUpgrade, d.Action, "SpecChanged's install row, resolved: v1 is installed")
	assert.Equal(t, "SpecChanged", d.Status.Reason)
}

func TestTableValidateResolvesInstallBothWays(t *testing.T) {
	rows := without(minimal(), addon.PhaseUpgrading, addon.TriggerUpgradeFailed)
	_, err := addon.NewTable(rows)
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.Contains(t, err.Error(), "Upgrading is entered with Upgrade but has no UpgradeFailed row",
		"an Install row re-applies as an upgrade once something is installed, so Upgrading needs its outcome rows")
}

func TestMermaid(t *testing.T) {
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	got := tb.Mermaid()
	want := `stateDiagram-v2
    [*] --> Initializing
    Initializing --> Running: InstallSucceeded / CheckHealth
    Initializing --> Failed: InstallFailed, RetriesExhausted
    Initializing --> Deleting: DeletionRequested / Uninstall
    Upgrading --> Running: UpgradeSucceeded / CheckHealth, ReapplyFailed / CheckHealth
    Upgrading --> Failed: UpgradeFailed, RetriesExhausted
    Upgrading --> Deleting: DeletionRequested / Uninstall
    Running --> Upgrading: SpecChanged / Upgrade, ReapplyDue / Upgrade
    Running --> Deleting: DeletionRequested / Uninstall
    Failed --> Initializing: SpecChanged / Install
    Failed --> Deleting: DeletionRequested / Uninstall
    Deleting --> Deleted: UninstallSucceeded
    Deleting --> Deleting: UninstallFailed / Uninstall
    Deleted --> [*]
`
	assert.Equal(t, want, got)
	def := addon.DefaultTable().Mermaid()
	for _, r := range addon.DefaultTable().Rows() {
		assert.Contains(t, def, string(r.Trigger), "every row is drawn")
	}
	assert.Contains(t, def, "    Failed --> Failed: UninstallSucceeded, UninstallFailed, RollbackSucceeded, RollbackFailed\n", "rows between the same phases share an edge")
	assert.Contains(t, def, "    Deleting --> Deleting: UninstallFailed / Uninstall, DeadlinePassed, ResetRequested / Uninstall, ForceRequested / Uninstall\n",
		"a deletion stops at its deadline until a reset or force is requested")
}

// TestRunningRecordsTheLastGoodVersionWithoutAHealthyRow: a table may enter
// Running without a Healthy row (the minimal one does, straight from an
// install); a healthy read there still records the version, and the
// revision that carries it, as the last good one, so that a failed re-apply
// of it is retried rather than stopped.
func TestRunningRecordsTheLastGoodVersionWithoutAHealthyRow(t *testing.T) {
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	s := st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.LastGoodVersion, s.InstalledRevision = "", "3" })
	d, err := addon.Decide(addon.Input{Spec: meshSpec, Table: tb, Now: tNow, Status: s, Observation: health(addon.HealthHealthy, nil)})
	require.NoError(t, err)
	assert.Equal(t, "v1", d.Status.LastGoodVersion)
	assert.Equal(t, "3", d.Status.LastGoodRevision)
	d, err = addon.Decide(addon.Input{Spec: meshSpec, Table: tb, Now: tNow, Status: s, Observation: health(addon.HealthUnhealthy, nil)})
	require.NoError(t, err)
	assert.Empty(t, d.Status.LastGoodVersion, "an unhealthy read records nothing")
}
