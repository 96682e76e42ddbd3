package addon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

func TestPolicyExhausted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      *int32
		failures int32
		want     bool
	}{
		{"nil allows DefaultMaxRetries (5) retries", nil, 5, false},
		{"nil: the sixth failure exhausts", nil, 6, true},
		{"0 means no retries: the first failure exhausts", ptr[int32](0), 1, true},
		{"-1 is unlimited", ptr[int32](-1), 1 << 30, false},
		{"one retry", ptr[int32](1), 1, false},
		{"one retry: the second failure exhausts", ptr[int32](1), 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := addon.Policy{MaxRetries: tc.max}
			assert.Equal(t, tc.want, p.Exhausted(tc.failures))
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	zero := addon.Policy{}
	require.NoError(t, zero.Validate(), "the zero policy is the conservative default")
	ok := addon.Policy{MaxRetries: ptr[int32](-1), UpgradeRemediation: addon.RemediationUninstall, InstallRemediation: addon.RemediationNone,
		Drift: addon.DriftCorrect, HistoryLimit: addon.MaxHistoryLimit}
	require.NoError(t, ok.Validate())
	bad := addon.Policy{MaxRetries: ptr[int32](-5), CheckTimeout: dur(-1), UpgradeRemediation: "Pray",
		Backoff: addon.Backoff{JitterPercent: 200, FactorPercent: 50}, Drift: "Shrug", HistoryLimit: 11}
	err := bad.Validate()
	var ie *addon.InvalidError
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Equal(t, []string{
		"maxRetries -5 is below -1", "checkTimeout -1ns is negative", "backoff.factorPercent 50 is below 100",
		"backoff.jitterPercent 200 is outside 0..100", "historyLimit 11 is outside 0..10",
		`upgradeRemediation "Pray" is not Default, None, Uninstall or Rollback`, `drift "Shrug" is not Ignore (empty), Warn or Correct`,
	}, ie.Problems)
}

func TestPolicyTimeout(t *testing.T) {
	custom := addon.Policy{InstallTimeout: dur(time.Minute), CheckTimeout: dur(2 * time.Minute), UpgradeTimeout: dur(3 * time.Minute),
		RemediationTimeout: dur(4 * time.Minute), DeleteTimeout: dur(5 * time.Minute)}
	for _, tc := range []struct {
		phase  addon.Phase
		policy addon.Policy
		want   time.Duration // 0: no deadline
	}{
		{addon.PhaseInitializing, addon.Policy{}, addon.DefaultInstallTimeout},
		{addon.PhaseReinitializing, addon.Policy{}, addon.DefaultInstallTimeout},
		{addon.PhaseChecking, addon.Policy{}, addon.DefaultCheckTimeout},
		{addon.PhaseUpgrading, addon.Policy{}, addon.DefaultUpgradeTimeout},
		{addon.PhaseRemediating, addon.Policy{}, addon.DefaultRemediationTimeout},
		{addon.PhaseDeleting, addon.Policy{}, addon.DefaultDeleteTimeout},
		{addon.PhaseInitializing, custom, time.Minute},
		{addon.PhaseChecking, custom, 2 * time.Minute},
		{addon.PhaseUpgrading, custom, 3 * time.Minute},
		{addon.PhaseRemediating, custom, 4 * time.Minute},
		{addon.PhaseDeleting, custom, 5 * time.Minute},
		{addon.PhaseRunning, custom, 0},
		{addon.PhaseFailed, custom, 0},
		{addon.PhaseDeleted, custom, 0},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			assert.Equal(t, tc.want, tc.policy.Timeout(tc.phase))
		})
	}
}

func TestNewMachineRejectsBadConfig(t *testing.T) {
	var nilDriver *fake.AddonDriver
	var nilStore *fake.AddonStore
	for _, tc := range []struct {
		name string
		cfg  addon.Config
		want string
	}{
		{"nothing", addon.Config{}, "nil driver"},
		{"typed-nil driver", addon.Config{Driver: nilDriver, Store: &fake.AddonStore{}}, "nil driver"},
		{"typed-nil store", addon.Config{Driver: &fake.AddonDriver{}, Store: nilStore}, "nil store"},
		{"bad policy", addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Policy: addon.Policy{HistoryLimit: -1}}, "historyLimit"},
		{"drift without a DriftDetector", addon.Config{Driver: healthOnly{}, Store: &fake.AddonStore{}, Policy: addon.Policy{Drift: addon.DriftWarn}}, "DriftDetector"},
		{"tests without a Tester", addon.Config{Driver: healthOnly{}, Store: &fake.AddonStore{}, Policy: addon.Policy{Test: addon.TestPolicy{Enable: true}}}, "Tester"},
		{"typed-nil clock", addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Clock: (*clocktesting.FakeClock)(nil)}, "nil clock"},
		{"empty table", addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Table: &addon.Table{}}, "empty table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := addon.NewMachine(tc.cfg)
			require.ErrorIs(t, err, addon.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "addon: ")
		})
	}
}
