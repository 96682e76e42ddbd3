package addon_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
)

// want is what a Decide row expects; zero fields are not checked except
// phase, action and pending.
type want struct {
	phase   addon.Phase
	action  addon.Action // the action to run now
	pending addon.Action
	after   time.Duration // checked when not zero
	reason  string        // checked when not empty
	check   func(t *testing.T, d addon.Decision)
}

type decideRow struct {
	name   string
	spec   func(*addon.Spec)
	status addon.Status
	// obs is the observation, given the row's status (nil: a look).
	obs    func(addon.Status) addon.Observation
	policy addon.Policy
	now    time.Time
	// inspect decides with an Inspector (Input.Inspect).
	inspect bool
	want    want
}

func outcome(err error) func(addon.Status) addon.Observation {
	return func(s addon.Status) addon.Observation { return ran(s, err) }
}

func read(h addon.Health, err error) func(addon.Status) addon.Observation {
	return func(addon.Status) addon.Observation { return health(h, err) }
}

func gen(g int64, v string) func(*addon.Spec) {
	return func(s *addon.Spec) { s.Generation, s.Version = g, v }
}

// runDecide runs rows through Decide and checks, besides each row's
// expectations, that the decision's status validates (nothing waits without
// a deadline) and that the input was not changed.
func runDecide(t *testing.T, rows []decideRow) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			spec := meshSpec
			if r.spec != nil {
				r.spec(&spec)
			}
			in := addon.Input{Spec: spec, Status: r.status, Policy: r.policy, Now: r.now, Owner: "m1", Inspect: r.inspect}
			if in.Now.IsZero() {
				in.Now = tNow
			}
			if r.obs != nil {
				in.Observation = r.obs(r.status)
			}
			before := *r.status.DeepCopy()
			d, err := addon.Decide(in)
			require.NoError(t, err)
			assert.Equal(t, before, r.status, "Decide changed its input")
			w := r.want
			assert.Equal(t, w.phase, d.Status.Phase, "phase")
			assert.Equal(t, w.action, d.Action, "action")
			assert.Equal(t, w.pending, d.Status.PendingAction, "pending action")
			if w.after != 0 {
				assert.Equal(t, w.after, d.RequeueAfter, "requeue after")
			}
			if w.reason != "" {
				assert.Equal(t, w.reason, d.Status.Reason, "reason")
			}
			require.NoError(t, d.Status.Validate(), "the decided status must validate")
			if d.Action != addon.ActionNone && d.Action != addon.ActionCheckHealth && d.Action != addon.ActionInspect {
				require.NotNil(t, d.Status.InFlight, "a mutating action is claimed")
				assert.Equal(t, d.Action, d.Status.InFlight.Action)
			}
			if d.Action == addon.ActionInstall {
				assert.Empty(t, d.Status.InstalledVersion, "Install is never chosen while a version is installed")
			}
			if w.check != nil {
				w.check(t, d)
			}
		})
	}
}

func cond(t *testing.T, d addon.Decision, typ string) metav1.Condition {
	t.Helper()
	c, ok := conditions.Get(d.Status.Conditions, typ)
	require.True(t, ok, "condition %s is set", typ)
	return c
}

func claimOf(t *testing.T, d addon.Decision, from, to string) {
	t.Helper()
	require.NotNil(t, d.Status.InFlight)
	assert.Equal(t, from, d.Status.InFlight.From, "claim from")
	assert.Equal(t, to, d.Status.InFlight.To, "claim to")
	assert.Equal(t, "m1", d.Status.InFlight.Owner)
}

// TestDecideLifecycle walks the default table's main road.
func TestDecideLifecycle(t *testing.T) {
	runDecide(t, []decideRow{
		{name: "a new add-on installs at once, under a claim", status: addon.Status{},
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "Created",
				check: func(t *testing.T, d addon.Decision) {
					claimOf(t, d, "", "v1")
					assert.Equal(t, at(tNow.Add(defaultInstallTimeout)), d.Status.Deadline)
				}}},
		{name: "install succeeded: Checking verifies it at once",
			status: st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }, claimed(addon.ActionInstall, "", "v1")),
			obs:    outcome(nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: addon.RequeueNow, reason: "InstallSucceeded",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, addon.ActionInstall, d.Status.Verifying)
					assert.Equal(t, "v1", d.Status.InstalledVersion)
					assert.Nil(t, d.Status.InFlight, "the claim is released")
					assert.Equal(t, metav1.ConditionTrue, cond(t, d, addon.TypeReleased).Status)
					require.Len(t, d.Status.History, 1)
					assert.Equal(t, addon.Attempt{Action: addon.ActionInstall, Version: "v1", Outcome: addon.OutcomeSucceeded,
						Started: metav1.NewTime(t0.Add(30 * time.Second)), Finished: metav1.NewTime(tNow)}, d.Status.History[0])
				}}},
		{name: "a healthy check goes Running and records the last good version",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.InstalledVersion, s.Verifying = "v2", addon.ActionUpgrade }),
			spec:   gen(1, "v2"), obs: read(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultRunningInterval, reason: "Healthy",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v2", d.Status.LastGoodVersion)
					assert.Nil(t, d.Status.Deadline, "Running waits for nothing")
					assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeReady).Status)
				}}},
		{name: "an unhealthy check in Checking polls again at the check interval",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth), obs: read(addon.HealthUnhealthy, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: defaultCheckInterval}},
		{name: "deletion from Running uninstalls at once",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(tNow.Add(time.Hour)) }),
			spec:   func(s *addon.Spec) { s.Deleting = true },
			want:   want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall, reason: "DeletionRequested"}},
		{name: "a successful uninstall in Deleting is Deleted",
			status: st(addon.PhaseDeleting, addon.ActionUninstall, claimed(addon.ActionUninstall, "v1", "")),
			spec:   func(s *addon.Spec) { s.Deleting = true }, obs: outcome(nil),
			want: want{phase: addon.PhaseDeleted, pending: addon.ActionNone, check: func(t *testing.T, d addon.Decision) {
				assert.True(t, d.Deleted)
				assert.Empty(t, d.Status.InstalledVersion)
			}}},
		{name: "a failed uninstall in Deleting retries after the backoff",
			status: st(addon.PhaseDeleting, addon.ActionUninstall, claimed(addon.ActionUninstall, "v1", "")),
			spec:   func(s *addon.Spec) { s.Deleting = true }, obs: outcome(errBoom),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionUninstall, after: defaultBackoffInitial, check: func(t *testing.T, d addon.Decision) {
				assert.False(t, d.Deleted)
			}}},
		{name: "Deleting stops at its deadline, Stalled, until a reset",
			status: st(addon.PhaseDeleting, addon.ActionUninstall), now: t0.Add(defaultDeleteTimeout),
			spec: func(s *addon.Spec) { s.Deleting = true },
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionNone, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeStalled).Status)
			}}},
		{name: "a reset restarts a stopped deletion",
			status: st(addon.PhaseDeleting, addon.ActionNone), now: t0.Add(time.Hour),
			spec: func(s *addon.Spec) { s.Deleting, s.ResetToken = true, "r1" },
			want: want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall, reason: "ResetRequested"}},
		{name: "Deleted is terminal", status: st(addon.PhaseDeleted, addon.ActionNone, func(s *addon.Status) { s.InstalledVersion = "" }),
			spec: gen(5, "v9"),
			want: want{phase: addon.PhaseDeleted, check: func(t *testing.T, d addon.Decision) { assert.True(t, d.Deleted) }}},
	})
}

// TestRuleReapplyIsNeverAFreshInstall: once something is installed, a
// version change during Upgrading, a spec change at the same version and a
// request while an upgrade is being checked re-apply onto it (an upgrade),
// and a retry from Failed after a failed upgrade upgrades (Flux).
func TestRuleReapplyIsNeverAFreshInstall(t *testing.T) {
	failedUpgrade := func(s *addon.Status) {
		s.FailedVersion, s.LastFailedAction, s.UpgradeFailures, s.Failures, s.ObservedGeneration = "v2", addon.ActionUpgrade, 6, 1, 2
		s.LastAttemptTime = at(t0)
	}
	runDecide(t, []decideRow{
		{name: "a version change during Upgrading upgrades onto the installed version",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2; s.NextAttemptTime = at(tNow.Add(time.Minute)) }),
			spec:   gen(3, "v3"),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "VersionChanged",
				check: func(t *testing.T, d addon.Decision) { claimOf(t, d, "v1", "v3") }}},
		{name: "a spec change at the same version re-applies it as an upgrade",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(tNow.Add(time.Minute)) }),
			spec:   gen(2, "v1"),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "SpecChanged",
				check: func(t *testing.T, d addon.Decision) { claimOf(t, d, "v1", "v1") }}},
		{name: "a force request while an upgrade is being checked re-applies it",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) {
				s.InstalledVersion, s.ObservedGeneration, s.NextAttemptTime = "v2", 2, at(tNow.Add(time.Second))
			}),
			spec: func(s *addon.Spec) { s.Generation, s.Version, s.ForceToken = 2, "v2", "f1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "ForceRequested",
				check: func(t *testing.T, d addon.Decision) { claimOf(t, d, "v2", "v2") }}},
		{name: "a spec change while an install is being checked re-applies it as an upgrade",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying, s.LastGoodVersion = addon.ActionInstall, "" }),
			spec:   gen(2, "v1"),
			want:   want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade}},
		{name: "a reset from Failed after a failed upgrade upgrades",
			status: st(addon.PhaseFailed, addon.ActionNone, failedUpgrade), spec: func(s *addon.Spec) { s.Generation, s.Version, s.ResetToken = 2, "v2", "r1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade,
				check: func(t *testing.T, d addon.Decision) {
					claimOf(t, d, "v1", "v2")
					assert.Zero(t, d.Status.UpgradeFailures, "a reset clears the retries")
				}}},
		{name: "a force from Failed after a failed upgrade upgrades",
			status: st(addon.PhaseFailed, addon.ActionNone, failedUpgrade), spec: func(s *addon.Spec) { s.Generation, s.Version, s.ForceToken = 2, "v2", "f1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "ForceRequested",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, int32(6), d.Status.UpgradeFailures, "a force is one more attempt: it keeps the retries spent")
				}}},
		{name: "a spec change from Failed after a failed upgrade upgrades",
			status: st(addon.PhaseFailed, addon.ActionNone, failedUpgrade), spec: gen(3, "v2"),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade}},
		{name: "a failed install retried without remediation is an upgrade once it was applied",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying, s.LastGoodVersion = addon.ActionInstall, "" }),
			policy: addon.Policy{InstallRemediation: addon.RemediationNone}, now: t0.Add(defaultCheckTimeout), obs: read(addon.HealthUnhealthy, nil),
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, reason: "InstallFailed"}},
		{name: "a failed upgrade to a new version rolls back to the last good version",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(2, "v2"), obs: outcome(errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, after: addon.RequeueNow, reason: "UpgradeFailed"}},
		{name: "a failed upgrade back to the last good version stops, Stalled: rolling back to it would repeat it",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.InstalledVersion = "v2" }, claimed(addon.ActionUpgrade, "v2", "v1")),
			spec:   gen(2, "v1"), obs: outcome(errBoom),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: addon.ReasonRollbackTargetUnusable,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v2", d.Status.InstalledVersion, "nothing is uninstalled")
					assert.Equal(t, addon.ReasonRollbackTargetUnusable, cond(t, d, conditions.TypeStalled).Reason)
				}}},
	})
}

// TestRuleNoHealthyVersionIsUninstalled: an unhealthy Running add-on is
// kept (Degraded); only the policy's Uninstall for a failure of the version
// being applied, or a deletion, uninstalls.
func TestRuleNoHealthyVersionIsUninstalled(t *testing.T) {
	runDecide(t, []decideRow{
		{name: "an unhealthy Running add-on stays Running, Degraded",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), obs: read(addon.HealthUnhealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultRunningInterval, reason: "Unhealthy",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, metav1.ConditionFalse, cond(t, d, conditions.TypeReady).Status)
					assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeDegraded).Status)
				}}},
		{name: "a Running add-on that recovers is Ready again",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.Health, s.Reason = addon.HealthUnhealthy, "Unhealthy" }),
			obs:    read(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "Healthy",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeReady).Status)
				}}},
		{name: "with UpgradeRemediation Uninstall a failed upgrade uninstalls the version that failed",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(2, "v2"), obs: outcome(errBoom),
			policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want:   want{phase: addon.PhaseRemediating, pending: addon.ActionUninstall}},
		{name: "an upgrade that fails its check rolls back, never uninstalls",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.InstalledVersion = "v2" }),
			spec:   gen(1, "v2"), now: t0.Add(defaultCheckTimeout), obs: read(addon.HealthUnhealthy, nil),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, reason: "UpgradeFailed"}},
	})
}

// TestRuleForcedRetryRunsNow: a request on a failed upgrade runs the
// upgrade at once, not after the next health poll.
func TestRuleForcedRetryRunsNow(t *testing.T) {
	rolledBack := func(s *addon.Status) {
		s.FailedVersion, s.LastFailedAction, s.UpgradeFailures, s.Failures, s.ObservedGeneration = "v2", addon.ActionUpgrade, 1, 1, 2
		s.NextAttemptTime, s.LastAttemptTime = at(tNow.Add(defaultRunningInterval)), at(tNow.Add(-time.Second))
	}
	runDecide(t, []decideRow{
		{name: "force on a rolled-back upgrade upgrades at once",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, rolledBack), spec: func(s *addon.Spec) { s.Generation, s.Version, s.ForceToken = 2, "v2", "f1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "ForceRequested"}},
		{name: "reset on a rolled-back upgrade upgrades at once",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, rolledBack), spec: func(s *addon.Spec) { s.Generation, s.Version, s.ResetToken = 2, "v2", "r1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "VersionChanged"}},
		{name: "force on a failed upgrade waiting for its rollback's check upgrades at once",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, rolledBack, func(s *addon.Status) {
				s.Verifying, s.NextAttemptTime = addon.ActionRollback, at(tNow.Add(time.Second))
			}),
			spec: func(s *addon.Spec) { s.Generation, s.Version, s.ForceToken = 2, "v2", "f1" },
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade}},
	})
}

// TestRuleOneActionInFlight: an unexpired claim holds every look, deletion
// included; an expired one is a lost attempt; an outcome is recorded only
// under the claim it ran with (its owner, start and fencing token).
func TestRuleOneActionInFlight(t *testing.T) {
	expires := t0.Add(30*time.Second + defaultActionTimeout + addon.ClaimGrace)
	runDecide(t, []decideRow{
		{name: "deletion while an install runs waits for its claim",
			status: st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }, claimed(addon.ActionInstall, "", "v1")),
			spec:   func(s *addon.Spec) { s.Deleting = true },
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: expires.Sub(tNow),
				check: func(t *testing.T, d addon.Decision) { assert.NotNil(t, d.Status.InFlight) }}},
		{name: "a second look while an upgrade is claimed runs nothing",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(1, "v2"),
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, after: expires.Sub(tNow)}},
		{name: "an expired claim is a lost attempt; deletion then uninstalls",
			status: st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }, claimed(addon.ActionInstall, "", "v1")),
			spec:   func(s *addon.Spec) { s.Deleting = true }, now: expires,
			want: want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall,
				check: func(t *testing.T, d addon.Decision) {
					require.Len(t, d.Status.History, 1)
					assert.Equal(t, addon.OutcomeLost, d.Status.History[0].Outcome)
				}}},
		{name: "an expired claim is a lost attempt, retried after the backoff",
			status: st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }, claimed(addon.ActionInstall, "", "v1")),
			now:    expires, policy: addon.Policy{InstallRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseInitializing, pending: addon.ActionInstall, after: defaultBackoffInitial, reason: "ClaimLost",
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, int32(1), d.Status.LostAttempts) }}},
		{name: "an outcome under an older fencing token is discarded, though owner, action and start agree",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"), func(s *addon.Status) { s.Fence, s.InFlight.Fence = 8, 8 }),
			spec:   gen(1, "v2"),
			obs: func(s addon.Status) addon.Observation {
				older := *s.InFlight
				older.Fence = 7
				return addon.Observation{Action: addon.ActionUpgrade, Claim: &older}
			},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, int64(8), d.Status.InFlight.Fence, "the holder's claim stays")
				assert.Equal(t, "v1", d.Status.InstalledVersion, "the late outcome is not recorded")
				assert.Equal(t, "OutcomeDiscarded", d.Events[0].Reason)
			}}},
		{name: "an outcome under a claim that no longer holds is discarded",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(1, "v2"),
			obs: func(s addon.Status) addon.Observation {
				other := *s.InFlight
				other.Owner = "m2"
				return addon.Observation{Action: addon.ActionUpgrade, Claim: &other}
			},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "m1", d.Status.InFlight.Owner, "the holder's claim stays")
				assert.Equal(t, "OutcomeDiscarded", d.Events[0].Reason)
			}}},
		{name: "a health read on a status with an action in flight is ignored",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(1, "v2"), obs: read(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade}},
	})
}

// TestRuleTimeAndGenerationsGoForward: a stale spec is ignored.
func TestRuleTimeAndGenerationsGoForward(t *testing.T) {
	runDecide(t, []decideRow{
		{name: "a spec generation below the observed one is ignored, with an event",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.ObservedGeneration, s.NextAttemptTime = 3, at(tNow) }),
			spec:   gen(2, "v0"),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: defaultCheckInterval,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, int64(3), d.Status.ObservedGeneration)
					assert.Equal(t, "StaleGeneration", d.Events[0].Reason)
				}}},
	})
}

// TestRuleNoPhaseWaitsWithoutDeadline: Status.Validate rejects a waiting
// status that nothing ends; unreadable health ends in Ready=Unknown; a
// request on every reconcile is rate-limited.
func TestRuleNoPhaseWaitsWithoutDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    addon.Status
		want string
	}{
		{"Remediating with nothing pending", st(addon.PhaseRemediating, addon.ActionNone), "nothing pending"},
		{"Upgrading without a deadline", st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.Deadline = nil }), "without a deadline"},
		{"Checking that verifies nothing", st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying = "" }), "verifies"},
		{"Running with nothing pending", st(addon.PhaseRunning, addon.ActionNone), "nothing pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate()
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	unknownSince := func(s *addon.Status) { s.Health, s.HealthUnknownSince = addon.HealthUnknown, at(t0) }
	runDecide(t, []decideRow{
		{name: "health unreadable in Running past HealthUnknownTimeout turns Ready Unknown and Degraded",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, unknownSince), now: t0.Add(defaultHealthUnknownTimeout), obs: read("", errBoom),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionUnknown, cond(t, d, conditions.TypeReady).Status)
				assert.Equal(t, addon.ReasonHealthUnknown, cond(t, d, conditions.TypeDegraded).Reason)
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeDegraded).Status)
			}}},
		{name: "health unreadable for less than HealthUnknownTimeout keeps Ready",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, unknownSince), obs: read("", errBoom),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, conditions.TypeReady).Status)
			}}},
		{name: "a reset token that changes on every reconcile waits out the backoff of the failures before it",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.FailedVersion, s.LastFailedAction, s.UpgradeFailures, s.Failures, s.ObservedGeneration = "v2", addon.ActionUpgrade, 3, 3, 2
				s.LastAttemptTime, s.LastResetToken, s.NextAttemptTime = at(tNow.Add(-5*time.Second)), "r3", at(tNow.Add(time.Minute))
			}),
			spec: func(s *addon.Spec) { s.Generation, s.Version, s.ResetToken = 2, "v2", "r4" },
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, reason: "VersionChanged", after: 2*defaultBackoffInitial - 5*time.Second,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, int32(3), d.Status.Failures, "a reset keeps the backoff step")
				}}},
		{name: "a force token that changes on every reconcile waits out the backoff of the failures before it",
			status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) {
				s.FailedVersion, s.LastFailedAction, s.UpgradeFailures, s.Failures, s.ObservedGeneration = "v2", addon.ActionUpgrade, 3, 3, 2
				s.LastAttemptTime, s.LastForceToken = at(tNow.Add(-5*time.Second)), "f3"
			}),
			spec: func(s *addon.Spec) { s.Generation, s.Version, s.ForceToken = 2, "v2", "f4" },
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, after: 2*defaultBackoffInitial - 5*time.Second}},
	})
}

// TestRuleSecretsStayOut: driver error text is redacted before it reaches
// the status, the conditions or the events.
func TestRuleSecretsStayOut(t *testing.T) {
	leak := fmt.Errorf("helm: pull failed: password=hunter2 token: abc.def for https://admin:s3cr3t@registry.example/charts")
	for _, tc := range []struct {
		name   string
		redact func(string) string
		gone   []string
	}{
		{"default redaction", nil, []string{"hunter2", "abc.def", "s3cr3t"}},
		{"host redaction", func(s string) string { return strings.ReplaceAll(s, "registry.example", "[host]") }, []string{"registry.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"))
			d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v2"}, Status: s, Now: tNow, Owner: "m1",
				Observation: ran(s, leak), Redact: tc.redact})
			require.NoError(t, err)
			out, err := json.Marshal(d)
			require.NoError(t, err)
			for _, secret := range tc.gone {
				assert.NotContains(t, string(out), secret)
			}
			assert.Contains(t, d.Status.Message, "pull failed")
		})
	}
}

// TestDecideFluxParity holds the rows learnt from Flux's helm-controller
// reconcile planner (internal/reconcile): remediation strategies and
// retries, remediate-last-failure, Released/Remediated, the test step,
// drift detection, reset and force.
func TestDecideFluxParity(t *testing.T) {
	installing := func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }
	runDecide(t, []decideRow{
		{name: "Flux: MaxRetries 0 means no retries: the first failed install exhausts and is remediated",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1")), obs: outcome(errBoom),
			policy: addon.Policy{MaxRetries: ptr.To[int32](0)},
			want:   want{phase: addon.PhaseFailed, pending: addon.ActionUninstall, after: addon.RequeueNow, reason: "RetriesExhausted"}},
		{name: "Flux: RemediateLastFailure false leaves the last failure in place",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1")), obs: outcome(errBoom),
			policy: addon.Policy{MaxRetries: ptr.To[int32](0), RemediateLastFailure: ptr.To(false)},
			want:   want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "RetriesExhausted"}},
		{name: "Flux: MaxRetries -1 retries without end",
			status: st(addon.PhaseRemediating, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"), func(s *addon.Status) { s.UpgradeFailures, s.Failures = 100, 100 }),
			spec:   gen(1, "v2"), obs: outcome(errBoom),
			policy: addon.Policy{MaxRetries: ptr.To[int32](-1), UpgradeRemediation: addon.RemediationNone},
			want:   want{phase: addon.PhaseRemediating, pending: addon.ActionUpgrade, after: defaultBackoffMax}},
		{name: "Flux: the default MaxRetries is 5",
			status: st(addon.PhaseRemediating, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"), func(s *addon.Status) { s.UpgradeFailures = 5 }),
			spec:   gen(1, "v2"), obs: outcome(errBoom), policy: addon.Policy{UpgradeRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "RetriesExhausted"}},
		{name: "Flux: a failed upgrade sets Released False and rolls back",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2")), spec: gen(1, "v2"), obs: outcome(errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionFalse, cond(t, d, addon.TypeReleased).Status)
				assert.Equal(t, "UpgradeFailed", cond(t, d, addon.TypeReleased).Reason)
			}}},
		{name: "Flux: a rollback target that is missing is not rolled back to: Stalled",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"), func(s *addon.Status) { s.LastGoodVersion = "" }),
			spec:   gen(1, "v2"), obs: outcome(errBoom),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: addon.ReasonRollbackTargetMissing, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, addon.ReasonRollbackTargetMissing, cond(t, d, conditions.TypeStalled).Reason)
			}}},
		{name: "Flux: a successful rollback sets Remediated and checks the rolled-back version",
			status: st(addon.PhaseRemediating, addon.ActionRollback, claimed(addon.ActionRollback, "v2", "v1"), func(s *addon.Status) { s.InstalledVersion, s.FailedVersion = "v2", "v2" }),
			spec:   gen(1, "v2"), obs: outcome(nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, addon.TypeRemediated).Status)
				assert.Equal(t, addon.ActionRollback, d.Status.Verifying)
				assert.Equal(t, "v1", d.Status.InstalledVersion)
			}}},
		{name: "Flux: a successful upgrade sets Released and clears Remediated",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"), func(s *addon.Status) {
				s.Conditions = []metav1.Condition{{Type: addon.TypeRemediated, Status: metav1.ConditionTrue, Reason: "RollbackSucceeded", LastTransitionTime: metav1.NewTime(t0)}}
			}),
			spec: gen(1, "v2"), obs: outcome(nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "UpgradeSucceeded", cond(t, d, addon.TypeReleased).Reason)
				_, ok := conditions.Get(d.Status.Conditions, addon.TypeRemediated)
				assert.False(t, ok)
			}}},
		{name: "Flux: the test step runs once the upgraded version is healthy",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.InstalledVersion = "v2" }), spec: gen(1, "v2"),
			policy: addon.Policy{Test: addon.TestPolicy{Enable: true}}, obs: read(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionTest, after: addon.RequeueNow}},
		{name: "Flux: passing tests set TestSuccess and go Running",
			status: st(addon.PhaseChecking, addon.ActionTest, func(s *addon.Status) { s.InstalledVersion = "v2" }, claimed(addon.ActionTest, "v2", "v2")),
			spec:   gen(1, "v2"), policy: addon.Policy{Test: addon.TestPolicy{Enable: true}}, obs: outcome(nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, addon.TypeTestSuccess).Status)
				assert.Equal(t, "v2", d.Status.LastGoodVersion)
			}}},
		{name: "Flux: failing tests are remediated like a failed upgrade",
			status: st(addon.PhaseChecking, addon.ActionTest, func(s *addon.Status) { s.InstalledVersion = "v2" }, claimed(addon.ActionTest, "v2", "v2")),
			spec:   gen(1, "v2"), policy: addon.Policy{Test: addon.TestPolicy{Enable: true}}, obs: outcome(errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, reason: "UpgradeFailed", check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionFalse, cond(t, d, addon.TypeTestSuccess).Status)
			}}},
		{name: "Flux: ignored test failures go Running",
			status: st(addon.PhaseChecking, addon.ActionTest, func(s *addon.Status) { s.InstalledVersion = "v2" }, claimed(addon.ActionTest, "v2", "v2")),
			spec:   gen(1, "v2"), policy: addon.Policy{Test: addon.TestPolicy{Enable: true, IgnoreFailures: true}}, obs: outcome(errBoom),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth}},
		{name: "Flux: drift with DriftCorrect re-applies the installed version",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), policy: addon.Policy{Drift: addon.DriftCorrect},
			obs: func(addon.Status) addon.Observation {
				return addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy, Drifted: true, DriftDetail: "Deployment mesh replicas"}
			},
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, reason: "DriftDetected", check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, addon.TypeDrifted).Status)
			}}},
		{name: "Flux: drift with DriftWarn reports it and changes nothing",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), policy: addon.Policy{Drift: addon.DriftWarn},
			obs: func(addon.Status) addon.Observation {
				return addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy, Drifted: true, DriftDetail: "replicas"}
			},
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionTrue, cond(t, d, addon.TypeDrifted).Status)
				require.Len(t, d.Events, 1)
				assert.Equal(t, converge.Event{Type: converge.EventTypeWarning, Reason: "DriftDetected", Message: "drift from v1: replicas"}, d.Events[0])
			}}},
		{name: "Flux: no drift reads Drifted False",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), policy: addon.Policy{Drift: addon.DriftWarn}, obs: read(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, metav1.ConditionFalse, cond(t, d, addon.TypeDrifted).Status)
			}}},
		{name: "Flux: a reset clears the counters and leaves Failed",
			status: st(addon.PhaseFailed, addon.ActionNone, installing, func(s *addon.Status) {
				s.InstallFailures, s.Failures, s.FailedVersion, s.LastFailedAction = 6, 1, "v1", addon.ActionInstall
			}),
			spec: func(s *addon.Spec) { s.ResetToken = "r1" },
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "ResetRequested",
				check: func(t *testing.T, d addon.Decision) {
					assert.Zero(t, d.Status.InstallFailures)
					assert.Empty(t, d.Status.FailedVersion)
					assert.Equal(t, "r1", d.Status.LastResetToken)
				}}},
		{name: "Flux: a token already handled is not a request",
			status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.LastResetToken, s.LastForceToken = "r1", "f1" }),
			spec:   func(s *addon.Spec) { s.ResetToken, s.ForceToken = "r1", "f1" },
			want:   want{phase: addon.PhaseFailed, pending: addon.ActionNone}},
	})
}

func TestHistoryIsBounded(t *testing.T) {
	s := st(addon.PhaseUpgrading, addon.ActionUpgrade)
	long := strings.Repeat("v", 300)
	for i := 0; i < 3*maxHistoryLimit; i++ {
		s.InFlight = &addon.Claim{Action: addon.ActionUpgrade, Owner: "m1", From: "v1", To: long, Started: metav1.NewTime(tNow), Expires: metav1.NewTime(tNow.Add(time.Hour))}
		s.PendingAction, s.Phase, s.UpgradeFailures, s.Deadline = addon.ActionUpgrade, addon.PhaseUpgrading, 0, at(tNow.Add(time.Hour))
		d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: long}, Status: s, Now: tNow, Owner: "m1",
			Policy: addon.Policy{HistoryLimit: maxHistoryLimit}, Observation: ran(s, nil)})
		require.NoError(t, err)
		s = d.Status
	}
	require.Len(t, s.History, maxHistoryLimit)
	out, err := json.Marshal(s.History)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(out), 2048, "a full history stays within 2 KiB")
}

func TestDecideRejectsBadInput(t *testing.T) {
	good := addon.Input{Spec: meshSpec, Now: tNow}
	for _, tc := range []struct {
		name string
		mod  func(*addon.Input)
		want string
	}{
		{"a zero Now", func(in *addon.Input) { in.Now = time.Time{} }, "addon: invalid input: Now is zero"},
		{"jitter out of range", func(in *addon.Input) { in.Jitter = 1 }, "Jitter 1 is outside [0, 1)"},
		{"empty name", func(in *addon.Input) { in.Spec.Name = "" }, "empty name"},
		{"unknown phase", func(in *addon.Input) { in.Status.Phase = "Limbo" }, "unknown phase"},
		{"an outcome without its claim", func(in *addon.Input) {
			in.Status = st(addon.PhaseUpgrading, addon.ActionUpgrade)
			in.Observation = addon.Observation{Action: addon.ActionUpgrade}
		}, "without the claim"},
		{"a bad policy", func(in *addon.Input) { in.Policy.Backoff.JitterPercent = ptr.To[int32](101) }, "jitterPercent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good
			tc.mod(&in)
			_, err := addon.Decide(in)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestDecideFuzzFindings holds what FuzzDecide found, one row each.
func TestDecideFuzzFindings(t *testing.T) {
	runDecide(t, []decideRow{
		{name: "a status without a phase is a new add-on, whatever else it holds",
			status: addon.Status{InstalledVersion: "v1", PendingAction: addon.ActionRollback, Failures: 8},
			want:   want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "Created"}},
		{name: "a foreign install pending over an installed version runs as an upgrade",
			status: st(addon.PhaseInitializing, addon.ActionInstall),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade,
				check: func(t *testing.T, d addon.Decision) { claimOf(t, d, "v1", "v1") }}},
	})
	for _, tc := range []struct {
		name string
		s    addon.Status
		want string
	}{
		{"a claim that is not of the pending action", st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionTest, "v1", "v1"), func(s *addon.Status) {
			s.PendingAction = addon.ActionUpgrade
		}), "inFlight"},
		{"tests pending outside Checking", st(addon.PhaseUpgrading, addon.ActionTest), "runs tests"},
		{"a pending action the phase has no outcome rows for", st(addon.PhaseInitializing, addon.ActionRollback), "no rows in Initializing for the outcome of Rollback"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := addon.Decide(addon.Input{Spec: meshSpec, Status: tc.s, Now: tNow})
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestHugeDriverErrorsAreBounded: an error of any size leaves the status,
// the conditions and the events within their bounds.
func TestHugeDriverErrorsAreBounded(t *testing.T) {
	s := st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"))
	huge := fmt.Errorf("helm: %s", strings.Repeat("résumé failed; ", 20000))
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v2"}, Status: s, Now: tNow, Owner: "m1", Observation: ran(s, huge)})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(d.Status.Message), 1024)
	for _, e := range d.Events {
		assert.LessOrEqual(t, len(e.Message), 1024, e.Reason)
	}
	for _, c := range d.Status.Conditions {
		assert.LessOrEqual(t, len(c.Message), conditions.MaxMessageLength, c.Type)
		require.NoError(t, conditions.Validate(c), c.Type)
	}
}
