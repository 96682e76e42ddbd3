package addon_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/internal/input"
)

// installFailure decides the outcome of a failed install, the failures-th
// in a row, under p, a day before the phase's deadline.
func installFailure(t *testing.T, p addon.Policy, failures int32, jitter float64) addon.Decision {
	t.Helper()
	s := st(addon.PhaseReinitializing, addon.ActionInstall, func(s *addon.Status) {
		s.InstalledVersion, s.LastGoodVersion = "", ""
		s.InstallFailures, s.Failures = failures-1, failures-1
		s.Deadline = at(tNow.Add(24 * time.Hour))
	}, claimed(addon.ActionInstall, "", "v1"))
	d, err := addon.Decide(addon.Input{Spec: meshSpec, Status: s, Policy: p, Now: tNow, Jitter: jitter, Observation: ran(s, errBoom)})
	require.NoError(t, err)
	return d
}

// TestPolicyMaxRetries: the failure that exceeds MaxRetries exhausts the
// retries.
func TestPolicyMaxRetries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      *int32
		failures int32
		want     bool
	}{
		{"nil allows 5 retries", nil, 5, false},
		{"nil: the sixth failure exhausts", nil, 6, true},
		{"0 means no retries: the first failure exhausts", ptr.To[int32](0), 1, true},
		{"-1 is unlimited", ptr.To[int32](-1), 1 << 30, false},
		{"one retry", ptr.To[int32](1), 1, false},
		{"one retry: the second failure exhausts", ptr.To[int32](1), 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := installFailure(t, addon.Policy{MaxRetries: tc.max, InstallRemediation: addon.RemediationNone}, tc.failures, 0)
			assert.Equal(t, tc.want, d.Status.Reason == string(addon.TriggerRetriesExhausted), "reason %s", d.Status.Reason)
		})
	}
}

// TestPolicyBackoff: a zero Backoff waits 10 s after the first failure,
// doubles the wait after each further one up to 5 min, and adds up to 10 %
// of jitter; a set field replaces its default; an unset Max below a set
// Initial is Initial.
func TestPolicyBackoff(t *testing.T) {
	retried := addon.Policy{MaxRetries: ptr.To[int32](-1), InstallRemediation: addon.RemediationNone}
	with := func(b converge.Backoff) addon.Policy { p := retried; p.Backoff = b; return p }
	for _, tc := range []struct {
		name     string
		policy   addon.Policy
		failures int32
		jitter   float64
		want     time.Duration
	}{
		{"the first failure waits 10s", retried, 1, 0, 10 * time.Second},
		{"each further failure doubles the wait", retried, 3, 0, 40 * time.Second},
		{"the wait stops at 5m", retried, 6, 0, 5 * time.Minute},
		{"a huge failure count stays at 5m", retried, 1<<31 - 2, 0, 5 * time.Minute},
		{"up to 10 percent of jitter", retried, 1, 0.5, 10500 * time.Millisecond},
		{"jitter on the cap", retried, 10, 0.5, 315 * time.Second},
		{"a factor of 150", with(converge.Backoff{FactorPercent: 150}), 3, 0, 22500 * time.Millisecond},
		{"a jitter of 50 percent", with(converge.Backoff{JitterPercent: ptr.To[int32](50)}), 1, 0.5, 12500 * time.Millisecond},
		{"a custom initial and max", with(converge.Backoff{Initial: dur(time.Second), Max: dur(4 * time.Second)}), 5, 0, 4 * time.Second},
		{"an unset max below a set initial is the initial", with(converge.Backoff{Initial: dur(10 * time.Minute)}), 3, 0, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, installFailure(t, tc.policy, tc.failures, tc.jitter).RequeueAfter)
		})
	}
}

// TestRuleJitterCanBeTurnedOff: JitterPercent 0, which a CRD writes as
// jitterPercent: 0, adds no jitter whatever the jitter drawn; unset, it
// adds the default 10 %.
func TestRuleJitterCanBeTurnedOff(t *testing.T) {
	p := addon.Policy{MaxRetries: ptr.To[int32](-1), InstallRemediation: addon.RemediationNone}
	var fromCRD addon.Policy
	require.NoError(t, json.Unmarshal([]byte(`{"maxRetries": -1, "installRemediation": "None", "backoff": {"jitterPercent": 0}}`), &fromCRD))
	require.NotNil(t, fromCRD.Backoff.JitterPercent, "jitterPercent: 0 survives the JSON round trip")
	for _, jitter := range []float64{0, 0.5, 0.999} {
		assert.Equal(t, 20*time.Second, installFailure(t, fromCRD, 2, jitter).RequeueAfter, "jitter %v", jitter)
	}
	assert.Equal(t, 21*time.Second, installFailure(t, p, 2, 0.5).RequeueAfter, "unset, the jitter is 10 percent")
}

func TestPolicyValidate(t *testing.T) {
	zero := addon.Policy{}
	require.NoError(t, zero.Validate(), "the zero policy is the conservative default")
	ok := addon.Policy{MaxRetries: ptr.To[int32](-1), UpgradeRemediation: addon.RemediationUninstall, InstallRemediation: addon.RemediationNone,
		Drift: addon.DriftCorrect, HistoryLimit: maxHistoryLimit, Backoff: converge.Backoff{JitterPercent: ptr.To[int32](0)}}
	require.NoError(t, ok.Validate())
	bad := addon.Policy{MaxRetries: ptr.To[int32](-5), CheckTimeout: dur(-1), UpgradeRemediation: "Pray",
		Backoff: converge.Backoff{JitterPercent: ptr.To[int32](200), FactorPercent: 50}, Drift: "Shrug", HistoryLimit: 11}
	err := bad.Validate()
	var ie *input.Error
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.Equal(t, "addon", ie.Pkg)
	assert.Equal(t, "policy", ie.What)
	assert.Equal(t, []string{
		"maxRetries -5 is below -1", "checkTimeout -1ns is negative", "backoff.factorPercent 50 is below 100",
		"backoff.jitterPercent 200 is outside 0..100", "historyLimit 11 is outside 0..10",
		`upgradeRemediation "Pray" is not Default, None, Uninstall or Rollback`, `drift "Shrug" is not Ignore (empty), Warn or Correct`,
	}, ie.Problems)
}

// TestPolicyTimeoutsAreThePhaseDeadlines: entering a phase that waits sets
// its deadline to now plus the policy's timeout for it (the defaults of a
// zero Policy, or the custom ones); Running, Failed and Deleted have none.
func TestPolicyTimeoutsAreThePhaseDeadlines(t *testing.T) {
	custom := addon.Policy{InstallTimeout: dur(time.Minute), CheckTimeout: dur(2 * time.Minute), UpgradeTimeout: dur(3 * time.Minute),
		RemediationTimeout: dur(4 * time.Minute), DeleteTimeout: dur(5 * time.Minute)}
	installing := func(s *addon.Status) { s.InstalledVersion, s.LastGoodVersion = "", "" }
	enter := map[addon.Phase]addon.Input{
		addon.PhaseInitializing: {Spec: meshSpec},
		addon.PhaseReinitializing: func() addon.Input {
			s := st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1"))
			return addon.Input{Spec: meshSpec, Status: s, Observation: ran(s, errBoom)}
		}(),
		addon.PhaseChecking: func() addon.Input {
			s := st(addon.PhaseInitializing, addon.ActionInstall, installing, claimed(addon.ActionInstall, "", "v1"))
			return addon.Input{Spec: meshSpec, Status: s, Observation: ran(s, nil)}
		}(),
		addon.PhaseRunning:   {Spec: meshSpec, Status: st(addon.PhaseChecking, addon.ActionCheckHealth), Observation: health(addon.HealthHealthy, nil)},
		addon.PhaseUpgrading: {Spec: addon.Spec{Name: meshSpec.Name, Generation: 2, Version: "v2"}, Status: st(addon.PhaseRunning, addon.ActionCheckHealth)},
		addon.PhaseRemediating: func() addon.Input {
			s := st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v1", "v2"))
			return addon.Input{Spec: addon.Spec{Name: meshSpec.Name, Generation: 1, Version: "v2"}, Status: s, Observation: ran(s, errBoom)}
		}(),
		addon.PhaseFailed: func() addon.Input {
			s := st(addon.PhaseRemediating, addon.ActionRollback, func(s *addon.Status) { s.InstalledVersion = "v2" }, claimed(addon.ActionRollback, "v2", "v1"))
			return addon.Input{Spec: addon.Spec{Name: meshSpec.Name, Generation: 1, Version: "v2"}, Status: s, Observation: ran(s, errBoom)}
		}(),
		addon.PhaseDeleting: {Spec: addon.Spec{Name: meshSpec.Name, Generation: 1, Version: "v1", Deleting: true}, Status: st(addon.PhaseRunning, addon.ActionCheckHealth)},
		addon.PhaseDeleted: func() addon.Input {
			s := st(addon.PhaseDeleting, addon.ActionUninstall, claimed(addon.ActionUninstall, "v1", ""))
			return addon.Input{Spec: addon.Spec{Name: meshSpec.Name, Generation: 1, Version: "v1", Deleting: true}, Status: s, Observation: ran(s, nil)}
		}(),
	}
	for _, tc := range []struct {
		phase  addon.Phase
		policy addon.Policy
		want   time.Duration // 0: no deadline
	}{
		{addon.PhaseInitializing, addon.Policy{}, defaultInstallTimeout},
		{addon.PhaseReinitializing, addon.Policy{}, defaultInstallTimeout},
		{addon.PhaseChecking, addon.Policy{}, defaultCheckTimeout},
		{addon.PhaseUpgrading, addon.Policy{}, defaultUpgradeTimeout},
		{addon.PhaseRemediating, addon.Policy{}, defaultRemediationTimeout},
		{addon.PhaseDeleting, addon.Policy{}, defaultDeleteTimeout},
		{addon.PhaseInitializing, custom, time.Minute},
		{addon.PhaseReinitializing, custom, time.Minute},
		{addon.PhaseChecking, custom, 2 * time.Minute},
		{addon.PhaseUpgrading, custom, 3 * time.Minute},
		{addon.PhaseRemediating, custom, 4 * time.Minute},
		{addon.PhaseDeleting, custom, 5 * time.Minute},
		{addon.PhaseRunning, custom, 0},
		{addon.PhaseFailed, custom, 0},
		{addon.PhaseDeleted, custom, 0},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			in := enter[tc.phase]
			in.Policy, in.Now = tc.policy, tNow
			d, err := addon.Decide(in)
			require.NoError(t, err)
			require.Equal(t, tc.phase, d.Status.Phase)
			if tc.want == 0 {
				assert.Nil(t, d.Status.Deadline)
				return
			}
			assert.Equal(t, at(tNow.Add(tc.want)), d.Status.Deadline)
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
		{"nothing", addon.Config{}, "addon: invalid config: Driver is required; Store is required"},
		{"typed-nil driver", addon.Config{Driver: nilDriver, Store: &fake.AddonStore{}}, "Driver holds a nil *fake.AddonDriver"},
		{"typed-nil store", addon.Config{Driver: &fake.AddonDriver{}, Store: nilStore}, "Store holds a nil *fake.AddonStore"},
		{"bad policy", addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Policy: addon.Policy{HistoryLimit: -1}}, "historyLimit"},
		{"drift without a DriftDetector", addon.Config{Driver: healthOnly{}, Store: &fake.AddonStore{}, Policy: addon.Policy{Drift: addon.DriftWarn}}, "DriftDetector"},
		{"tests without a Tester", addon.Config{Driver: healthOnly{}, Store: &fake.AddonStore{}, Policy: addon.Policy{Test: addon.TestPolicy{Enable: true}}}, "Tester"},
		{"typed-nil clock", addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Clock: (*clocktesting.FakeClock)(nil)}, "Clock holds a nil *testing.FakeClock"},
		{"empty table", addon.Config{Driver: &fake.AddonDriver{}, Store: &fake.AddonStore{}, Table: &addon.Table{}}, "Table has no rows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := addon.NewMachine(tc.cfg)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "addon: ")
		})
	}
}
