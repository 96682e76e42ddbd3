package addon_test

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

var (
	fuzzActions      = []addon.Action{addon.ActionNone, addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback, addon.ActionUninstall, addon.ActionCheckHealth}
	fuzzHealth       = []addon.Health{addon.HealthHealthy, addon.HealthUnhealthy, addon.HealthUnknown}
	fuzzRemediations = []addon.Remediation{addon.RemediationDefault, addon.RemediationNone, addon.RemediationUninstall, addon.RemediationRollback}
	fuzzRowActions   = []addon.Action{addon.ActionNone, addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback,
		addon.ActionUninstall, addon.ActionCheckHealth, addon.ActionRemediate}
)

// fuzzTable builds a table from fuzz bytes: base 0 is the default rows, 1
// the minimal table's (valid tables from no rows at all are too rare for a
// fuzzer to find); then every 4 bytes (op, from, event, to)
// edit one row: an even op sets the (from, event) row to (to, action op/2),
// an odd op deletes it. It returns nil and false when NewTable refuses the
// rows, and a nil table (the default) for base 0 without edits.
func fuzzTable(t *testing.T, base uint8, edits []byte) (*addon.Table, bool) {
	var rows []addon.Row
	switch {
	case base%2 == 1:
		rows = minimal()
	case len(edits) < 4:
		return nil, true
	default:
		rows = addon.DefaultTable().Rows()
	}
	phases, events := addon.Phases(), addon.Events()
	for ; len(edits) >= 4; edits = edits[4:] {
		op := edits[0]
		from, event := phases[int(edits[1])%len(phases)], events[int(edits[2])%len(events)]
		row := addon.Row{From: from, Event: event, To: phases[int(edits[3])%len(phases)], Action: fuzzRowActions[int(op/2)%len(fuzzRowActions)]}
		i := slices.IndexFunc(rows, func(r addon.Row) bool { return r.From == from && r.Event == event })
		switch {
		case op%2 == 1 && i >= 0:
			rows = slices.Delete(rows, i, i+1)
		case op%2 == 0 && i >= 0:
			rows[i] = row
		case op%2 == 0:
			rows = append(rows, row)
		}
	}
	tb, err := addon.NewTable(rows)
	if err != nil {
		require.ErrorIs(t, err, addon.ErrInvalid)
		return nil, false
	}
	return tb, true
}

// FuzzDecide drives Decide from arbitrary (table, phase, observation,
// counters, policy, time) and checks: no panic and no error on valid input;
// the same input gives the same decision; retries stay within the policy;
// Failed is always left by a spec change; deletion always reaches Deleted.
// The table is the default, the minimal one, or any row set built from the
// fuzz bytes that NewTable accepts (see fuzzTable).
func FuzzDecide(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), uint8(0), uint16(0), uint16(0), int8(0), uint8(0), uint32(0), false, false, 0.0, []byte(nil))
	f.Add(uint8(1), uint8(1), uint8(1), uint8(2), uint16(5), uint16(0), int8(0), uint8(0), uint32(30), false, false, 0.5, []byte(nil))
	f.Add(uint8(0), uint8(2), uint8(5), uint8(3), uint16(0), uint16(0), int8(2), uint8(5), uint32(301), false, false, 0.1, []byte(nil))
	f.Add(uint8(0), uint8(4), uint8(2), uint8(2), uint16(0), uint16(5), int8(-1), uint8(6), uint32(0), false, false, 0.9, []byte(nil))
	f.Add(uint8(0), uint8(6), uint8(0), uint8(0), uint16(9), uint16(9), int8(0), uint8(0), uint32(0), true, true, 0.0, []byte(nil))
	f.Add(uint8(1), uint8(7), uint8(4), uint8(2), uint16(0), uint16(0), int8(1), uint8(0), uint32(100000), true, false, 0.3, []byte(nil))
	// Default rows, Running+Unhealthy -> Failed: a broken add-on fails at once.
	f.Add(uint8(0), uint8(3), uint8(5), uint8(1), uint16(0), uint16(0), int8(0), uint8(0), uint32(60), false, false, 0.0,
		[]byte{0, 3, 3, 6})
	// Default rows, Failed+VersionChanged stays Failed.
	f.Add(uint8(0), uint8(24), uint8(0), uint8(0), uint16(0), uint16(0), int8(0), uint8(1), uint32(60), false, false, 0.0,
		[]byte{0, 6, 5, 6})
	// Default rows, Running+DeletionRequested -> Deleting without an uninstall.
	f.Add(uint8(0), uint8(3), uint8(0), uint8(0), uint16(0), uint16(0), int8(0), uint8(1), uint32(60), false, false, 0.0,
		[]byte{10, 3, 13, 7})
	// Default rows without Deleting's deadline stop and retry rows.
	f.Add(uint8(0), uint8(7), uint8(4), uint8(2), uint16(0), uint16(0), int8(0), uint8(0), uint32(3600), true, false, 0.0,
		[]byte{1, 7, 4, 0, 1, 7, 15, 0})
	// Minimal rows plus Upgrading: Running+VersionChanged -> Upgrading / Upgrade, its outcomes, a deadline row.
	f.Add(uint8(1), uint8(4), uint8(2), uint8(1), uint16(0), uint16(0), int8(0), uint8(0), uint32(700), false, false, 0.0,
		[]byte{4, 3, 5, 4, 10, 4, 6, 3, 0, 4, 7, 6, 0, 4, 12, 6, 8, 4, 13, 7, 0, 4, 4, 6})
	f.Fuzz(func(t *testing.T, tableSel, phaseSel, pendingSel, outcomeSel uint8, installFailures, upgradeFailures uint16,
		maxRetries int8, remSel uint8, elapsed uint32, deleting, suspended bool, jitter float64, edits []byte) {
		table, ok := fuzzTable(t, tableSel, edits)
		if !ok {
			return
		}
		if math.IsNaN(jitter) || jitter < 0 || jitter >= 1 {
			jitter = 0
		}
		phases := addon.Phases()
		if table != nil && len(edits) > 0 {
			phases = slices.DeleteFunc(phases, func(p addon.Phase) bool { return !table.Has(p) })
		}
		policy := addon.Policy{
			MaxRetries:         int(uint8(maxRetries)%8) - 1, // -1 .. 6
			InstallRemediation: fuzzRemediations[remSel%3],
			UpgradeRemediation: fuzzRemediations[(remSel/3)%4],
		}
		status := st(phases[int(phaseSel)%len(phases)], fuzzActions[int(pendingSel)%len(fuzzActions)], func(s *addon.Status) {
			s.InstallFailures, s.UpgradeFailures = int(installFailures%16), int(upgradeFailures%16)
			if remSel%2 == 0 {
				s.FailedVersion = "v2"
			}
			if remSel%5 == 0 {
				s.LastGoodVersion = ""
			}
			s.Verifying = fuzzActions[int(remSel)%len(fuzzActions)]
			if s.Verifying == addon.ActionCheckHealth || s.Verifying == addon.ActionUninstall {
				s.Verifying = addon.ActionNone
			}
			if pendingSel%3 == 0 {
				s.NextAttemptTime = at(t0.Add(time.Duration(elapsed/2) * time.Second))
			}
		})
		spec := addon.Spec{Name: "mesh", Generation: 1 + int64(outcomeSel%2), Version: []string{"v1", "v2"}[phaseSel/16%2], Deleting: deleting, Suspended: suspended}
		var obs addon.Observation
		if outcomeSel%4 != 0 && status.PendingAction != addon.ActionNone {
			obs.Action = status.PendingAction
			if outcomeSel%4 == 2 {
				obs.Err = errBoom
			}
			obs.Health = fuzzHealth[int(outcomeSel/4)%len(fuzzHealth)]
		}
		in := addon.Input{Spec: spec, Status: status, Observation: obs, Policy: policy, Table: table,
			Now: t0.Add(time.Duration(elapsed) * time.Second), Jitter: jitter}

		d, err := addon.Decide(in)
		if table != nil && !table.Has(status.Phase) {
			require.ErrorIs(t, err, addon.ErrInvalid, "a phase the table does not know")
			return
		}
		require.NoError(t, err)
		again, err := addon.Decide(in)
		require.NoError(t, err)
		require.Equal(t, d, again, "deterministic")
		require.GreaterOrEqual(t, d.RequeueAfter, time.Duration(0))
		require.Zero(t, d.Status.LastTransitionTime.Nanosecond(), "times truncated to seconds")

		// Retries bounded: a retry is never scheduled past the policy.
		if max := policy.MaxRetries; max != -1 {
			if max == 0 {
				max = addon.DefaultMaxRetries
			}
			if d.Status.PendingAction == addon.ActionInstall && d.Status.InstallFailures > status.InstallFailures {
				require.LessOrEqual(t, d.Status.InstallFailures, max, "install retried beyond MaxRetries")
			}
			if d.Status.PendingAction == addon.ActionUpgrade && d.Status.UpgradeFailures > status.UpgradeFailures {
				require.LessOrEqual(t, d.Status.UpgradeFailures, max, "upgrade retried beyond MaxRetries")
			}
		}
		require.LessOrEqual(t, d.Status.InstallFailures, status.InstallFailures+1)
		require.LessOrEqual(t, d.Status.UpgradeFailures, status.UpgradeFailures+1)

		now := in.Now
		// Failed is always left by a spec change.
		if d.Status.Phase == addon.PhaseFailed && !deleting {
			next := addon.Input{Spec: spec, Status: d.Status, Policy: policy, Table: table, Now: now}
			next.Spec.Generation++
			next.Spec.Suspended = false
			left, err := addon.Decide(next)
			require.NoError(t, err)
			require.NotEqual(t, addon.PhaseFailed, left.Status.Phase, "Failed left by a spec change")
		}
		// Deletion always reaches Deleted once uninstalls succeed (a deletion
		// stalled at its deadline after a retry request).
		cur := d.Status
		del := spec
		del.Deleting = true
		for i := 0; i < 4 && cur.Phase != addon.PhaseDeleted; i++ {
			if cur.NextAttemptTime != nil && cur.NextAttemptTime.After(now) {
				now = cur.NextAttemptTime.Time
			}
			if cur.Phase == addon.PhaseDeleting && cur.PendingAction == addon.ActionNone {
				del.RetryToken = fmt.Sprintf("retry-%d", i) // a stalled deletion restarts on request
			}
			look, err := addon.Decide(addon.Input{Spec: del, Status: cur, Policy: policy, Table: table, Now: now})
			require.NoError(t, err)
			cur = look.Status
			if look.Action != addon.ActionNone {
				out, err := addon.Decide(addon.Input{Spec: del, Status: cur, Observation: addon.Observation{Action: look.Action, Health: addon.HealthHealthy},
					Policy: policy, Table: table, Now: now})
				require.NoError(t, err)
				cur = out.Status
			}
		}
		require.Equal(t, addon.PhaseDeleted, cur.Phase, "deletion reaches Deleted")
	})
}
