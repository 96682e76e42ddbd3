package addontest_test

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/addon/addontest"
)

// TestEveryReasonAddonListsIsWritten: addon.Reasons is the closed list of
// what Decide writes. The explorations check that no decision writes a
// reason it does not list; here every reason it lists is written: by the
// decisions of explorations to depth 4 under three policies, and, for what
// they do not reach (a drift read, which the explorer does not make, states
// more steps away, a pause and closed windows, which these explorations do
// not draw), by the decisions below.
func TestEveryReasonAddonListsIsWritten(t *testing.T) {
	written := map[string]bool{}
	for _, policy := range []addon.Policy{
		{},
		{MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall},
		{Test: addon.TestPolicy{Enable: true}, Drift: addon.DriftCorrect, RemediateLastFailure: ptr.To(false)},
	} {
		report, err := addontest.Explore(addontest.ExploreOptions{Policy: policy, Depth: 4})
		require.NoError(t, err)
		for _, r := range report.Reasons {
			written[r] = true
		}
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	running := func(mod func(*addon.Status)) addon.Status {
		s := addon.Status{Phase: addon.PhaseRunning, PendingAction: addon.ActionCheckHealth, InstalledVersion: "v1", LastGoodVersion: "v1",
			ObservedGeneration: 1, SeenGeneration: 1, Health: addon.HealthHealthy, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
		mod(&s)
		return s
	}
	v1 := addon.Spec{Name: "tke/mesh", Generation: 1, Version: "v1"}
	v2 := addon.Spec{Name: "tke/mesh", Generation: 2, Version: "v2"}
	for _, tc := range []struct {
		reason string
		in     addon.Input
	}{
		{string(addon.TriggerDriftDetected), addon.Input{Spec: v1, Status: running(func(*addon.Status) {}), Policy: addon.Policy{Drift: addon.DriftWarn},
			Observation: addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy, Drifted: true, DriftDetail: "replicas 1, not 3"}}},
		{addon.ReasonHealthUnknown, addon.Input{Spec: v1, Status: running(func(s *addon.Status) { s.Health, s.HealthUnknownSince = addon.HealthUnknown, at(-time.Hour) }),
			Observation: addon.Observation{Action: addon.ActionCheckHealth, Err: errors.New("connection refused")}}},
		{string(addon.TriggerReapplyDue), addon.Input{Spec: v1, Status: running(func(s *addon.Status) { s.ReapplyTime, s.Failures = at(-time.Second), 1 })}},
		{addon.ReasonVersionFailed, addon.Input{Spec: addon.Spec{Name: "tke/mesh", Generation: 1, Version: "v2"},
			Status: running(func(s *addon.Status) { s.FailedVersion, s.NextAttemptTime = "v2", at(time.Minute) })}},
		{addon.HoldPaused, addon.Input{Spec: v2, Status: running(func(*addon.Status) {}), Policy: addon.Policy{Paused: true}}},
		{addon.HoldWindowClosed, addon.Input{Spec: v2, Status: running(func(*addon.Status) {}), Policy: addon.Policy{Windows: []converge.Window{
			{Kind: converge.WindowDeny, Schedule: "0 12 * * *", Duration: metav1.Duration{Duration: time.Hour}}}}}},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			tc.in.Now = now
			d, err := addon.Decide(tc.in)
			require.NoError(t, err)
			reasons := map[string]bool{d.Status.Reason: true}
			for _, e := range d.Events {
				reasons[e.Reason] = true
			}
			for _, c := range d.Status.Conditions {
				reasons[c.Reason] = true
			}
			require.True(t, reasons[tc.reason], "%s not written: %v", tc.reason, slices.Sorted(maps.Keys(reasons)))
			written[tc.reason] = true
		})
	}
	assert.Equal(t, addon.Reasons(), slices.Sorted(maps.Keys(written)))
}
