package addon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

func TestPolicyExhausted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int
		failures int
		want     bool
	}{
		{"zero value allows 5 retries", 0, 5, false},
		{"zero value: the sixth failure exhausts", 0, 6, true},
		{"unlimited", -1, 1 << 30, false},
		{"one retry", 1, 1, false},
		{"one retry: the second failure exhausts", 1, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, addon.Policy{MaxRetries: tc.max}.Exhausted(tc.failures))
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	require.NoError(t, addon.Policy{}.Validate(), "the zero policy is the conservative default")
	require.NoError(t, addon.Policy{MaxRetries: -1, UpgradeRemediation: addon.RemediationUninstall, InstallRemediation: addon.RemediationNone}.Validate())
	err := addon.Policy{MaxRetries: -5, CheckTimeout: -1, UpgradeRemediation: "Pray", Backoff: addon.Backoff{Jitter: 2}}.Validate()
	var ie *addon.InvalidError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Len(t, ie.Problems, 4)
}

func TestNewMachineRejectsBadConfig(t *testing.T) {
	_, err := addon.NewMachine(addon.Config{})
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Contains(t, err.Error(), "nil driver")
}

func TestPolicyDeadline(t *testing.T) {
	entered := metav1.NewTime(t0)
	custom := addon.Policy{InstallTimeout: time.Minute, CheckTimeout: 2 * time.Minute, UpgradeTimeout: 3 * time.Minute,
		RemediationTimeout: 4 * time.Minute, DeleteTimeout: 5 * time.Minute}
	for _, tc := range []struct {
		phase   addon.Phase
		policy  addon.Policy
		want    time.Duration // 0: no deadline
		comment string
	}{
		{addon.PhaseInitializing, addon.Policy{}, addon.DefaultInstallTimeout, "zero policy: default"},
		{addon.PhaseReinitializing, addon.Policy{}, addon.DefaultInstallTimeout, ""},
		{addon.PhaseChecking, addon.Policy{}, addon.DefaultCheckTimeout, ""},
		{addon.PhaseUpgrading, addon.Policy{}, addon.DefaultUpgradeTimeout, ""},
		{addon.PhaseRemediating, addon.Policy{}, addon.DefaultRemediationTimeout, ""},
		{addon.PhaseDeleting, addon.Policy{}, addon.DefaultDeleteTimeout, ""},
		{addon.PhaseInitializing, custom, time.Minute, "set: used"},
		{addon.PhaseReinitializing, custom, time.Minute, ""},
		{addon.PhaseChecking, custom, 2 * time.Minute, ""},
		{addon.PhaseUpgrading, custom, 3 * time.Minute, ""},
		{addon.PhaseRemediating, custom, 4 * time.Minute, ""},
		{addon.PhaseDeleting, custom, 5 * time.Minute, ""},
		{addon.PhaseRunning, custom, 0, "waits for nothing"},
		{addon.PhaseFailed, custom, 0, "waits for the spec"},
		{addon.PhaseDeleted, custom, 0, "terminal"},
	} {
		t.Run(string(tc.phase)+" "+tc.comment, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.policy.Timeout(tc.phase))
			dl, ok := tc.policy.Deadline(addon.Status{Phase: tc.phase, LastTransitionTime: entered})
			assert.Equal(t, tc.want != 0, ok)
			if ok {
				assert.Equal(t, t0.Add(tc.want), dl, "counted from LastTransitionTime")
			}
		})
	}
}

func TestPolicyValidateRejectsNegativeTimeouts(t *testing.T) {
	err := addon.Policy{InstallTimeout: -1, UpgradeTimeout: -1, RemediationTimeout: -1, DeleteTimeout: -1}.Validate()
	var ie *addon.InvalidError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, []string{"installTimeout -1ns is negative", "upgradeTimeout -1ns is negative",
		"remediationTimeout -1ns is negative", "deleteTimeout -1ns is negative"}, ie.Problems)
}
