package addon

import (
	"fmt"
	"sort"

	"github.com/converge-dev/converge/internal/input"
)

// tableRules are the rules of a valid table, one check each: NewTable runs
// them all and reports every problem they find.
var tableRules = []func(t *Table) []string{
	(*Table).knownValues,
	(*Table).noDuplicates,
	(*Table).deletedIsTerminal,
	(*Table).deletionRequestedOnce,
	(*Table).testsRunOnlyByPolicy,
	(*Table).inspectionsRunOnlyByTheEngine,
	(*Table).waitingPhasesHaveWork,
	(*Table).entriesHaveOutcomeRows,
	(*Table).failedReapplyIsWatched,
	(*Table).failedReapplyIsRetried,
	(*Table).remediationCanStop,
	(*Table).phasesAreReachable,
	(*Table).phasesCanBeLeft,
	(*Table).phasesCanBeDeleted,
	(*Table).upgradesCanFailAReapply,
	(*Table).failuresExhaust,
	(*Table).deletingEnds,
	(*Table).stoppedDeletionRestarts,
	(*Table).failedIsLeft,
}

// validate reports the problems NewTable lists, sorted.
func (t *Table) validate() error {
	if t == nil || len(t.rows) == 0 {
		return input.Invalid("addon", "table", "no rows")
	}
	var problems []string
	for _, rule := range tableRules {
		problems = append(problems, rule(t)...)
	}
	sort.Strings(problems)
	return input.Invalid("addon", "table", problems...)
}

// rowProblems returns, for each row where broken returns a problem, that
// problem after the row's index.
func (t *Table) rowProblems(broken func(r Row) string) []string {
	var problems []string
	for i, r := range t.rows {
		if p := broken(r); p != "" {
			problems = append(problems, fmt.Sprintf("row %d: %s", i, p))
		}
	}
	return problems
}

// knownValues: every row names known phases, a known trigger and a known
// action.
func (t *Table) knownValues() []string {
	var problems []string
	for i, r := range t.rows {
		for _, p := range [...]Phase{r.From, r.To} {
			if !p.known() {
				problems = append(problems, fmt.Sprintf("row %d: unknown phase %q", i, p))
			}
		}
		if !r.Trigger.known() {
			problems = append(problems, fmt.Sprintf("row %d: unknown trigger %q", i, r.Trigger))
		}
		if !r.Action.known() {
			problems = append(problems, fmt.Sprintf("row %d: unknown action %q", i, r.Action))
		}
	}
	return problems
}

// noDuplicates: one row at most per (From, Trigger).
func (t *Table) noDuplicates() []string {
	seen := map[rowKey]bool{}
	return t.rowProblems(func(r Row) string {
		k := rowKey{r.From, r.Trigger}
		dup := seen[k]
		seen[k] = true
		if dup {
			return fmt.Sprintf("duplicate (%s, %s)", r.From, r.Trigger)
		}
		return ""
	})
}

// deletedIsTerminal: no row leaves PhaseDeleted.
func (t *Table) deletedIsTerminal() []string {
	return t.rowProblems(func(r Row) string {
		if r.From == PhaseDeleted {
			return fmt.Sprintf("%s is terminal", PhaseDeleted)
		}
		return ""
	})
}

// deletionRequestedOnce: PhaseDeleting has no DeletionRequested row, its
// deletion being already requested.
func (t *Table) deletionRequestedOnce() []string {
	return t.rowProblems(func(r Row) string {
		if r.From == PhaseDeleting && r.Trigger == TriggerDeletionRequested {
			return fmt.Sprintf("%s in %s: deletion is already requested", TriggerDeletionRequested, PhaseDeleting)
		}
		return ""
	})
}

// testsRunOnlyByPolicy: no row runs ActionTest; Policy.Test runs it, in
// PhaseChecking.
func (t *Table) testsRunOnlyByPolicy() []string {
	return t.rowProblems(func(r Row) string {
		if r.Action == ActionTest {
			return fmt.Sprintf("%s runs only in %s, by Policy.Test", ActionTest, PhaseChecking)
		}
		return ""
	})
}

// inspectionsRunOnlyByTheEngine: no row runs ActionInspect; Decide runs it
// on its own, after a takeover or a late outcome.
func (t *Table) inspectionsRunOnlyByTheEngine() []string {
	return t.rowProblems(func(r Row) string {
		if r.Action == ActionInspect {
			return fmt.Sprintf("%s runs only after a takeover, by the engine", ActionInspect)
		}
		return ""
	})
}

// waitingPhasesHaveWork: no row enters a phase that waits with nothing to
// do, but Deleting (a deletion stopped at its deadline).
func (t *Table) waitingPhasesHaveWork() []string {
	return t.rowProblems(func(r Row) string {
		if r.Action == ActionNone && r.To.waits() && r.To != PhaseDeleting {
			return fmt.Sprintf("enters %s, which waits, with nothing to do", r.To)
		}
		return ""
	})
}

// entriesHaveOutcomeRows: a phase a row enters with an action has a row for
// each outcome of that action, with ActionRemediate resolved every way a
// policy can and Install and Upgrade resolved both ways (see Row).
func (t *Table) entriesHaveOutcomeRows() []string {
	var problems []string
	for i, r := range t.rows {
		for _, a := range t.entryActions(r) {
			for _, to := range resolutions(r.To, a) {
				for _, e := range outcomeTriggers(to.action) {
					if _, ok := t.index[rowKey{to.phase, e}]; !ok {
						problems = append(problems, fmt.Sprintf("row %d: %s is entered with %s but has no %s row", i, to.phase, to.action, e))
					}
				}
			}
		}
	}
	return problems
}

// failedReapplyIsWatched: a ReapplyFailed row runs a health check or
// nothing: the version that still runs is never remediated.
func (t *Table) failedReapplyIsWatched() []string {
	return t.rowProblems(func(r Row) string {
		if r.Trigger == TriggerReapplyFailed && r.Action != ActionCheckHealth && r.Action != ActionNone {
			return fmt.Sprintf("%s runs %s: a failed re-apply of a version that still runs is never remediated", TriggerReapplyFailed, r.Action)
		}
		return ""
	})
}

// failedReapplyIsRetried: a ReapplyFailed row enters Failed or a phase with
// a ReapplyDue row, which retries the re-apply.
func (t *Table) failedReapplyIsRetried() []string {
	return t.rowProblems(func(r Row) string {
		if r.Trigger != TriggerReapplyFailed || r.To == PhaseFailed {
			return ""
		}
		if _, ok := t.index[rowKey{r.To, TriggerReapplyDue}]; !ok {
			return fmt.Sprintf("%s enters %s, which has no %s row to retry it", TriggerReapplyFailed, r.To, TriggerReapplyDue)
		}
		return ""
	})
}

// remediationCanStop: a table whose rows remediate has PhaseFailed, where
// an unusable rollback target stops.
func (t *Table) remediationCanStop() []string {
	if t.used()[PhaseFailed] {
		return nil
	}
	for _, r := range t.rows {
		if r.Action == ActionRemediate {
			return []string{fmt.Sprintf("rows remediate but %s, where an unusable rollback target stops, is not in the table", PhaseFailed)}
		}
	}
	return nil
}

// used returns the phases the table uses: PhaseInitializing, where every
// add-on starts, and every row's From and To.
func (t *Table) used() map[Phase]bool {
	used := map[Phase]bool{PhaseInitializing: true}
	for _, r := range t.rows {
		used[r.From], used[r.To] = true, true
	}
	return used
}

// usedPhases checks each phase the table uses with broken, in the order of
// allPhases.
func (t *Table) usedPhases(broken func(p Phase) string) []string {
	used := t.used()
	var problems []string
	for _, p := range allPhases {
		if used[p] {
			if problem := broken(p); problem != "" {
				problems = append(problems, problem)
			}
		}
	}
	return problems
}

// phasesAreReachable: every phase the table uses can be reached from
// PhaseInitializing.
func (t *Table) phasesAreReachable() []string {
	next := map[Phase][]Phase{}
	for _, r := range t.rows {
		if r.To != r.From {
			next[r.From] = append(next[r.From], r.To)
		}
	}
	reached := map[Phase]bool{PhaseInitializing: true}
	for queue := []Phase{PhaseInitializing}; len(queue) > 0; queue = queue[1:] {
		for _, n := range next[queue[0]] {
			if !reached[n] {
				reached[n] = true
				queue = append(queue, n)
			}
		}
	}
	return t.usedPhases(func(p Phase) string {
		if !reached[p] {
			return fmt.Sprintf("phase %s cannot be reached from %s", p, PhaseInitializing)
		}
		return ""
	})
}

// phasesCanBeLeft: every phase the table uses but PhaseDeleted, the only
// terminal, has a row to another phase.
func (t *Table) phasesCanBeLeft() []string {
	leaves := map[Phase]bool{}
	for _, r := range t.rows {
		if r.To != r.From {
			leaves[r.From] = true
		}
	}
	return t.usedPhases(func(p Phase) string {
		if p != PhaseDeleted && !leaves[p] {
			return fmt.Sprintf("phase %s cannot be left", p)
		}
		return ""
	})
}

// phasesCanBeDeleted: every phase the table uses but Deleting and Deleted
// has a DeletionRequested row to Deleting.
func (t *Table) phasesCanBeDeleted() []string {
	return t.usedPhases(func(p Phase) string {
		if p == PhaseDeleting || p == PhaseDeleted {
			return ""
		}
		if r, ok := t.Next(p, TriggerDeletionRequested); !ok || r.To != PhaseDeleting {
			return fmt.Sprintf("phase %s has no %s row to %s", p, TriggerDeletionRequested, PhaseDeleting)
		}
		return ""
	})
}

// upgradesCanFailAReapply: a phase with an UpgradeFailed row has a
// ReapplyFailed row, for an upgrade that re-applied the version last seen
// healthy (Deleting excepted: it only uninstalls).
func (t *Table) upgradesCanFailAReapply() []string {
	return t.usedPhases(func(p Phase) string {
		if p == PhaseDeleting {
			return ""
		}
		if _, ok := t.Next(p, TriggerUpgradeFailed); ok {
			if _, ok := t.Next(p, TriggerReapplyFailed); !ok {
				return fmt.Sprintf("phase %s can fail an upgrade but has no %s row", p, TriggerReapplyFailed)
			}
		}
		return ""
	})
}

// failuresExhaust: a phase with an InstallFailed, UpgradeFailed or
// DeadlinePassed row has a RetriesExhausted row (Deleting excepted:
// uninstall failures never exhaust).
func (t *Table) failuresExhaust() []string {
	return t.usedPhases(func(p Phase) string {
		if _, ok := t.Next(p, TriggerRetriesExhausted); ok || p == PhaseDeleting {
			return ""
		}
		for _, e := range []Trigger{TriggerInstallFailed, TriggerUpgradeFailed, TriggerDeadlinePassed} {
			if _, ok := t.Next(p, e); ok {
				return fmt.Sprintf("phase %s can fail with %s but has no %s row", p, e, TriggerRetriesExhausted)
			}
		}
		return ""
	})
}

// deletingEnds: PhaseDeleting's UninstallSucceeded row enters PhaseDeleted.
func (t *Table) deletingEnds() []string {
	if r, ok := t.Next(PhaseDeleting, TriggerUninstallSucceeded); !ok || r.To != PhaseDeleted {
		return []string{fmt.Sprintf("phase %s has no %s row to %s", PhaseDeleting, TriggerUninstallSucceeded, PhaseDeleted)}
	}
	return nil
}

// stoppedDeletionRestarts: a Deleting that stops at its deadline (a
// DeadlinePassed row that stays and runs nothing) has a ResetRequested row
// that uninstalls again.
func (t *Table) stoppedDeletionRestarts() []string {
	if r, ok := t.Next(PhaseDeleting, TriggerDeadlinePassed); !ok || r.To != PhaseDeleting || r.Action != ActionNone {
		return nil
	}
	if r, ok := t.Next(PhaseDeleting, TriggerResetRequested); !ok || r.To != PhaseDeleting || r.Action != ActionUninstall {
		return []string{fmt.Sprintf("phase %s stops at its deadline but has no %s row to %s / %s", PhaseDeleting, TriggerResetRequested, PhaseDeleting, ActionUninstall)}
	}
	return nil
}

// failedIsLeft: every spec request leaves PhaseFailed: it has a SpecChanged
// row to another phase, and no VersionChanged, ResetRequested or
// ForceRequested row that stays in it.
func (t *Table) failedIsLeft() []string {
	if !t.used()[PhaseFailed] {
		return nil
	}
	var problems []string
	if r, ok := t.Next(PhaseFailed, TriggerSpecChanged); !ok || r.To == PhaseFailed {
		problems = append(problems, fmt.Sprintf("no way out of %s: no %s row to another phase", PhaseFailed, TriggerSpecChanged))
	}
	for _, e := range []Trigger{TriggerVersionChanged, TriggerResetRequested, TriggerForceRequested} {
		if r, ok := t.Next(PhaseFailed, e); ok && r.To == PhaseFailed {
			problems = append(problems, fmt.Sprintf("no way out of %s: its %s row stays in %s", PhaseFailed, e, PhaseFailed))
		}
	}
	return problems
}
