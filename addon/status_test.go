package addon_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

func fullStatus() addon.Status {
	return addon.Status{
		Phase: addon.PhaseChecking, Reason: "UpgradeSucceeded", Message: "upgrade from v1 to v2 succeeded",
		PendingAction: addon.ActionCheckHealth, NextAttemptTime: at(t0.Add(5 * time.Second)), Verifying: addon.ActionUpgrade,
		LastFailedAction: addon.ActionUpgrade, InstallFailures: 1, UpgradeFailures: 2, UninstallFailures: 3,
		LastTransitionTime: metav1.NewTime(t0), LastAttemptTime: at(t0), InstalledVersion: "v2", LastGoodVersion: "v1",
		FailedVersion: "v3", ObservedGeneration: 4, LastRetryToken: "t", Suspended: true,
		Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionUnknown, Reason: "Checking", LastTransitionTime: metav1.NewTime(t0)}},
	}
}

func TestStatusDeepCopySharesNothing(t *testing.T) {
	s := fullStatus()
	c := s.DeepCopy()
	require.Equal(t, s, *c)
	c.NextAttemptTime.Time = t0.Add(time.Hour)
	c.LastAttemptTime.Time = t0.Add(time.Hour)
	c.Conditions[0].Reason = "Changed"
	assert.Equal(t, fullStatus(), s, "the original is untouched")
	var nilStatus *addon.Status
	assert.Nil(t, nilStatus.DeepCopy())
}

func TestStatusJSONRoundTrip(t *testing.T) {
	s := fullStatus()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back addon.Status
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, s.Phase, back.Phase)
	assert.True(t, s.NextAttemptTime.Equal(back.NextAttemptTime))
	assert.True(t, s.LastTransitionTime.Equal(&back.LastTransitionTime))
	back.NextAttemptTime, back.LastAttemptTime, back.LastTransitionTime, back.Conditions = s.NextAttemptTime, s.LastAttemptTime, s.LastTransitionTime, s.Conditions
	assert.Equal(t, s, back)

	empty, err := json.Marshal(addon.Status{})
	require.NoError(t, err)
	assert.Equal(t, `{"lastTransitionTime":null}`, string(empty), "a zero status is small")
}

func TestStoredTimesAreTruncatedToSeconds(t *testing.T) {
	d, err := addon.Decide(addon.Input{Spec: addon.Spec{Name: "mesh", Version: "v1"}, Now: t0.Add(1500 * time.Millisecond)})
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Second), d.Status.LastTransitionTime.Time)
	assert.Equal(t, t0.Add(time.Second), d.Status.LastAttemptTime.Time)
	for _, c := range d.Status.Conditions {
		assert.Equal(t, t0.Add(time.Second), c.LastTransitionTime.Time, c.Type)
	}
}
