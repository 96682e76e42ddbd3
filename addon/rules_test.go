package addon_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
)

// TestRuleStaleGenerationIsNeverActedOn: the engine never acts on a spec
// generation older than one it has seen, whether it was acting at the time
// (a claim held, an outcome being recorded) or not; the
// highest generation seen is Status.SeenGeneration, and ObservedGeneration
// keeps its kstatus meaning (the generation the status reflects).
func TestRuleStaleGenerationIsNeverActedOn(t *testing.T) {
	upgrading := func(s *addon.Status) { s.ObservedGeneration, s.SeenGeneration = 2, 2 }
	seen4 := func(s *addon.Status) { s.ObservedGeneration, s.SeenGeneration = 2, 4 }
	runDecide(t, []decideRow{
		{name: "a generation seen while a claim holds is recorded, not acted on",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, upgrading, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(4, "v2"),
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, int64(4), d.Status.SeenGeneration)
				assert.Equal(t, int64(2), d.Status.ObservedGeneration, "observedGeneration is what the status reflects")
				assert.NotNil(t, d.Status.InFlight)
			}}},
		{name: "a generation below one seen during a claim is ignored",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, seen4, func(s *addon.Status) { s.InstalledVersion = "v2" }), spec: gen(3, "v3"),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: defaultCheckInterval, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "v2", d.Status.InstalledVersion)
				assert.Equal(t, "StaleGeneration", d.Events[0].Reason)
				assert.Equal(t, int64(4), d.Status.SeenGeneration)
			}}},
		{name: "the generation seen during the claim is acted on once read",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, seen4, func(s *addon.Status) { s.InstalledVersion = "v2" }), spec: gen(4, "v3"),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "VersionChanged",
				check: func(t *testing.T, d addon.Decision) { claimOf(t, d, "v2", "v3") }}},
		{name: "a generation seen with an outcome is recorded",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, upgrading, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(5, "v3"), obs: outcome(nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, int64(5), d.Status.SeenGeneration)
			}}},
		{name: "an outcome read with a stale spec is recorded, and the generation seen stays",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, seen4, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(2, "v2"), obs: outcome(nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "v2", d.Status.InstalledVersion)
				assert.Equal(t, int64(4), d.Status.SeenGeneration)
			}}},
	})
}

// TestRuleStaleGenerationSeenDuringAClaimStartsNoDowngrade plays the path
// a bounded search found: v2 (generation 3) and then v1 (generation 4) are
// asked for while an upgrade to v2 runs; a stale read of generation 3 after
// the outcome must not upgrade to v2 again, which generation 4 would then
// undo with a downgrade.
func TestRuleStaleGenerationSeenDuringAClaimStartsNoDowngrade(t *testing.T) {
	now := tNow
	decide := func(spec addon.Spec, s addon.Status, obs addon.Observation) addon.Decision {
		t.Helper()
		d, err := addon.Decide(addon.Input{Spec: spec, Status: s, Observation: obs, Now: now, Owner: "m1"})
		require.NoError(t, err)
		return d
	}
	running := st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.ObservedGeneration, s.SeenGeneration = 2, 2 })
	upgrade := decide(addon.Spec{Name: meshSpec.Name, Generation: 3, Version: "v2"}, running, addon.Observation{})
	require.Equal(t, addon.ActionUpgrade, upgrade.Action)
	claim := *upgrade.Status.InFlight
	during := decide(addon.Spec{Name: meshSpec.Name, Generation: 4, Version: "v1"}, upgrade.Status, addon.Observation{})
	require.Equal(t, addon.ActionNone, during.Action, "the claim holds")
	done := decide(addon.Spec{Name: meshSpec.Name, Generation: 4, Version: "v1"}, during.Status,
		addon.Observation{Action: addon.ActionUpgrade, Claim: &claim})
	require.Equal(t, "v2", done.Status.InstalledVersion)
	now = now.Add(time.Second)
	stale := decide(addon.Spec{Name: meshSpec.Name, Generation: 3, Version: "v2"}, done.Status, addon.Observation{})
	assert.Equal(t, addon.ActionNone, stale.Action)
	assert.Equal(t, done.Status, stale.Status, "a stale read changes nothing")
	fresh := decide(addon.Spec{Name: meshSpec.Name, Generation: 4, Version: "v1"}, done.Status, addon.Observation{})
	assert.Equal(t, addon.ActionUpgrade, fresh.Action, "generation 4 asks for v1")
	claimOf(t, fresh, "v2", "v1")
}

// TestRuleFailedReapplyIsRetriedAndWatched: a failed re-apply of the
// installed version, last seen healthy (a drift correction, a new spec at
// the same version, a forced retry), whether the action failed, was lost,
// ran out of time, did not become healthy or failed its tests, goes back to
// Running, where the health is watched, and is retried after the backoff
// under MaxRetries; it never remediates, and once its retries ran out it is
// not retried until the spec changes or a force request arrives.
func TestRuleFailedReapplyIsRetriedAndWatched(t *testing.T) {
	reapplying := claimed(addon.ActionUpgrade, "v1", "v1")
	reapplyOwed := func(s *addon.Status) {
		s.UpgradeFailures, s.Failures, s.LastFailedAction = 1, 1, addon.ActionUpgrade
		s.ReapplyTime, s.NextAttemptTime, s.Deadline = at(tNow.Add(defaultBackoffInitial)), at(tNow.Add(defaultBackoffInitial)), nil
	}
	retried := func(t *testing.T, d addon.Decision) {
		t.Helper()
		assert.Equal(t, "v1", d.Status.InstalledVersion, "the version still runs")
		assert.Empty(t, d.Status.FailedVersion, "it is retried")
		assert.Equal(t, int32(1), d.Status.UpgradeFailures, "counted against MaxRetries")
		assert.Equal(t, at(tNow.Add(defaultBackoffInitial)), d.Status.ReapplyTime, "retried after the backoff")
		assert.Equal(t, addon.RequeueNow, d.RequeueAfter, "its health is read at once")
		degraded := cond(t, d, conditions.TypeDegraded)
		assert.Equal(t, metav1.ConditionTrue, degraded.Status)
		assert.Equal(t, "ReapplyFailed", degraded.Reason)
	}
	drifted := func(addon.Status) addon.Observation {
		return addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy, Drifted: true, DriftDetail: "replicas"}
	}
	runDecide(t, []decideRow{
		{name: "a failed drift correction goes back to Running, watched, and retries after the backoff",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, reapplying), obs: outcome(errBoom), policy: addon.Policy{Drift: addon.DriftCorrect},
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "ReapplyFailed", check: func(t *testing.T, d addon.Decision) {
				retried(t, d)
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeReady).Status, "v1 still serves")
				assert.Equal(t, "ReapplyFailed", cond(t, d, addon.TypeReleased).Reason)
			}}},
		{name: "a failed re-apply never uninstalls, whatever the policy says",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, reapplying), obs: outcome(errBoom), spec: gen(2, "v1"),
			policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want:   want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "ReapplyFailed", check: retried}},
		{name: "a re-apply lost in a crash is retried, no failure",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, reapplying), now: t0.Add(30*time.Second + defaultActionTimeout + addon.ClaimGrace),
			policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, reason: "ClaimLost", after: defaultBackoffInitial,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, addon.OutcomeLost, d.Status.History[0].Outcome)
					assert.Zero(t, d.Status.UpgradeFailures)
				}}},
		{name: "a re-apply lost beyond MaxLostRetries is a failed re-apply",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, reapplying, func(s *addon.Status) { s.LostAttempts = 3 }),
			now:    t0.Add(30*time.Second + defaultActionTimeout + addon.ClaimGrace), policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, action: addon.ActionCheckHealth, reason: "ReapplyFailed",
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, addon.OutcomeLost, d.Status.History[0].Outcome) }}},
		{name: "a re-apply that does not become healthy is a failed re-apply",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth), now: t0.Add(defaultCheckTimeout), obs: read(addon.HealthUnhealthy, nil),
			policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want:   want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "ReapplyFailed"}},
		{name: "a re-apply that fails its tests is a failed re-apply",
			status: st(addon.PhaseChecking, addon.ActionTest, claimed(addon.ActionTest, "v1", "v1")), obs: outcome(errBoom),
			policy: addon.Policy{Test: addon.TestPolicy{Enable: true}, UpgradeRemediation: addon.RemediationUninstall},
			want:   want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "ReapplyFailed"}},
		{name: "a re-apply waiting past the phase's deadline is a failed re-apply",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.NextAttemptTime = 1, 1, at(t0.Add(defaultUpgradeTimeout))
			}),
			now: t0.Add(defaultUpgradeTimeout), policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want: want{phase: addon.PhaseRunning, action: addon.ActionCheckHealth, pending: addon.ActionCheckHealth, reason: "ReapplyFailed"}},
		{name: "health is read at the poll interval, but no later than the re-apply",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, reapplyOwed), obs: read(addon.HealthHealthy, nil),
			policy: addon.Policy{RunningInterval: dur(time.Hour)},
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultBackoffInitial, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, at(tNow.Add(defaultBackoffInitial)), d.Status.ReapplyTime)
			}}},
		{name: "once the backoff is over the re-apply runs again at once",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, reapplyOwed), now: tNow.Add(defaultBackoffInitial),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "ReapplyDue",
				check: func(t *testing.T, d addon.Decision) {
					claimOf(t, d, "v1", "v1")
					assert.Nil(t, d.Status.ReapplyTime)
				}}},
		{name: "no drift correction starts while a failed one waits out its backoff",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, reapplyOwed), obs: drifted, policy: addon.Policy{Drift: addon.DriftCorrect},
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultBackoffInitial, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, addon.TypeDrifted).Status)
			}}},
		{name: "the re-apply that exhausts the retries stops them; Running goes on, watched",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, reapplying, func(s *addon.Status) { s.UpgradeFailures, s.Failures = 5, 5 }), obs: outcome(errBoom),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "ReapplyFailed", check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "v1", d.Status.FailedVersion)
				assert.Nil(t, d.Status.ReapplyTime)
				assert.Contains(t, d.Status.Message, "retried 5 times")
				assert.Contains(t, cond(t, d, conditions.TypeDegraded).Message, "retries exhausted")
			}}},
		{name: "no drift correction starts once the re-apply's retries ran out",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.FailedVersion, s.LastFailedAction = 6, 6, "v1", addon.ActionUpgrade
			}),
			obs: drifted, policy: addon.Policy{Drift: addon.DriftCorrect},
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultRunningInterval}},
		{name: "a new spec after the retries ran out re-applies with fresh retries",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.FailedVersion, s.LastFailedAction = 6, 6, "v1", addon.ActionUpgrade
			}),
			spec: gen(2, "v1"),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "SpecChanged",
				check: func(t *testing.T, d addon.Decision) { assert.Zero(t, d.Status.UpgradeFailures) }}},
		{name: "a force request after the retries ran out re-applies once, the retries spent kept",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.FailedVersion, s.LastFailedAction = 6, 6, "v1", addon.ActionUpgrade
			}),
			spec: func(s *addon.Spec) { s.ForceToken = "f1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "ForceRequested",
				check: func(t *testing.T, d addon.Decision) {
					claimOf(t, d, "v1", "v1")
					assert.Equal(t, int32(6), d.Status.UpgradeFailures)
				}}},
		{name: "a reset request after the retries ran out clears them, so that drift is corrected again",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.FailedVersion, s.LastFailedAction = 6, 6, "v1", addon.ActionUpgrade
				s.NextAttemptTime = at(tNow.Add(time.Minute))
			}),
			spec: func(s *addon.Spec) { s.ResetToken = "r1" },
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Zero(t, d.Status.UpgradeFailures)
				assert.Empty(t, d.Status.FailedVersion)
				assert.Equal(t, metav1.ConditionFalse, cond(t, d, conditions.TypeDegraded).Status)
			}}},
		{name: "a re-apply of a version never seen healthy is a failed upgrade, remediated",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.LastGoodVersion = "" }, reapplying), obs: outcome(errBoom),
			policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want:   want{phase: addon.PhaseRemediating, pending: addon.ActionUninstall, reason: "UpgradeFailed"}},
	})
}

// TestRuleFailedDriftCorrectionKeepsWatching drives a Machine whose drift
// corrections keep failing: the health keeps being read between the
// retries, MaxRetries bounds them, and nothing is uninstalled.
func TestRuleFailedDriftCorrectionKeepsWatching(t *testing.T) {
	h := newHarness(t, addon.Policy{Drift: addon.DriftCorrect, MaxRetries: ptr.To[int32](2), UpgradeRemediation: addon.RemediationUninstall})
	h.until(addon.PhaseRunning, 3)
	h.driver.Push(fake.AddonDrift, fake.AddonOutcome{Drifted: true, Detail: "replicas 0"})
	for range 3 {
		h.driver.Push(fake.AddonUpgrade, fake.AddonOutcome{Err: errBoom})
	}
	for range 12 {
		h.wait()
		h.reconcile()
	}
	s := h.status()
	assert.Equal(t, addon.PhaseRunning, s.Phase)
	assert.Equal(t, "v1", s.FailedVersion, "the retries ran out")
	assert.Equal(t, 3, h.driver.Count(fake.AddonUpgrade), "one correction and MaxRetries retries")
	assert.Zero(t, h.driver.Count(fake.AddonUninstall), "nothing is uninstalled")
	var healthBetween []int
	n := 0
	for _, c := range h.driver.Recorded() {
		switch c.Method {
		case fake.AddonHealth:
			n++
		case fake.AddonUpgrade:
			healthBetween = append(healthBetween, n)
			n = 0
		}
	}
	assert.Equal(t, 3, len(healthBetween))
	assert.Positive(t, n, "the health is read after the last failure")
	for i, k := range healthBetween[1:] {
		assert.Positive(t, k, "the health is read before retry %d", i+1)
	}
}

// TestRulePanickingDriverIsAFailedAttempt: a Driver, Tester or
// DriftDetector call that panics is a failed attempt with a *PanicError,
// recorded and retried as the policy says; Reconcile neither panics nor
// fails.
func TestRulePanickingDriverIsAFailedAttempt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy addon.Policy
		method fake.AddonMethod
		before addon.Phase // the phase to reach first
		want   func(t *testing.T, s addon.Status)
	}{
		{"Install", addon.Policy{InstallRemediation: addon.RemediationNone}, fake.AddonInstall, "", func(t *testing.T, s addon.Status) {
			assert.Equal(t, addon.PhaseReinitializing, s.Phase)
			assert.Equal(t, int32(1), s.InstallFailures)
			assert.Equal(t, addon.OutcomeFailed, s.History[len(s.History)-1].Outcome)
		}},
		{"Health", addon.Policy{}, fake.AddonHealth, addon.PhaseChecking, func(t *testing.T, s addon.Status) {
			assert.Equal(t, addon.PhaseChecking, s.Phase)
			assert.Equal(t, addon.HealthUnknown, s.Health)
		}},
		{"Drift", addon.Policy{Drift: addon.DriftCorrect}, fake.AddonDrift, addon.PhaseRunning, func(t *testing.T, s addon.Status) {
			assert.Equal(t, addon.PhaseRunning, s.Phase)
			assert.Equal(t, addon.HealthUnknown, s.Health)
		}},
		{"Test", addon.Policy{Test: addon.TestPolicy{Enable: true}, InstallRemediation: addon.RemediationNone}, fake.AddonTest, addon.PhaseChecking,
			func(t *testing.T, s addon.Status) {
				assert.Equal(t, int32(1), s.InstallFailures, "a test that panicked failed")
				assert.Equal(t, metav1.ConditionFalse, mustCond(t, s, addon.TypeTestSuccess).Status)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy)
			if tc.before != "" {
				h.until(tc.before, 3)
				if tc.method == fake.AddonTest {
					h.reconcile() // the healthy check that schedules the test
				}
			}
			h.driver.Push(tc.method, fake.AddonOutcome{Panic: fmt.Errorf("nil map: %w", errBoom)})
			require.NotPanics(t, func() {
				h.wait()
				h.reconcile()
			})
			s := h.status()
			assert.Contains(t, s.Message, "addon: "+string(tc.method)+" panicked: nil map: boom")
			tc.want(t, s)
		})
	}
}

func mustCond(t *testing.T, s addon.Status, typ string) metav1.Condition {
	t.Helper()
	c, ok := conditions.Get(s.Conditions, typ)
	require.True(t, ok, "condition %s is set", typ)
	return c
}

// TestPanicError: a *PanicError names the method, keeps what it panicked
// with reachable with errors.Is and errors.As, and keeps the stack.
func TestPanicError(t *testing.T) {
	h := newHarness(t, addon.Policy{InstallRemediation: addon.RemediationNone})
	var got error
	drv := hookDriver{AddonDriver: h.driver, before: func(addon.Request) { panic(fmt.Errorf("driver bug: %w", context.Canceled)) }}
	m, err := addon.NewMachine(addon.Config{Driver: drv, Store: h.store, Clock: h.clock, Redact: func(s string) string { got = errors.New(s); return s }})
	require.NoError(t, err)
	_, err = m.Reconcile(quiet, h.obj())
	require.NoError(t, err)
	require.EqualError(t, got, "addon: Install panicked: driver bug: context canceled")

	pe := &addon.PanicError{Method: "Upgrade", Value: fmt.Errorf("wrapped: %w", context.DeadlineExceeded), Stack: []byte("goroutine 1")}
	var target *addon.PanicError
	require.ErrorAs(t, fmt.Errorf("outer: %w", pe), &target)
	assert.Equal(t, "Upgrade", target.Method)
	assert.ErrorIs(t, pe, context.DeadlineExceeded)
	assert.NoError(t, (&addon.PanicError{Method: "Health", Value: "a string"}).Unwrap())
}

// TestRuleClaimExpiryIsBounded: a claim is never honoured past the latest
// expiry the engine itself could have written for it (ActionTimeout plus
// ClaimGrace after it was taken): a later one, from another writer or a
// corrupt status, is bounded there and reported, and the attempt is lost
// once that passes.
func TestRuleClaimExpiryIsBounded(t *testing.T) {
	started := t0.Add(30 * time.Second)
	latest := started.Add(defaultActionTimeout + addon.ClaimGrace)
	forever := func(s *addon.Status) {
		c := *s.InFlight
		c.Expires = metav1.NewTime(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
		s.InFlight = &c
	}
	installing := func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }
	runDecide(t, []decideRow{
		{name: "a claim that expires in year 9999 waits no later than the engine would have written",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1"), forever),
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: latest.Sub(tNow), check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.NewTime(latest), d.Status.InFlight.Expires, "bounded in the status")
				require.Len(t, d.Events, 1)
				assert.Equal(t, "ClaimExpiryBounded", d.Events[0].Reason)
				assert.Contains(t, d.Events[0].Message, "9999-12-31T00:00:00Z")
			}}},
		{name: "past that bound the attempt is lost",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1"), forever),
			now:    latest, policy: addon.Policy{InstallRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, reason: "ClaimLost", check: func(t *testing.T, d addon.Decision) {
				require.Len(t, d.Status.History, 1)
				assert.Equal(t, addon.OutcomeLost, d.Status.History[0].Outcome)
			}}},
		{name: "a claim the engine wrote is honoured to its expiry, unreported",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1")),
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: latest.Sub(tNow), check: func(t *testing.T, d addon.Decision) {
				assert.Empty(t, d.Events)
			}}},
		{name: "a longer ActionTimeout allows a longer claim",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1"), forever),
			policy: addon.Policy{ActionTimeout: dur(time.Hour)},
			want:   want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: started.Add(time.Hour + addon.ClaimGrace).Sub(tNow)}},
	})
}

// TestRuleClockStepBackNeverLengthensAWait: after the clock steps back an
// hour, no wait is longer than the backoff, poll interval, timeout or claim
// that set it: a 10s retry stays at most a backoff away, not 1h0m10s.
func TestRuleClockStepBackNeverLengthensAWait(t *testing.T) {
	back := tNow.Add(-time.Hour)
	longestRetry := defaultBackoffInitial * 11 / 10 // the first backoff at the largest jitter
	installing := func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }
	runDecide(t, []decideRow{
		{name: "a retry is due within its backoff",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, installing, func(s *addon.Status) {
				s.InstallFailures, s.Failures, s.NextAttemptTime = 1, 1, at(tNow.Add(defaultBackoffInitial))
			}),
			now: back,
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: longestRetry, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, at(back.Add(longestRetry)), d.Status.NextAttemptTime)
			}}},
		{name: "a health check is due within its poll interval",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(tNow.Add(defaultRunningInterval)) }),
			now:    back,
			want:   want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultRunningInterval}},
		{name: "a claim taken in the future expires within ActionTimeout and ClaimGrace from now",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1")),
			now:    back,
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: defaultActionTimeout + addon.ClaimGrace,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, metav1.NewTime(t0.Add(30*time.Second)), d.Status.InFlight.Started, "the attempt keeps its name")
				}}},
		{name: "a phase's deadline is within its timeout",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.NextAttemptTime = 1, 1, at(tNow.Add(defaultBackoffInitial))
			}),
			now: back,
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, at(back.Add(defaultUpgradeTimeout)), d.Status.Deadline)
			}}},
		{name: "a re-apply is due within its backoff",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.UpgradeFailures, s.Failures, s.LastFailedAction = 1, 1, addon.ActionUpgrade
				s.ReapplyTime, s.NextAttemptTime = at(tNow.Add(defaultBackoffInitial)), at(tNow.Add(defaultBackoffInitial))
			}),
			now: back,
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: longestRetry, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, at(back.Add(longestRetry)), d.Status.ReapplyTime)
			}}},
		{name: "a request after failures waits at most their backoff",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.FailedVersion, s.LastFailedAction, s.UpgradeFailures, s.Failures, s.ObservedGeneration = "v2", addon.ActionUpgrade, 3, 3, 2
				s.LastAttemptTime, s.NextAttemptTime = at(tNow), at(tNow.Add(time.Minute))
			}),
			spec: func(s *addon.Spec) { s.Generation, s.Version, s.ForceToken = 2, "v2", "f1" }, now: back,
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, after: 2 * defaultBackoffInitial,
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, at(back), d.Status.LastAttemptTime) }}},
	})
}
