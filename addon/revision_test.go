package addon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

// returned is the outcome of the action in flight in s, with the driver's
// revision.
func returned(revision string, err error) func(addon.Status) addon.Observation {
	return func(s addon.Status) addon.Observation {
		o := ran(s, err)
		o.Revision = revision
		return o
	}
}

// revisions sets the installed and last good revisions.
func revisions(installed, good string) func(*addon.Status) {
	return func(s *addon.Status) { s.InstalledRevision, s.LastGoodRevision = installed, good }
}

// lastAttempt checks the revision of the last history entry.
func lastAttempt(t *testing.T, d addon.Decision, outcome addon.Outcome, revision string) {
	t.Helper()
	require.NotEmpty(t, d.Status.History)
	a := d.Status.History[len(d.Status.History)-1]
	assert.Equal(t, outcome, a.Outcome, "outcome of the last attempt")
	assert.Equal(t, revision, a.Revision, "revision of the last attempt")
}

func installedRevision(installed, good string) func(*testing.T, addon.Decision) {
	return func(t *testing.T, d addon.Decision) {
		t.Helper()
		assert.Equal(t, installed, d.Status.InstalledRevision, "installed revision")
		assert.Equal(t, good, d.Status.LastGoodRevision, "last good revision")
	}
}

// TestRuleRevisionFollowsTheVersion: the driver's revision is recorded with
// every attempt, becomes the installed revision when its action succeeds
// (and only then), and the last good one when that version is seen healthy.
func TestRuleRevisionFollowsTheVersion(t *testing.T) {
	installing := func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }
	long := strings.Repeat("r", addon.MaxRevisionLength+1)
	runDecide(t, []decideRow{
		{name: "a successful install records its revision as installed and in the history",
			status: st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1")),
			obs:    returned("1", nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				installedRevision("1", "")(t, d)
				lastAttempt(t, d, addon.OutcomeSucceeded, "1")
			}}},
		{name: "a successful upgrade replaces the installed revision and keeps the last good one",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, revisions("1", "1"), claimed(addon.ActionUpgrade, "v1", "v2")),
			spec:   gen(1, "v2"), obs: returned("2", nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: installedRevision("2", "1")}},
		{name: "a failed upgrade keeps the installed revision; its own goes to the history only",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, revisions("1", "1"), claimed(addon.ActionUpgrade, "v1", "v2")),
			spec:   gen(1, "v2"), obs: returned("2", errBoom),
			want: want{phase: addon.PhaseRemediating, pending: addon.ActionRollback, check: func(t *testing.T, d addon.Decision) {
				installedRevision("1", "1")(t, d)
				lastAttempt(t, d, addon.OutcomeFailed, "2")
			}}},
		{name: "a successful rollback installs the new revision that carries the last good version",
			status: st(addon.PhaseRemediating, addon.ActionRollback, revisions("2", "1"), claimed(addon.ActionRollback, "v2", "v1"),
				func(s *addon.Status) { s.InstalledVersion, s.FailedVersion = "v2", "v2" }),
			spec: gen(1, "v2"), obs: returned("3", nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "v1", d.Status.InstalledVersion)
				installedRevision("3", "1")(t, d)
			}}},
		{name: "a version seen healthy makes its revision the last good one",
			status: st(addon.PhaseChecking, addon.ActionCheckHealth, revisions("2", "1"), func(s *addon.Status) { s.InstalledVersion = "v2" }),
			spec:   gen(1, "v2"), obs: read(addon.HealthHealthy, nil),
			want: want{phase: addon.PhaseRunning, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				assert.Equal(t, "v2", d.Status.LastGoodVersion)
				installedRevision("2", "2")(t, d)
			}}},
		{name: "an uninstall clears the installed revision",
			status: st(addon.PhaseReinitializing, addon.ActionUninstall, revisions("1", ""), claimed(addon.ActionUninstall, "v1", ""),
				func(s *addon.Status) {
					s.LastGoodVersion, s.LastFailedAction, s.InstallFailures = "", addon.ActionInstall, 1
				}),
			obs:  returned("", nil),
			want: want{phase: addon.PhaseReinitializing, pending: addon.ActionInstall, check: installedRevision("", "")}},
		{name: "a revision longer than MaxRevisionLength is not recorded",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, revisions("1", "1"), claimed(addon.ActionUpgrade, "v1", "v2")),
			spec:   gen(1, "v2"), obs: returned(long, nil),
			want: want{phase: addon.PhaseChecking, pending: addon.ActionCheckHealth, check: func(t *testing.T, d addon.Decision) {
				installedRevision("", "1")(t, d)
				lastAttempt(t, d, addon.OutcomeSucceeded, "")
			}}},
		{name: "an attempt whose claim expired has no revision",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, revisions("1", "1"), claimed(addon.ActionUpgrade, "v1", "v2")),
			spec:   gen(1, "v2"), now: t0.Add(10*time.Minute - 5*time.Minute), // the default upgrade timeout less the default longest backoff
			want: want{phase: addon.PhaseUpgrading, pending: addon.ActionUpgrade, check: func(t *testing.T, d addon.Decision) {
				installedRevision("1", "1")(t, d)
				lastAttempt(t, d, addon.OutcomeLost, "")
			}}},
	})
}

// TestRuleRollbackRequestCarriesTheRevisionOfItsTarget: a rollback hands
// the driver the revision that carried the last good version, read from the
// persisted status alone: every step below runs on a new Machine, from a
// status that went through JSON.
func TestRuleRollbackRequestCarriesTheRevisionOfItsTarget(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	step := func() {
		t.Helper()
		obj := h.obj()
		raw, err := json.Marshal(obj.Status)
		require.NoError(t, err)
		var back addon.Status
		require.NoError(t, json.Unmarshal(raw, &back))
		obj.Status = back
		h.store.Put(obj)
		h.restart()
		h.wait()
		h.reconcile()
	}
	h.driver.Push(fake.AddonInstall, fake.AddonOutcome{Revision: "7"})
	step() // install v1 at revision 7
	step() // v1 healthy: Running
	require.Equal(t, addon.PhaseRunning, h.status().Phase)
	assert.Equal(t, "7", h.status().LastGoodRevision)

	h.spec(func(s *addon.Spec) { s.Generation, s.Version = 2, "v2" })
	h.driver.Push(fake.AddonUpgrade, fake.AddonOutcome{Revision: "8", Err: errBoom})
	step() // the upgrade to v2 fails at revision 8: roll back
	require.Equal(t, addon.PhaseRemediating, h.status().Phase)
	h.driver.Push(fake.AddonUpgrade, fake.AddonOutcome{Revision: "9"})
	step() // the rollback
	calls := h.driver.Recorded()
	assert.Equal(t, fake.AddonCall{Method: fake.AddonUpgrade, Name: meshSpec.Name, From: "v1", To: "v1", Rollback: true, Revision: "7", Fence: 3},
		calls[len(calls)-1], "the rollback goes back to the revision that carried v1 when it was healthy")
	assert.Equal(t, "9", h.status().InstalledRevision)

	step() // v1 healthy again, now at revision 9
	assert.Equal(t, addon.PhaseRunning, h.status().Phase)
	assert.Equal(t, "9", h.status().LastGoodRevision)
	var got []string
	for _, a := range h.status().History {
		got = append(got, string(a.Action)+" "+a.Version+"@"+a.Revision+" "+string(a.Outcome))
	}
	assert.Equal(t, []string{"Install v1@7 Succeeded", "Upgrade v2@8 Failed", "Rollback v1@9 Succeeded"}, got)
}
