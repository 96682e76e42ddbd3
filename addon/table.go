package addon

import (
	"fmt"
	"strings"
)

// Row is one transition: in phase From, trigger Trigger moves the add-on to
// phase To, and Action is what runs on entering To (ActionNone: nothing).
//
// Decide resolves a row's ActionInstall and ActionUpgrade by what is
// installed, so a re-apply is never a fresh install: with a version
// installed, Install becomes Upgrade and a row entering Initializing or
// Reinitializing enters Upgrading instead; with nothing installed, Upgrade
// becomes Install and a row entering Upgrading enters Initializing.
type Row struct {
	// From is the phase the row applies in.
	From Phase `json:"from"`
	// Trigger is what happened.
	Trigger Trigger `json:"trigger"`
	// To is the phase entered (may equal From).
	To Phase `json:"to"`
	// Action runs on entering To: at once, or after the backoff when it
	// retries a failed action, or after the poll interval for a health check
	// that follows a health check.
	Action Action `json:"action,omitempty"`
}

type rowKey struct {
	from    Phase
	trigger Trigger
}

// Table is the add-on lifecycle as data: a list of rows. Build one with
// NewTable (which validates it) or take DefaultTable. A Table is immutable
// and safe for concurrent use.
type Table struct {
	rows   []Row
	index  map[rowKey]int
	phases map[Phase]bool
}

// NewTable validates rows and returns the table. The error matches
// converge.ErrInvalid and lists every problem of the rows: unknown phases,
// triggers or actions; duplicate (From, Trigger) rows; phases that cannot be
// reached from PhaseInitializing or cannot be left (PhaseDeleted is the only
// terminal); phases without a DeletionRequested row (PhaseDeleting and
// PhaseDeleted excepted); a phase with a failure row but no RetriesExhausted
// row (Deleting excepted: uninstall failures never exhaust); a Deleting
// phase that cannot reach PhaseDeleted, or that stops at its deadline (a
// DeadlinePassed row that stays and runs nothing) without a ResetRequested
// row that uninstalls again; no SpecChanged row out of PhaseFailed, or a
// VersionChanged, ResetRequested or ForceRequested row that stays in it
// (every spec request leaves Failed); a row that enters a waiting phase
// other than Deleting with nothing to do; a row that runs ActionTest (only
// Policy.Test runs it) or ActionInspect (only the engine does); remediating rows without PhaseFailed (where an
// unusable rollback target stops); a phase that can fail an upgrade but has
// no ReapplyFailed row, a ReapplyFailed row that runs anything but a health
// check, or that enters a phase (other than Failed) without a ReapplyDue
// row; and a phase entered with an action that has no row for that
// action's outcomes, with Install and Upgrade resolved both ways (see Row).
func NewTable(rows []Row) (*Table, error) {
	t := indexRows(rows)
	if err := t.validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// indexRows copies rows into a Table; the first row of a duplicate pair wins
// in Next (validate reports the duplicate).
func indexRows(rows []Row) *Table {
	t := &Table{rows: append([]Row(nil), rows...), index: make(map[rowKey]int, len(rows)), phases: map[Phase]bool{}}
	for i, r := range t.rows {
		t.phases[r.From], t.phases[r.To] = true, true
		if _, dup := t.index[rowKey{r.From, r.Trigger}]; !dup {
			t.index[rowKey{r.From, r.Trigger}] = i
		}
	}
	return t
}

// Next returns the row for (from, trigger), and false when the table has
// none: the trigger is then ignored in that phase.
func (t *Table) Next(from Phase, trigger Trigger) (Row, bool) {
	if t == nil {
		return Row{}, false
	}
	i, ok := t.index[rowKey{from, trigger}]
	if !ok {
		return Row{}, false
	}
	return t.rows[i], true
}

// has reports whether phase p appears in the table, as From or To.
func (t *Table) has(p Phase) bool {
	return t != nil && t.phases[p]
}

// Rows returns a copy of the rows in their original order.
func (t *Table) Rows() []Row {
	if t == nil {
		return nil
	}
	return append([]Row(nil), t.rows...)
}

// handles reports whether phase p has rows for both outcomes of action a
// (health checks and tests are handled by Decide itself).
func (t *Table) handles(p Phase, a Action) bool {
	for _, e := range outcomeTriggers(a) {
		if _, ok := t.index[rowKey{p, e}]; !ok {
			return false
		}
	}
	return true
}

// outcomeTriggers are the triggers an action's outcome can produce; a phase
// entered with that action needs a row for each.
func outcomeTriggers(a Action) []Trigger {
	switch a {
	case ActionInstall:
		return []Trigger{TriggerInstallSucceeded, TriggerInstallFailed}
	case ActionUpgrade:
		return []Trigger{TriggerUpgradeSucceeded, TriggerUpgradeFailed, TriggerReapplyFailed}
	case ActionRollback:
		return []Trigger{TriggerRollbackSucceeded, TriggerRollbackFailed}
	case ActionUninstall:
		return []Trigger{TriggerUninstallSucceeded, TriggerUninstallFailed}
	}
	return nil
}

// entryActions lists the actions a row can run on entering its To phase:
// ActionRemediate stands for every action a Policy can resolve it to, for
// the action whose failure the row's trigger reports.
func (t *Table) entryActions(r Row) []Action {
	if r.Action != ActionRemediate {
		return []Action{r.Action}
	}
	var failed []Action
	switch r.Trigger {
	case TriggerInstallFailed:
		failed = []Action{ActionInstall}
	case TriggerUpgradeFailed:
		failed = []Action{ActionUpgrade}
	case TriggerDeadlinePassed:
		failed = t.awaited(r.From)
	default:
		return []Action{ActionRollback, ActionUninstall}
	}
	var out []Action
	for _, a := range failed {
		switch a {
		case ActionInstall:
			out = append(out, ActionUninstall)
		case ActionUpgrade:
			out = append(out, ActionRollback, ActionUninstall)
		}
		if r.To != PhaseFailed {
			out = append(out, a)
		}
	}
	return out
}

type entry struct {
	phase  Phase
	action Action
}

// resolutions lists where a row entering phase to with action a can end up
// once Decide resolves Install and Upgrade by what is installed (see Row).
func resolutions(to Phase, a Action) []entry {
	if a != ActionInstall && a != ActionUpgrade {
		return []entry{{to, a}}
	}
	return []entry{resolve(to, a, false), resolve(to, a, true)}
}

// resolve maps a row's (phase, action) to what runs: with a version
// installed an apply is an upgrade, in Upgrading; with nothing installed it
// is an install, in Initializing.
func resolve(to Phase, a Action, installed bool) entry {
	switch {
	case a == ActionInstall && installed:
		a = ActionUpgrade
		if to == PhaseInitializing || to == PhaseReinitializing {
			to = PhaseUpgrading
		}
	case a == ActionUpgrade && !installed:
		a = ActionInstall
		if to == PhaseUpgrading {
			to = PhaseInitializing
		}
	}
	return entry{to, a}
}

// awaited returns the installs and upgrades phase p can be waiting for when
// its deadline passes: those the rows entering p run, or retry after a
// failure. Checking's deadline without a checked action counts as a failed
// install, and Initializing is entered with an install.
func (t *Table) awaited(p Phase) []Action {
	has := map[Action]bool{}
	if p == PhaseInitializing || p == PhaseChecking {
		has[ActionInstall] = true
	}
	for _, r := range t.rows {
		if r.To != p {
			continue
		}
		switch {
		case r.Action == ActionInstall, r.Action == ActionRemediate && r.Trigger == TriggerInstallFailed:
			has[ActionInstall] = true
		case r.Action == ActionUpgrade, r.Action == ActionRemediate && r.Trigger == TriggerUpgradeFailed:
			has[ActionUpgrade] = true
		}
	}
	var out []Action
	for _, a := range []Action{ActionInstall, ActionUpgrade} {
		if has[a] {
			out = append(out, a)
		}
	}
	return out
}

// Mermaid renders the table as a Mermaid state diagram: one edge per (From,
// To) pair in the order of its first row, labelled with its rows'
// "trigger / action", comma-separated.
func (t *Table) Mermaid() string {
	type edge struct{ from, to Phase }
	var order []edge
	labels := map[edge][]string{}
	for _, r := range t.Rows() {
		e := edge{r.From, r.To}
		if _, seen := labels[e]; !seen {
			order = append(order, e)
		}
		label := string(r.Trigger)
		if r.Action != ActionNone {
			label += " / " + string(r.Action)
		}
		labels[e] = append(labels[e], label)
	}
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	fmt.Fprintf(&b, "    [*] --> %s\n", PhaseInitializing)
	for _, e := range order {
		fmt.Fprintf(&b, "    %s --> %s: %s\n", e.from, e.to, strings.Join(labels[e], ", "))
	}
	fmt.Fprintf(&b, "    %s --> [*]\n", PhaseDeleted)
	return b.String()
}
