package addon_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
)

var (
	tNow    = t0.Add(time.Minute)
	errBoom = errors.New("boom")
)

// st builds a status in phase p with pending action a, entered at t0, with
// v1 installed and good, observing generation 1.
func st(p addon.Phase, a addon.Action, mods ...func(*addon.Status)) addon.Status {
	s := addon.Status{Phase: p, PendingAction: a, LastTransitionTime: metav1.NewTime(t0),
		InstalledVersion: "v1", LastGoodVersion: "v1", ObservedGeneration: 1}
	for _, m := range mods {
		m(&s)
	}
	return s
}

func at(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func ran(a addon.Action, err error) addon.Observation { return addon.Observation{Action: a, Err: err} }

func health(h addon.Health, err error) addon.Observation {
	return addon.Observation{Action: addon.ActionCheckHealth, Health: h, Err: err}
}

type want struct {
	phase   addon.Phase
	action  addon.Action // the decision's action (looks only)
	pending addon.Action
	requeue bool
	after   time.Duration
	reason  string
	deleted bool
	check   func(t *testing.T, d addon.Decision)
}

type decideRow struct {
	name   string
	spec   func(*addon.Spec)
	status addon.Status
	obs    addon.Observation
	policy addon.Policy
	jitter float64
	now    time.Time
	want   want
}

func decideRows() []decideRow {
	v2 := func(s *addon.Spec) { s.Version, s.Generation = "v2", 2 }
	rows := []decideRow{
		// A new add-on.
		{name: "new add-on installs at once", status: addon.Status{},
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "Created",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, int64(1), d.Status.ObservedGeneration)
					assert.Equal(t, at(tNow), d.Status.LastAttemptTime)
				}}},
		{name: "install succeeded: Checking verifies it at once",
			status: st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }),
			obs:    ran(addon.ActionInstall, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, requeue: true, reason: "InstallSucceeded",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, addon.ActionInstall, d.Status.Verifying)
					assert.Equal(t, "v1", d.Status.InstalledVersion)
					assert.Empty(t, d.Status.LastGoodVersion, "not good before healthy")
				}}},
		{name: "install failed: count 1, uninstall first (seed bug 8: no count before a retry)",
			status: st(addon.PhaseInitializing, addon.ActionInstall), obs: ran(addon.ActionInstall, errBoom),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionUninstall, requeue: true, reason: "InstallFailed",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, 1, d.Status.InstallFailures)
					require.Len(t, d.Events, 1)
					assert.Equal(t, corev1.EventTypeWarning, d.Events[0].Type)
					assert.Contains(t, d.Events[0].Message, "boom")
				}}},
		{name: "install failed, remediation none: retry after the base backoff",
			status: st(addon.PhaseInitializing, addon.ActionInstall), obs: ran(addon.ActionInstall, errBoom),
			policy: addon.Policy{InstallRemediation: addon.RemediationNone},
			want:   want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 10 * time.Second, reason: "InstallFailed"}},
		{name: "jitter is injected: 0.5 of 10% adds 5%",
			status: st(addon.PhaseInitializing, addon.ActionInstall), obs: ran(addon.ActionInstall, errBoom),
			policy: addon.Policy{InstallRemediation: addon.RemediationNone}, jitter: 0.5,
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 10500 * time.Millisecond}},
		{name: "backoff doubles per failure",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 3 }),
			obs:    ran(addon.ActionInstall, errBoom), policy: addon.Policy{InstallRemediation: addon.RemediationNone, MaxRetries: -1},
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 80 * time.Second}},
		{name: "backoff is capped",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 40 }),
			obs:    ran(addon.ActionInstall, errBoom), policy: addon.Policy{InstallRemediation: addon.RemediationNone, MaxRetries: -1},
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 5 * time.Minute}},
		{name: "remediation uninstall done: install after the backoff",
			status: st(addon.PhaseReinitializing, addon.ActionUninstall, func(s *addon.Status) { s.InstallFailures = 2 }),
			obs:    ran(addon.ActionUninstall, nil),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 20 * time.Second, reason: "UninstallSucceeded",
				check: func(t *testing.T, d addon.Decision) { assert.Empty(t, d.Status.InstalledVersion) }}},
		{name: "remediation uninstall failed: install after the backoff anyway",
			status: st(addon.PhaseReinitializing, addon.ActionUninstall, func(s *addon.Status) { s.InstallFailures = 1 }),
			obs:    ran(addon.ActionUninstall, errBoom),
			want:   want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 10 * time.Second, reason: "UninstallFailed"}},
		{name: "retry not yet due: nothing runs (seed bug 2: no second install)",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures, s.NextAttemptTime = 1, at(tNow.Add(30*time.Second)) }),
			want:   want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 30 * time.Second}},
		{name: "retry due: install runs",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures, s.NextAttemptTime = 1, at(tNow) }),
			want:   want{phase: addon.PhaseReinitializing, action: addon.ActionInstall, pending: addon.ActionInstall}},
		{name: "fifth failure still retries (seed bug 8: compared with >, not ==)",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 4 }),
			obs:    ran(addon.ActionInstall, errBoom),
			want:   want{phase: addon.PhaseReinitializing, pending: addon.ActionUninstall, reason: "InstallFailed", requeue: true}},
		{name: "sixth failure exhausts MaxRetries 5: Failed, uninstalled",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 5 }),
			obs:    ran(addon.ActionInstall, errBoom),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionUninstall, requeue: true, reason: "RetriesExhausted",
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeStalled))
					assert.True(t, conditions.IsFalse(d.Status.Conditions, conditions.TypeReady))
				}}},
		{name: "MaxRetries -1 never exhausts",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 1000 }),
			obs:    ran(addon.ActionInstall, errBoom), policy: addon.Policy{MaxRetries: -1},
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionUninstall, requeue: true}},
		{name: "MaxRetries 1: the second failure exhausts",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 1 }),
			obs:    ran(addon.ActionInstall, errBoom), policy: addon.Policy{MaxRetries: 1, InstallRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "RetriesExhausted"}},

		// Checking.
		{name: "healthy after an upgrade: Running, v2 becomes the last good version, counters reset",
			spec: v2, status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) {
				s.InstalledVersion, s.Verifying, s.ObservedGeneration, s.UpgradeFailures, s.InstallFailures = "v2", addon.ActionUpgrade, 2, 2, 1
			}),
			obs: health(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: 5 * time.Minute, reason: "Healthy",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v2", d.Status.LastGoodVersion)
					assert.Zero(t, d.Status.UpgradeFailures)
					assert.Zero(t, d.Status.InstallFailures)
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeReady))
					assert.True(t, conditions.IsFalse(d.Status.Conditions, conditions.TypeDegraded))
				}}},
		{name: "unhealthy before the deadline: poll again in 5 s",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying = addon.ActionInstall }),
			obs:    health(addon.HealthUnhealthy, nil),
			want:   want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: 5 * time.Second}},
		{name: "the last poll lands on the deadline (seed bug 4)",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying = addon.ActionInstall }),
			obs:    health(addon.HealthUnhealthy, nil), now: t0.Add(5*time.Minute - 2*time.Second),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: 2 * time.Second}},
		{name: "unhealthy at the deadline after install: the install failed (seed bug 4)",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying = addon.ActionInstall }),
			obs:    health(addon.HealthUnhealthy, nil), now: t0.Add(5 * time.Minute),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionUninstall, requeue: true, reason: "InstallFailed",
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, 1, d.Status.InstallFailures) }}},
		{name: "health unknown at the deadline after upgrade: roll back",
			spec: v2, status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) {
				s.InstalledVersion, s.Verifying, s.ObservedGeneration = "v2", addon.ActionUpgrade, 2
			}),
			obs: health(addon.HealthUnknown, errBoom), now: t0.Add(6 * time.Minute),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, requeue: true, reason: "UpgradeFailed",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v2", d.Status.FailedVersion)
					assert.Equal(t, 1, d.Status.UpgradeFailures)
				}}},
		{name: "health read error before the deadline: keep checking (seed bug 5)",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying = addon.ActionInstall }),
			obs:    health("", errBoom),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: 5 * time.Second,
				check: func(t *testing.T, d addon.Decision) {
					c, ok := conditions.Get(d.Status.Conditions, conditions.TypeDegraded)
					require.True(t, ok)
					assert.Equal(t, metav1.ConditionUnknown, c.Status)
					assert.Contains(t, c.Message, "boom")
				}}},
		{name: "rolled-back version not healthy by the deadline: Failed",
			spec: v2, status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) {
				s.Verifying, s.FailedVersion, s.ObservedGeneration = addon.ActionRollback, "v2", 2
			}),
			obs: health(addon.HealthUnhealthy, nil), now: t0.Add(5 * time.Minute),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "RollbackFailed"}},
		{name: "broken add-on did not recover by the deadline: reinstall",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth),
			obs:    health(addon.HealthUnhealthy, nil), now: t0.Add(5 * time.Minute),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionUninstall, requeue: true, reason: "DeadlinePassed"}},
		{name: "a look past the deadline checks once more rather than failing blind",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, func(s *addon.Status) { s.Verifying, s.NextAttemptTime = addon.ActionInstall, at(t0.Add(5*time.Minute)) }),
			now:    t0.Add(time.Hour),
			want:   want{phase: addon.PhaseChecking, action: addon.ActionCheckHealth, pending: addon.ActionCheckHealth}},

		// Running.
		{name: "running and healthy: watch again in 5 minutes",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), obs: health(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: 5 * time.Minute}},
		{name: "running, health read error: keep watching (seed bug 5)",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), obs: health("", errBoom),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: 5 * time.Minute}},
		{name: "running, unhealthy: Checking polls every 5 s",
			status: st(addon.PhaseRunning, addon.ActionCheckHealth), obs: health(addon.HealthUnhealthy, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, after: 5 * time.Second, reason: "Unhealthy",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, addon.ActionNone, d.Status.Verifying)
					assert.Equal(t, metav1.NewTime(tNow), d.Status.LastTransitionTime, "the check deadline counts from now")
				}}},
		{name: "running, version changed: upgrade at once",
			spec: v2, status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(tNow.Add(time.Minute)) }),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "VersionChanged",
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, int64(2), d.Status.ObservedGeneration) }}},
		{name: "running, spec changed with the same version: re-apply",
			spec: func(s *addon.Spec) { s.Generation = 2 }, status: st(addon.PhaseRunning, addon.ActionCheckHealth),
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "SpecChanged"}},
		{name: "running after a rollback: the failed version is not retried",
			spec: v2, status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.FailedVersion, s.ObservedGeneration, s.NextAttemptTime = "v2", 2, at(tNow.Add(time.Minute))
			}),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, after: time.Minute,
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeDegraded))
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeReady))
				}}},
		{name: "running after a rollback, retry requested: the failed version is forgotten",
			spec: func(s *addon.Spec) { s.Version, s.Generation, s.RetryToken = "v2", 2, "try-again" },
			status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) {
				s.FailedVersion, s.ObservedGeneration, s.NextAttemptTime = "v2", 2, at(tNow.Add(time.Minute))
			}),
			want: want{phase: addon.PhaseRunning, action: addon.ActionCheckHealth, pending: addon.ActionCheckHealth, reason: "RetryRequested",
				check: func(t *testing.T, d addon.Decision) {
					assert.Empty(t, d.Status.FailedVersion)
					assert.Equal(t, "try-again", d.Status.LastRetryToken)
				}}},

		// Upgrading.
		{name: "upgrade call returned: not done until healthy (seed bug 7)",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			obs: ran(addon.ActionUpgrade, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, requeue: true, reason: "UpgradeSucceeded",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v2", d.Status.InstalledVersion)
					assert.Equal(t, "v1", d.Status.LastGoodVersion, "last good version kept for a rollback")
					assert.Equal(t, addon.ActionUpgrade, d.Status.Verifying)
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeReconciling))
				}}},
		{name: "upgrade failed: roll back to the last good version",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			obs:  ran(addon.ActionUpgrade, errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, requeue: true, reason: "UpgradeFailed"}},
		{name: "upgrade failed, remediation none: retry the upgrade after the backoff",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			obs: ran(addon.ActionUpgrade, errBoom), policy: addon.Policy{UpgradeRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionUpgrade, after: 10 * time.Second}},
		{name: "upgrade failed, remediation uninstall",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			obs: ran(addon.ActionUpgrade, errBoom), policy: addon.Policy{UpgradeRemediation: addon.RemediationUninstall},
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionUninstall, requeue: true}},
		{name: "upgrade and install failures are counted apart",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration, s.InstallFailures = 2, 3 }),
			obs: ran(addon.ActionUpgrade, errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, requeue: true,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, 3, d.Status.InstallFailures)
					assert.Equal(t, 1, d.Status.UpgradeFailures)
				}}},
		{name: "upgrade retries exhausted with remediation none: Failed, nothing more runs",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration, s.UpgradeFailures = 2, 5 }),
			obs: ran(addon.ActionUpgrade, errBoom), policy: addon.Policy{UpgradeRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "RetriesExhausted"}},
		{name: "retried upgrade succeeded from Remediating: Checking verifies it",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration, s.UpgradeFailures = 2, 1 }),
			obs: ran(addon.ActionUpgrade, nil), policy: addon.Policy{UpgradeRemediation: addon.RemediationNone},
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, requeue: true, reason: "UpgradeSucceeded"}},

		// Remediating.
		{name: "rollback done: Checking verifies the last good version",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionRollback, func(s *addon.Status) {
				s.InstalledVersion, s.FailedVersion, s.ObservedGeneration = "v2", "v2", 2
			}),
			obs: ran(addon.ActionRollback, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, requeue: true, reason: "RollbackSucceeded",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v1", d.Status.InstalledVersion)
					assert.Equal(t, addon.ActionRollback, d.Status.Verifying)
				}}},
		{name: "rollback failed: Failed",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionRollback, func(s *addon.Status) { s.FailedVersion, s.ObservedGeneration = "v2", 2 }),
			obs:  ran(addon.ActionRollback, errBoom),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "RollbackFailed"}},
		{name: "remediation uninstall done: install at once",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionUninstall, func(s *addon.Status) { s.FailedVersion, s.ObservedGeneration, s.UpgradeFailures = "v2", 2, 1 }),
			obs:  ran(addon.ActionUninstall, nil),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, requeue: true, reason: "UninstallSucceeded"}},
		{name: "no last good version: remediation uninstalls instead of rolling back",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.LastGoodVersion, s.ObservedGeneration = "", 2 }),
			obs:  ran(addon.ActionUpgrade, errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionUninstall, requeue: true}},

		// Failed.
		{name: "Failed: nothing runs, no requeue",
			status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.FailedVersion = "v1" }),
			want:   want{phase: addon.PhaseFailed, pending: addon.ActionNone}},
		{name: "Failed left by a spec change (seed bug 6)",
			spec: func(s *addon.Spec) { s.Generation = 2 }, status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.FailedVersion, s.InstallFailures = "v1", 6 }),
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "SpecChanged",
				check: func(t *testing.T, d addon.Decision) {
					assert.Zero(t, d.Status.InstallFailures, "counters reset on a spec change")
					assert.Empty(t, d.Status.FailedVersion)
				}}},
		{name: "Failed left by a version change (seed bug 6)",
			spec: v2, status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.FailedVersion, s.UpgradeFailures = "v1", 6 }),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade, reason: "VersionChanged"}},
		{name: "Failed left by a retry token",
			spec: func(s *addon.Spec) { s.RetryToken = "2026-01-01T12:00:00Z" }, status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.InstallFailures = 6 }),
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "RetryRequested",
				check: func(t *testing.T, d addon.Decision) { assert.Zero(t, d.Status.InstallFailures) }}},
		{name: "a handled retry token does not retry again",
			spec: func(s *addon.Spec) { s.RetryToken = "t1" }, status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.LastRetryToken = "t1" }),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone}},
		{name: "a persisted reason the API would refuse and a huge message do not break conditions",
			status: st(addon.PhaseFailed, addon.ActionNone, func(s *addon.Status) { s.Reason, s.Message = "install failed!", strings.Repeat("x", 40000) }),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone,
				check: func(t *testing.T, d addon.Decision) {
					c, ok := conditions.Get(d.Status.Conditions, conditions.TypeStalled)
					require.True(t, ok)
					assert.Equal(t, "Failed", c.Reason)
					assert.Less(t, len(c.Message), 32768)
				}}},
		{name: "Failed: the remediation's outcome keeps it Failed",
			status: st(addon.PhaseFailed, addon.ActionUninstall), obs: ran(addon.ActionUninstall, nil),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "UninstallSucceeded"}},

		// Deletion.
		{name: "uninstall failed while deleting: retry after the backoff, finalizer kept",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionUninstall),
			obs:  ran(addon.ActionUninstall, errBoom),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionUninstall, after: 10 * time.Second, reason: "UninstallFailed"}},
		{name: "uninstall failing for long while deleting: Stalled, still retried",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionUninstall, func(s *addon.Status) { s.UninstallFailures = 2 }),
			obs: ran(addon.ActionUninstall, errBoom), policy: addon.Policy{MaxRetries: 2},
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionUninstall, after: 40 * time.Second,
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeStalled))
				}}},
		{name: "uninstalled: Deleted, the host drops its finalizer",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionUninstall),
			obs: ran(addon.ActionUninstall, nil),
			want: want{phase: addon.PhaseDeleted, pending: addon.ActionNone, deleted: true, reason: "UninstallSucceeded",
				check: func(t *testing.T, d addon.Decision) { assert.Empty(t, d.Status.InstalledVersion) }}},
		{name: "Deleted: nothing runs",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleted, addon.ActionNone),
			want: want{phase: addon.PhaseDeleted, deleted: true}},

		{name: "a Deleting status with nothing pending waits for a retry request, Stalled",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionNone),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionNone,
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeStalled))
				}}},
		{name: "a foreign Deleting status with another action pending uninstalls",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionInstall),
			want: want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall}},
		{name: "a Running status with nothing pending resumes watching (seed bug 5)",
			status: st(addon.PhaseRunning, addon.ActionNone),
			want:   want{phase: addon.PhaseRunning, action: addon.ActionCheckHealth, pending: addon.ActionCheckHealth}},

		// Deadlines of the other waiting phases.
		{name: "Initializing: the install's outcome was lost until the deadline: remediate",
			status: st(addon.PhaseInitializing, addon.ActionInstall, func(s *addon.Status) {
				s.InstalledVersion, s.LastGoodVersion, s.LastAttemptTime = "", "", at(t0)
			}),
			now: t0.Add(addon.DefaultInstallTimeout),
			want: want{phase: addon.PhaseReinitializing, action: addon.ActionUninstall, pending: addon.ActionUninstall, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, addon.ActionInstall, d.Status.LastFailedAction)
					assert.Zero(t, d.Status.InstallFailures, "no attempt failed: nothing counted")
					require.Len(t, d.Events, 1)
					assert.Equal(t, corev1.EventTypeWarning, d.Events[0].Type)
					assert.Contains(t, d.Events[0].Message, "install of v1: not done within 10m0s in Initializing")
				}}},
		{name: "Initializing: a minute before the deadline the install runs",
			status: st(addon.PhaseInitializing, addon.ActionInstall), now: t0.Add(addon.DefaultInstallTimeout - time.Minute),
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall}},
		{name: "Initializing: an install failing past the deadline is counted and fires DeadlinePassed",
			status: st(addon.PhaseInitializing, addon.ActionInstall), obs: ran(addon.ActionInstall, errBoom),
			now: t0.Add(addon.DefaultInstallTimeout + time.Second),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionUninstall, requeue: true, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, 1, d.Status.InstallFailures) }}},
		{name: "Reinitializing: a retry is never scheduled past the deadline",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 1 }),
			obs:    ran(addon.ActionInstall, errBoom), policy: addon.Policy{InstallRemediation: addon.RemediationNone},
			now:  t0.Add(addon.DefaultInstallTimeout - 5*time.Second),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, after: 5 * time.Second, reason: "InstallFailed"}},
		{name: "Reinitializing: the retry due at the deadline is not run: Failed, uninstalled",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) {
				s.InstallFailures, s.LastFailedAction, s.NextAttemptTime = 2, addon.ActionInstall, at(t0.Add(addon.DefaultInstallTimeout))
			}),
			now: t0.Add(addon.DefaultInstallTimeout),
			want: want{phase: addon.PhaseFailed, action: addon.ActionUninstall, pending: addon.ActionUninstall, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeStalled))
				}}},
		{name: "Reinitializing: unlimited retries still end at the deadline",
			status: st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) { s.InstallFailures = 100 }),
			obs:    ran(addon.ActionInstall, errBoom), policy: addon.Policy{MaxRetries: -1, InstallTimeout: time.Hour},
			now:  t0.Add(time.Hour),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionUninstall, requeue: true, reason: "DeadlinePassed"}},
		{name: "Upgrading: the process died mid-upgrade until the deadline: the upgrade failed, roll back",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration, s.LastAttemptTime = 2, at(t0) }),
			now: t0.Add(addon.DefaultUpgradeTimeout),
			want: want{phase: addon.PhaseRemediating, action: addon.ActionRollback, pending: addon.ActionRollback, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, "v2", d.Status.FailedVersion)
					assert.Equal(t, addon.ActionUpgrade, d.Status.LastFailedAction)
					assert.Equal(t, metav1.NewTime(t0.Add(addon.DefaultUpgradeTimeout)), d.Status.LastTransitionTime)
				}}},
		{name: "Upgrading: the policy's UpgradeTimeout is the deadline",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			policy: addon.Policy{UpgradeTimeout: 30 * time.Second}, now: t0.Add(30 * time.Second),
			want: want{phase: addon.PhaseRemediating, action: addon.ActionRollback, pending: addon.ActionRollback, reason: "DeadlinePassed"}},
		{name: "Upgrading: an upgrade failing past the deadline fires DeadlinePassed",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }),
			obs: ran(addon.ActionUpgrade, errBoom), now: t0.Add(addon.DefaultUpgradeTimeout),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, requeue: true, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) { assert.Equal(t, 1, d.Status.UpgradeFailures) }}},
		{name: "Remediating: a rollback not done by the deadline: Failed",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionRollback, func(s *addon.Status) {
				s.ObservedGeneration, s.FailedVersion, s.LastFailedAction = 2, "v2", addon.ActionUpgrade
			}),
			now: t0.Add(addon.DefaultRemediationTimeout),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeStalled))
				}}},
		{name: "Remediating: retried upgrades end at the deadline",
			spec: v2, status: st(addon.PhaseRemediating, addon.ActionUpgrade, func(s *addon.Status) {
				s.ObservedGeneration, s.UpgradeFailures, s.FailedVersion, s.NextAttemptTime = 2, 1, "v2", at(t0.Add(11*time.Minute))
			}),
			policy: addon.Policy{UpgradeRemediation: addon.RemediationNone}, now: t0.Add(addon.DefaultRemediationTimeout),
			want: want{phase: addon.PhaseFailed, pending: addon.ActionNone, reason: "DeadlinePassed"}},
		{name: "Deleting: the uninstall retry is due at the deadline at the latest",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionUninstall, func(s *addon.Status) { s.UninstallFailures = 2 }),
			obs: ran(addon.ActionUninstall, errBoom), now: t0.Add(addon.DefaultDeleteTimeout - 5*time.Second),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionUninstall, after: 5 * time.Second, reason: "UninstallFailed"}},
		{name: "Deleting: at the deadline uninstalls stop, Stalled, the finalizer stays",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionUninstall, func(s *addon.Status) {
				s.UninstallFailures, s.NextAttemptTime = 7, at(t0.Add(addon.DefaultDeleteTimeout))
			}),
			now: t0.Add(addon.DefaultDeleteTimeout),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionNone, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) {
					c, ok := conditions.Get(d.Status.Conditions, conditions.TypeStalled)
					require.True(t, ok)
					assert.Equal(t, metav1.ConditionTrue, c.Status)
					assert.Equal(t, "DeadlinePassed", c.Reason)
					assert.Contains(t, c.Message, "uninstall: not done within 10m0s in Deleting")
				}}},
		{name: "Deleting: an uninstall failing past the deadline stops too",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionUninstall),
			obs: ran(addon.ActionUninstall, errBoom), now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionNone, reason: "DeadlinePassed"}},
		{name: "Deleting: a stalled deletion stays stalled, later looks fire nothing",
			spec: func(s *addon.Spec) { s.Deleting = true }, status: st(addon.PhaseDeleting, addon.ActionNone, func(s *addon.Status) { s.Reason = "DeadlinePassed" }),
			now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseDeleting, pending: addon.ActionNone, reason: "DeadlinePassed",
				check: func(t *testing.T, d addon.Decision) { assert.Empty(t, d.Events) }}},
		{name: "Deleting: a retry request restarts a stalled deletion with a new deadline",
			spec:   func(s *addon.Spec) { s.Deleting, s.RetryToken = true, "again" },
			status: st(addon.PhaseDeleting, addon.ActionNone, func(s *addon.Status) { s.Reason, s.UninstallFailures = "DeadlinePassed", 9 }),
			now:    t0.Add(time.Hour),
			want: want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall, reason: "RetryRequested",
				check: func(t *testing.T, d addon.Decision) {
					assert.Zero(t, d.Status.UninstallFailures)
					assert.Equal(t, metav1.NewTime(t0.Add(time.Hour)), d.Status.LastTransitionTime)
					assert.Equal(t, "again", d.Status.LastRetryToken)
				}}},
		{name: "a spec change restarts the phase and its deadline",
			spec: func(s *addon.Spec) { s.Generation = 2 }, status: st(addon.PhaseInitializing, addon.ActionInstall),
			now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall, reason: "SpecChanged",
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, metav1.NewTime(t0.Add(time.Hour)), d.Status.LastTransitionTime)
				}}},
		{name: "time suspended does not count: resumed past the deadline, the upgrade runs",
			spec: v2, status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration, s.Suspended = 2, true }),
			now: t0.Add(time.Hour),
			want: want{phase: addon.PhaseUpgrading, action: addon.ActionUpgrade, pending: addon.ActionUpgrade,
				check: func(t *testing.T, d addon.Decision) {
					assert.Equal(t, metav1.NewTime(t0.Add(time.Hour)), d.Status.LastTransitionTime)
				}}},

		// Suspend and bookkeeping.
		{name: "suspended: no action, the status says so",
			spec: func(s *addon.Spec) { s.Suspended, s.Generation = true, 2 }, status: st(addon.PhaseRunning, addon.ActionCheckHealth),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, reason: "Suspended",
				check: func(t *testing.T, d addon.Decision) {
					assert.True(t, d.Status.Suspended)
					assert.Equal(t, int64(1), d.Status.ObservedGeneration, "a suspended spec is not observed")
				}}},
		{name: "resumed: the spec change is seen",
			spec: func(s *addon.Spec) { s.Generation = 2 }, status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.Suspended = true }),
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall,
				check: func(t *testing.T, d addon.Decision) {
					assert.False(t, d.Status.Suspended)
					require.Len(t, d.Events, 2)
					assert.Equal(t, "Resumed", d.Events[0].Reason)
					assert.Equal(t, "SpecChanged", d.Events[1].Reason)
				}}},
		{name: "conditions carry the observed generation (seed bug 10)",
			spec: func(s *addon.Spec) { s.Generation = 7 }, status: addon.Status{},
			want: want{phase: addon.PhaseInitializing, action: addon.ActionInstall, pending: addon.ActionInstall,
				check: func(t *testing.T, d addon.Decision) {
					require.NotEmpty(t, d.Status.Conditions)
					for _, c := range d.Status.Conditions {
						assert.Equal(t, int64(7), c.ObservedGeneration, c.Type)
					}
					assert.True(t, conditions.IsTrue(d.Status.Conditions, conditions.TypeReconciling))
				}}},
	}
	// Deletion from every phase, even while suspended (seed bug 9: from status alone).
	for _, p := range []addon.Phase{addon.PhaseInitializing, addon.PhaseReinitializing, addon.PhaseChecking, addon.PhaseRunning,
		addon.PhaseUpgrading, addon.PhaseRemediating, addon.PhaseFailed} {
		rows = append(rows, decideRow{
			name:   fmt.Sprintf("deletion requested in %s: uninstall at once", p),
			spec:   func(s *addon.Spec) { s.Deleting, s.Suspended = true, true },
			status: st(p, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime, s.UninstallFailures = at(tNow.Add(time.Hour)), 3 }),
			want:   want{phase: addon.PhaseDeleting, action: addon.ActionUninstall, pending: addon.ActionUninstall, reason: "DeletionRequested"},
		})
	}
	return rows
}

func TestDecideTable(t *testing.T) {
	rows := decideRows()
	require.GreaterOrEqual(t, len(rows), 40)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			spec := addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}
			if row.spec != nil {
				row.spec(&spec)
			}
			now := row.now
			if now.IsZero() {
				now = tNow
			}
			d, err := addon.Decide(addon.Input{Spec: spec, Status: row.status, Observation: row.obs, Policy: row.policy, Now: now, Jitter: row.jitter})
			require.NoError(t, err)
			w := row.want
			assert.Equal(t, w.phase, d.Status.Phase, "phase")
			assert.Equal(t, w.action, d.Action, "action")
			assert.Equal(t, w.pending, d.Status.PendingAction, "pending action")
			assert.Equal(t, w.requeue, d.Requeue, "requeue")
			assert.Equal(t, w.after, d.RequeueAfter, "requeue after")
			assert.Equal(t, w.deleted, d.Deleted, "deleted")
			if w.reason != "" {
				assert.Equal(t, w.reason, d.Status.Reason, "reason")
			}
			if w.check != nil {
				w.check(t, d)
			}
		})
	}
}

func TestDecideDoesNotChangeItsInput(t *testing.T) {
	status := st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(t0) })
	_, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}, Status: status, Now: tNow,
		Observation: health(addon.HealthUnhealthy, nil)})
	require.NoError(t, err)
	assert.Equal(t, st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(t0) }), status)
}

func TestDecideRejectsBadInput(t *testing.T) {
	good := addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}, Now: tNow}
	for _, tc := range []struct {
		name string
		mod  func(*addon.Input)
		want string
	}{
		{"unknown phase", func(in *addon.Input) { in.Status.Phase = "Dancing" }, `unknown phase "Dancing"`},
		{"empty version", func(in *addon.Input) { in.Spec.Version = "" }, "empty version"},
		{"negative generation", func(in *addon.Input) { in.Spec.Generation = -1 }, "negative generation"},
		{"zero time", func(in *addon.Input) { in.Now = time.Time{} }, "zero time"},
		{"jitter of 1", func(in *addon.Input) { in.Jitter = 1 }, "jitter"},
		{"bad policy", func(in *addon.Input) { in.Policy.MaxRetries = -2 }, "maxRetries"},
		{"install remediation rollback", func(in *addon.Input) { in.Policy.InstallRemediation = addon.RemediationRollback }, "installRemediation"},
		{"outcome of an action not pending", func(in *addon.Input) {
			in.Status = st(addon.PhaseRunning, addon.ActionCheckHealth)
			in.Observation = ran(addon.ActionInstall, nil)
		}, "pending action"},
		{"empty table", func(in *addon.Input) { in.Table = &addon.Table{} }, "no rows"},
		{"negative counter", func(in *addon.Input) { in.Status.InstallFailures = -1 }, "negative failure counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := good
			tc.mod(&in)
			_, err := addon.Decide(in)
			require.ErrorIs(t, err, addon.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "addon: ")
		})
	}
}

func TestDecideMessagesNameBothVersions(t *testing.T) {
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 2, Version: "v2"}, Now: tNow,
		Status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }), Observation: ran(addon.ActionUpgrade, nil)})
	require.NoError(t, err)
	require.Len(t, d.Events, 1)
	assert.Equal(t, "Upgrading -> Checking: upgrade from v1 to v2 succeeded; next: CheckHealth", d.Events[0].Message)
	assert.Equal(t, corev1.EventTypeNormal, d.Events[0].Type)
}

// defaultRowInput builds the input that makes event r.Event happen in phase
// r.From under the default table and policy.
func defaultRowInput(r addon.Row) addon.Input {
	spec := addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}
	status := st(r.From, addon.ActionNone)
	var obs addon.Observation
	now := tNow
	v2 := func() { spec.Version, spec.Generation, status.ObservedGeneration = "v2", 2, 2 }
	checkFails := func(verifying addon.Action) {
		status.PendingAction, status.Verifying = addon.ActionCheckHealth, verifying
		obs, now = health(addon.HealthUnhealthy, nil), t0.Add(addon.DefaultCheckTimeout)
	}
	outcome := func(a addon.Action, err error) {
		status.PendingAction = a
		obs = ran(a, err)
	}
	switch r.Event {
	case addon.EventInstallSucceeded:
		outcome(addon.ActionInstall, nil)
	case addon.EventInstallFailed:
		if r.From == addon.PhaseChecking {
			checkFails(addon.ActionInstall)
		} else {
			outcome(addon.ActionInstall, errBoom)
		}
	case addon.EventHealthy:
		status.PendingAction, obs = addon.ActionCheckHealth, health(addon.HealthHealthy, nil)
	case addon.EventUnhealthy:
		status.PendingAction, obs = addon.ActionCheckHealth, health(addon.HealthUnhealthy, nil)
	case addon.EventDeadlinePassed:
		switch r.From {
		case addon.PhaseChecking:
			checkFails(addon.ActionNone)
		case addon.PhaseUpgrading:
			v2()
			status.PendingAction = addon.ActionUpgrade
		case addon.PhaseRemediating:
			v2()
			status.PendingAction, status.LastFailedAction, status.FailedVersion = addon.ActionRollback, addon.ActionUpgrade, "v2"
		case addon.PhaseDeleting:
			status.PendingAction = addon.ActionUninstall
		default:
			status.PendingAction = addon.ActionInstall
		}
		if r.From != addon.PhaseChecking {
			now = t0.Add(addon.Policy{}.Timeout(r.From))
		}
	case addon.EventVersionChanged:
		v2()
	case addon.EventUpgradeSucceeded:
		v2()
		outcome(addon.ActionUpgrade, nil)
	case addon.EventUpgradeFailed:
		v2()
		if r.From == addon.PhaseChecking {
			status.InstalledVersion = "v2"
			checkFails(addon.ActionUpgrade)
		} else {
			outcome(addon.ActionUpgrade, errBoom)
		}
	case addon.EventRollbackSucceeded:
		outcome(addon.ActionRollback, nil)
	case addon.EventRollbackFailed:
		if r.From == addon.PhaseChecking {
			checkFails(addon.ActionRollback)
		} else {
			outcome(addon.ActionRollback, errBoom)
		}
	case addon.EventUninstallSucceeded:
		outcome(addon.ActionUninstall, nil)
	case addon.EventUninstallFailed:
		outcome(addon.ActionUninstall, errBoom)
	case addon.EventRetriesExhausted:
		switch r.From {
		case addon.PhaseUpgrading, addon.PhaseRemediating:
			v2()
			status.UpgradeFailures = addon.DefaultMaxRetries
			outcome(addon.ActionUpgrade, errBoom)
		case addon.PhaseChecking:
			status.InstallFailures = addon.DefaultMaxRetries
			checkFails(addon.ActionInstall)
		default:
			status.InstallFailures = addon.DefaultMaxRetries
			outcome(addon.ActionInstall, errBoom)
		}
	case addon.EventDeletionRequested:
		spec.Deleting = true
	case addon.EventSpecChanged:
		spec.Generation = 2
	case addon.EventRetryRequested:
		spec.RetryToken = "retry-1"
	}
	if r.From == addon.PhaseDeleting {
		spec.Deleting = true
	}
	return addon.Input{Spec: spec, Status: status, Observation: obs, Now: now}
}

// Every row of the default table, made to happen, lands where the row says
// with the action it says (Remediate resolved by the default policy).
func TestDecideCoversEveryDefaultRow(t *testing.T) {
	for _, r := range addon.DefaultTable().Rows() {
		t.Run(fmt.Sprintf("%s+%s", r.From, r.Event), func(t *testing.T) {
			d, err := addon.Decide(defaultRowInput(r))
			require.NoError(t, err)
			require.NotEmpty(t, d.Events)
			assert.Equal(t, string(r.Event), d.Events[0].Reason)
			assert.Equal(t, r.To, d.Status.Phase)
			want := r.Action
			if want == addon.ActionRemediate {
				switch d.Status.LastFailedAction {
				case addon.ActionInstall:
					want = addon.ActionUninstall
				case addon.ActionUpgrade:
					want = addon.ActionRollback
				}
			}
			assert.Equal(t, want, d.Status.PendingAction)
		})
	}
}
