package addon_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
)

// pausedHold is the hold of a paused add-on.
var pausedHold = converge.PausedHold("no install, upgrade or test is started")

// closedNoon is a Deny window from 12:00 to 13:00 UTC every day: closed at
// tNow (12:01), open at 13:00.
var closedNoon = []converge.Window{{Kind: converge.WindowDeny, Schedule: "0 12 * * *", Duration: dur(time.Hour)}}

// heldBy checks a decision that holds the pending action with holds: no
// action, the holds persisted, HeldSince set, Reconciling saying the first
// one, and neither Degraded nor an event for them.
func heldBy(holds ...converge.Hold) func(t *testing.T, d addon.Decision) {
	return func(t *testing.T, d addon.Decision) {
		t.Helper()
		assert.Equal(t, holds, d.Status.Holds)
		assert.NotNil(t, d.Status.HeldSince)
		c := cond(t, d, conditions.TypeReconciling)
		assert.Equal(t, metav1.ConditionTrue, c.Status)
		assert.Equal(t, holds[0].Reason, c.Reason)
		assert.Equal(t, holds[0].Message, c.Message)
		if deg, ok := conditions.Get(d.Status.Conditions, conditions.TypeDegraded); ok {
			assert.NotEqual(t, holds[0].Reason, deg.Reason, "a hold never turns Degraded")
		}
		for _, e := range d.Events {
			for _, h := range holds {
				assert.NotEqual(t, h.Reason, e.Reason, "a hold emits no event: %v", e)
			}
		}
	}
}

// holdsNothing checks a decision that holds nothing.
func holdsNothing(t *testing.T, d addon.Decision) {
	t.Helper()
	assert.Nil(t, d.Status.Holds)
	assert.Nil(t, d.Status.HeldSince)
}

// TestRulePauseHoldsNewWork: Policy.Paused starts no install, upgrade
// (drift corrections included) or test, and needs no requeue; what runs
// finishes, and health checks, remediations and deletions go on.
func TestRulePauseHoldsNewWork(t *testing.T) {
	paused := addon.Policy{Paused: true}
	observed2 := func(s *addon.Status) { s.ObservedGeneration, s.SeenGeneration = 2, 2 }
	runDecide(t, []decideRow{
		{name: "a new add-on is not installed while paused", status: addon.Status{}, policy: paused,
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, check: heldBy(pausedHold)}},
		{name: "a due upgrade does not start while paused, and nothing requeues",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, observed2), spec: gen(2, "v2"), policy: paused,
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				heldBy(pausedHold)(t, d)
				assert.Zero(t, d.RequeueAfter)
				assert.Equal(t, at(tNow), d.Status.HeldSince)
				assert.Equal(t, string(addon.PhaseUpgrading), cond(t, d, conditions.TypeReady).Reason, "Ready says the phase, not the pause")
			}}},
		{name: "a new version is observed while paused, its upgrade held",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), spec: gen(2, "v2"), policy: paused,
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, reason: string(addon.TriggerVersionChanged), check: heldBy(pausedHold)}},
		{name: "the tests do not start while paused",
			status: st(addon.PhaseChecking, addon.ActionTest), policy: addon.Policy{Paused: true, Test: addon.TestPolicy{Enable: true}},
			want: want{phase: addon.PhaseChecking, pending: addon.ActionTest, check: heldBy(pausedHold)}},
		{name: "drift is not corrected while paused",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), policy: addon.Policy{Paused: true, Drift: addon.DriftCorrect},
			obs: func(addon.Status) addon.Observation {
				return addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy, Drifted: true, DriftDetail: "replicas"}
			},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: heldBy(pausedHold)}},
		{name: "an upgrade in flight finishes while paused: its outcome is recorded",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, observed2, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(2, "v2"),
			policy: paused, obs: outcome(nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: holdsNothing}},
		{name: "health checks go on while paused, holding nothing",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), policy: paused,
			want: want{phase: addon.PhaseRunning, action: addon.ActionCheckHealth, pending: addon.ActionCheckHealth, check: holdsNothing}},
		{name: "a rollback remediating a failed upgrade runs while paused",
			status: st(addon.PhaseRemediating, addon.ActionRollback, observed2), spec: gen(2, "v2"), policy: paused,
			want: want{phase: addon.PhaseRemediating, action: addon.ActionRollback, pending: addon.ActionRollback, check: holdsNothing}},
		{name: "a deletion uninstalls while paused, the hold lifted",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, observed2, func(s *addon.Status) {
				s.HeldSince, s.Holds = at(t0), []converge.Hold{pausedHold}
			}),
			spec: func(s *addon.Spec) { s.Generation, s.Version, s.Deleting = 2, "v2", true }, policy: paused,
			want: want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall, check: holdsNothing}},
	})
}

// TestRuleHeldTimeDoesNotCountAgainstTheDeadline: while held the phase's
// deadline does not pass; when the hold lifts it moves on by the time held
// (no further than the phase's timeout from now); time before the hold
// still counts.
func TestRuleHeldTimeDoesNotCountAgainstTheDeadline(t *testing.T) {
	upgrading := func(held time.Time) addon.Status {
		return st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) {
			s.ObservedGeneration, s.SeenGeneration, s.HeldSince, s.Holds = 2, 2, at(held), []converge.Hold{pausedHold}
		})
	}
	runDecide(t, []decideRow{
		{name: "a held upgrade past its deadline does not fail",
			status: upgrading(t0.Add(4 * time.Minute)), spec: gen(2, "v2"), policy: addon.Policy{Paused: true}, now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				heldBy(pausedHold)(t, d)
				assert.Equal(t, at(t0.Add(4*time.Minute)), d.Status.HeldSince, "the hold keeps its start")
			}}},
		{name: "the lift moves the deadline on by the time held",
			status: upgrading(t0.Add(4 * time.Minute)), spec: gen(2, "v2"), now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				holdsNothing(t, d)
				assert.Equal(t, at(t0.Add(defaultUpgradeTimeout+56*time.Minute)), d.Status.Deadline)
				assert.Equal(t, string(addon.PhaseUpgrading), cond(t, d, conditions.TypeReconciling).Reason)
			}}},
		{name: "a deadline passed before the hold passes after it",
			status: upgrading(t0.Add(12 * time.Minute)), spec: gen(2, "v2"), now: t0.Add(20 * time.Minute),
			want: want{phase: addon.PhaseRemediating, action: addon.ActionRollback, pending: addon.ActionRollback, reason: string(addon.TriggerDeadlinePassed)}},
		{name: "a hold that begins in the future (a clock stepped back) begins now",
			status: upgrading(t0.Add(time.Hour)), spec: gen(2, "v2"), policy: addon.Policy{Paused: true},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, at(tNow), d.Status.HeldSince)
			}}},
	})
}

// TestRuleClosedWindowsHoldNewWorkUntilTheyOpen: closed windows hold what
// a pause holds, say when they open, and requeue then; a rollback and a
// deletion run; a pause beside them holds too, and needs no requeue.
func TestRuleClosedWindowsHoldNewWorkUntilTheyOpen(t *testing.T) {
	closed := addon.Policy{Windows: closedNoon}
	opensAt13 := converge.WindowClosedHold(time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC))
	observed2 := func(s *addon.Status) { s.ObservedGeneration, s.SeenGeneration = 2, 2 }
	runDecide(t, []decideRow{
		{name: "a due upgrade waits for the opening, and requeues then",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, observed2), spec: gen(2, "v2"), policy: closed,
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, after: 59 * time.Minute, check: func(t *testing.T, d addon.Decision) {
				heldBy(opensAt13)(t, d)
				assert.Equal(t, "the maintenance windows are closed until 2026-01-01T13:00:00Z", d.Status.Holds[0].Message)
			}}},
		{name: "outside its only Allow window nothing is installed until it opens",
			status: addon.Status{}, policy: addon.Policy{Windows: []converge.Window{{Kind: converge.WindowAllow, Schedule: "0 22 * * *", Duration: dur(8 * time.Hour)}}},
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: 9*time.Hour + 59*time.Minute,
				check: heldBy(converge.WindowClosedHold(time.Date(2026, 1, 1, 22, 0, 0, 0, time.UTC)))}},
		{name: "once open the upgrade starts",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, observed2, func(s *addon.Status) {
				s.HeldSince, s.Holds = at(tNow), []converge.Hold{opensAt13}
			}),
			spec: gen(2, "v2"), policy: closed, now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, check: holdsNothing}},
		{name: "a rollback remediating a failed upgrade runs while closed",
			status: st(addon.PhaseRemediating, addon.ActionRollback, observed2), spec: gen(2, "v2"), policy: closed,
			want: want{phase: addon.PhaseRemediating, action: addon.ActionRollback, pending: addon.ActionRollback, check: holdsNothing}},
		{name: "a deletion uninstalls while closed",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), spec: func(s *addon.Spec) { s.Deleting = true }, policy: closed,
			want: want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall, check: holdsNothing}},
		{name: "paused and closed: both hold, and the pause needs no requeue",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, observed2), spec: gen(2, "v2"), policy: addon.Policy{Paused: true, Windows: closedNoon},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				heldBy(pausedHold, opensAt13)(t, d)
				assert.Zero(t, d.RequeueAfter)
			}}},
	})
}

// TestDecideRefusesWindowsItCannotRead: a window Validate refuses, and a
// time zone Input.Zones lacks, are invalid input naming the window.
func TestDecideRefusesWindowsItCannotRead(t *testing.T) {
	for _, tt := range []struct {
		name    string
		windows []converge.Window
		want    string
	}{
		{"a window of no duration", []converge.Window{{Kind: converge.WindowDeny, Schedule: "0 12 * * *"}}, "window 0: duration 0s is not positive"},
		{"a zone not loaded", []converge.Window{{Kind: converge.WindowDeny, Schedule: "0 12 * * *", Duration: dur(time.Hour), TimeZone: "Europe/Berlin"}},
			`window 0: timeZone "Europe/Berlin" is not in the Zones`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := addon.Decide(addon.Input{Spec: meshSpec, Policy: addon.Policy{Windows: tt.windows}, Now: tNow})
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestNewMachineLoadsTheZonesOfItsWindows: a zone that cannot be loaded is
// invalid configuration, named.
func TestNewMachineLoadsTheZonesOfItsWindows(t *testing.T) {
	_, err := addon.NewMachine(addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Policy: addon.Policy{
		Windows: []converge.Window{{Kind: converge.WindowAllow, Schedule: "0 2 * * *", Duration: dur(time.Hour), TimeZone: "Mars/Olympus_Mons"}}}})
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.ErrorContains(t, err, `timeZone "Mars/Olympus_Mons"`)
}

// TestMachineWaitsForWindowsAcrossDaylightSavingTime: a Machine whose
// windows read Europe/Berlin's wall clock upgrades when they open, on the
// days the clock springs forward and falls back, and looks again exactly
// then.
func TestMachineWaitsForWindowsAcrossDaylightSavingTime(t *testing.T) {
	nightly := []converge.Window{{Kind: converge.WindowAllow, Schedule: "30 2 * * *", Duration: dur(time.Hour), TimeZone: "Europe/Berlin"}}
	for _, tt := range []struct {
		name       string
		now, opens time.Time
	}{
		{"02:30 skipped on 29 March 2026: the window opens at 03:00 CEST",
			time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
		{"02:30 shown twice on 25 October 2026: the window opens at the first, 02:30 CEST",
			time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)},
		{"an ordinary day: 02:30 CET",
			time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 10, 1, 30, 0, 0, time.UTC)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktesting.NewFakeClock(tt.now)
			driver, store := &fake.AddonDriver{}, &fake.AddonStore{}
			store.Put(addon.Object{Spec: meshSpec, Status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) {
				s.LastTransitionTime, s.Deadline = metav1.NewTime(tt.now), at(tt.now.Add(defaultUpgradeTimeout))
			})})
			m, err := addon.NewMachine(addon.Config{Driver: driver, Store: store, Owner: "m1", Clock: clk, Policy: addon.Policy{Windows: nightly}})
			require.NoError(t, err)
			obj, err := store.Get(ctx, meshSpec.Name)
			require.NoError(t, err)
			res, err := m.Reconcile(ctx, obj)
			require.NoError(t, err)
			assert.Equal(t, tt.opens.Sub(tt.now), res.RequeueAfter, "looks again at the opening")
			assert.Empty(t, driver.Recorded(), "nothing starts while closed")
			assert.Equal(t, []converge.Hold{converge.WindowClosedHold(tt.opens)}, store.Objects[meshSpec.Name].Status.Holds)

			clk.Step(res.RequeueAfter - time.Second)
			obj, _ = store.Get(ctx, meshSpec.Name)
			_, err = m.Reconcile(ctx, obj)
			require.NoError(t, err)
			assert.Empty(t, driver.Recorded(), "a second before the opening nothing starts")

			clk.Step(time.Second)
			obj, _ = store.Get(ctx, meshSpec.Name)
			_, err = m.Reconcile(ctx, obj)
			require.NoError(t, err)
			require.Len(t, driver.Recorded(), 1, "the upgrade starts at the opening")
			assert.Equal(t, fake.AddonUpgrade, driver.Recorded()[0].Method)
			assert.Nil(t, store.Objects[meshSpec.Name].Status.Holds)
		})
	}
}
