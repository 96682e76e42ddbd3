package addon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

// minimal is a small valid table: install, check, run, fail, delete.
func minimal() []addon.Row {
	return []addon.Row{
		{From: addon.PhaseInitializing, Event: addon.EventInstallSucceeded, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
		{From: addon.PhaseInitializing, Event: addon.EventInstallFailed, To: addon.PhaseFailed},
		{From: addon.PhaseInitializing, Event: addon.EventRetriesExhausted, To: addon.PhaseFailed},
		{From: addon.PhaseInitializing, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseRunning, Event: addon.EventSpecChanged, To: addon.PhaseInitializing, Action: addon.ActionInstall},
		{From: addon.PhaseRunning, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseFailed, Event: addon.EventSpecChanged, To: addon.PhaseInitializing, Action: addon.ActionInstall},
		{From: addon.PhaseFailed, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
		{From: addon.PhaseDeleting, Event: addon.EventUninstallSucceeded, To: addon.PhaseDeleted},
		{From: addon.PhaseDeleting, Event: addon.EventUninstallFailed, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
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
			return append(r, addon.Row{From: addon.PhaseInitializing, Event: addon.EventInstallFailed, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, "duplicate (Initializing, InstallFailed)"},
		{"unknown phase", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseRunning, Event: addon.EventUnhealthy, To: "Limbo"})
		}, `unknown phase "Limbo"`},
		{"unknown event", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseRunning, Event: "Sneezed", To: addon.PhaseRunning})
		}, `unknown event "Sneezed"`},
		{"unknown action", func(r []addon.Row) []addon.Row {
			r[1].Action = "Dance"
			return r
		}, `unknown action "Dance"`},
		{"unreachable phase", func(r []addon.Row) []addon.Row {
			return append(r,
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventUpgradeFailed, To: addon.PhaseFailed},
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, "phase Upgrading cannot be reached"},
		{"phase that cannot be left", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseRunning, Event: addon.EventUnhealthy, To: addon.PhaseChecking})
		}, "phase Checking cannot be left"},
		{"no way out of Failed", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseFailed, addon.EventSpecChanged)
		}, "no way out of Failed"},
		{"Failed's spec change loops back to Failed", func(r []addon.Row) []addon.Row {
			for i := range r {
				if r[i].From == addon.PhaseFailed && r[i].Event == addon.EventSpecChanged {
					r[i].To, r[i].Action = addon.PhaseFailed, addon.ActionNone
				}
			}
			return r
		}, "no way out of Failed"},
		{"a deletion request in Deleting", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleting, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting})
		}, "DeletionRequested in Deleting: deletion is already requested"},
		{"Failed's version change loops back to Failed", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseFailed, Event: addon.EventVersionChanged, To: addon.PhaseFailed})
		}, "no way out of Failed: its VersionChanged row stays in Failed"},
		{"Failed's retry request loops back to Failed", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseFailed, Event: addon.EventRetryRequested, To: addon.PhaseFailed})
		}, "no way out of Failed: its RetryRequested row stays in Failed"},
		{"a failure row without a RetriesExhausted row", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseInitializing, addon.EventRetriesExhausted)
		}, "phase Initializing can fail with InstallFailed but has no RetriesExhausted row"},
		{"no deletion from a phase", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseRunning, addon.EventDeletionRequested)
		}, "phase Running has no DeletionRequested row"},
		{"Deleting never finishes", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseDeleting, addon.EventUninstallSucceeded)
		}, "phase Deleting has no UninstallSucceeded row to Deleted"},
		{"Deleted is terminal", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleted, Event: addon.EventSpecChanged, To: addon.PhaseInitializing, Action: addon.ActionInstall})
		}, "Deleted is terminal"},
		{"an entry action without its outcome rows", func(r []addon.Row) []addon.Row {
			return without(r, addon.PhaseDeleting, addon.EventUninstallFailed)
		}, "Deleting is entered with Uninstall but has no UninstallFailed row"},
		{"remediation into Reinitializing needs its outcome rows", func(r []addon.Row) []addon.Row {
			r[1] = addon.Row{From: addon.PhaseInitializing, Event: addon.EventInstallFailed, To: addon.PhaseReinitializing, Action: addon.ActionRemediate}
			return append(r,
				addon.Row{From: addon.PhaseReinitializing, Event: addon.EventInstallSucceeded, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
				addon.Row{From: addon.PhaseReinitializing, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, "Reinitializing is entered with Uninstall but has no UninstallSucceeded row"},
		{"a deadline in Deleting needs no RetriesExhausted row", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleting, Event: addon.EventDeadlinePassed, To: addon.PhaseDeleting},
				addon.Row{From: addon.PhaseDeleting, Event: addon.EventRetryRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall})
		}, ""},
		{"a deletion stopped at its deadline needs a retry row", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseDeleting, Event: addon.EventDeadlinePassed, To: addon.PhaseDeleting})
		}, "phase Deleting stops at its deadline but has no RetryRequested row to Deleting / Uninstall"},
		{"an upgrade's deadline remediated into a phase without rollback rows", func(r []addon.Row) []addon.Row {
			return append(r,
				addon.Row{From: addon.PhaseRunning, Event: addon.EventVersionChanged, To: addon.PhaseUpgrading, Action: addon.ActionUpgrade},
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventUpgradeSucceeded, To: addon.PhaseRunning, Action: addon.ActionCheckHealth},
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventUpgradeFailed, To: addon.PhaseFailed},
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventRetriesExhausted, To: addon.PhaseFailed},
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventDeletionRequested, To: addon.PhaseDeleting, Action: addon.ActionUninstall},
				addon.Row{From: addon.PhaseUpgrading, Event: addon.EventDeadlinePassed, To: addon.PhaseRunning, Action: addon.ActionRemediate})
		}, "Running is entered with Rollback but has no RollbackFailed row"},
		{"an install's deadline remediated into Failed needs its uninstall rows", func(r []addon.Row) []addon.Row {
			return append(r, addon.Row{From: addon.PhaseInitializing, Event: addon.EventDeadlinePassed, To: addon.PhaseFailed, Action: addon.ActionRemediate})
		}, "Failed is entered with Uninstall but has no UninstallFailed row"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := addon.NewTable(tc.mod(minimal()))
			if tc.want == "" {
				require.NoError(t, err)
				require.NotNil(t, tb)
				return
			}
			require.ErrorIs(t, err, addon.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, tb)
		})
	}
}

func without(rows []addon.Row, from addon.Phase, e addon.Event) []addon.Row {
	var out []addon.Row
	for _, r := range rows {
		if r.From != from || r.Event != e {
			out = append(out, r)
		}
	}
	return out
}

func TestTableValidateListsEveryProblemSorted(t *testing.T) {
	rows := without(without(minimal(), addon.PhaseRunning, addon.EventDeletionRequested), addon.PhaseFailed, addon.EventSpecChanged)
	_, err := addon.NewTable(rows)
	var ie *addon.InvalidError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "table", ie.What)
	assert.IsNonDecreasing(t, ie.Problems)
	assert.GreaterOrEqual(t, len(ie.Problems), 2)
}

func TestCustomTableDrivesDecide(t *testing.T) {
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}, Table: tb, Now: tNow,
		Status: st(addon.PhaseInitializing, addon.ActionInstall), Observation: ran(addon.ActionInstall, errBoom)})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseFailed, d.Status.Phase, "the custom table sends a failed install straight to Failed")
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
    Running --> Initializing: SpecChanged / Install
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
		assert.Contains(t, def, string(r.Event), "every row is drawn")
	}
	assert.Contains(t, def, "    Failed --> Failed: UninstallSucceeded, UninstallFailed, RollbackSucceeded, RollbackFailed\n", "rows between the same phases share an edge")
	assert.Contains(t, def, "    Deleting --> Deleting: UninstallFailed / Uninstall, DeadlinePassed, RetryRequested / Uninstall\n",
		"a deletion stops at its deadline until a retry is requested")
}

func TestRetriesExhaustedWithoutARowStopsRetrying(t *testing.T) {
	// A status in Running with an install pending (say, hand-edited) under the
	// minimal table, which has no install-failure rows from Running.
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}, Table: tb, Now: tNow,
		Status: st(addon.PhaseRunning, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 5 }), Observation: ran(addon.ActionInstall, errBoom)})
	require.NoError(t, err)
	assert.Equal(t, addon.ActionNone, d.Status.PendingAction, "no sixth retry")
	assert.Equal(t, "RetriesExhausted", d.Status.Reason)

	d, err = addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}, Table: tb, Now: tNow,
		Status: st(addon.PhaseRunning, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 1 }), Observation: ran(addon.ActionInstall, errBoom)})
	require.NoError(t, err)
	assert.Equal(t, addon.ActionInstall, d.Status.PendingAction, "retried after the backoff while retries remain")
	assert.Equal(t, 20*time.Second, d.RequeueAfter)
}

func TestDeletingWithNothingPendingUnderATableThatNeverStops(t *testing.T) {
	tb, err := addon.NewTable(minimal())
	require.NoError(t, err)
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1", Deleting: true}, Table: tb, Now: tNow,
		Status: st(addon.PhaseDeleting, addon.ActionNone)})
	require.NoError(t, err)
	assert.Equal(t, addon.ActionUninstall, d.Action, "without a deadline stop in the table, Deleting always uninstalls")
}
