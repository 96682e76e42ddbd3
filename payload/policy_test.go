package payload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
)

func TestPolicyDefaults(t *testing.T) {
	p := Policy{}.withDefaults()
	assert.Equal(t, defaultInterval, p.Interval.Duration)
	for n, want := range []time.Duration{0, defaultInterval / 8, defaultInterval / 4, defaultInterval / 2, defaultInterval, defaultInterval} {
		assert.Equal(t, want, p.Backoff.Delay(int32(n), 0), "the cluster-version operator's waits after %d failures", n)
	}
	assert.Equal(t, defaultInterval/8+defaultInterval/8/5, p.Backoff.Delay(1, 0.999999999).Round(time.Millisecond), "up to 20 %% of jitter")
	for n, want := range []time.Duration{0, 10 * time.Second, 13 * time.Second, 16900 * time.Millisecond, 21970 * time.Millisecond, 28561 * time.Millisecond, 30 * time.Second} {
		assert.Equal(t, want, p.ManifestBackoff.Delay(int32(n), 0.9), "the cluster-version operator's task backoff, without jitter, after %d failures", n)
	}
	assert.Equal(t, int32(defaultInitializingWorkers), p.InitializingWorkers)
	assert.Equal(t, EffectFailAfterInterval, p.ReadinessEffect)
}

// TestPolicyBackoffJitterCanBeTurnedOff: JitterPercent 0, which a custom resource says
// as jitterPercent: 0, is no jitter, where an unset JitterPercent is the default 20 %.
func TestPolicyBackoffJitterCanBeTurnedOff(t *testing.T) {
	off := Policy{Backoff: converge.Backoff{JitterPercent: ptr.To[int32](0)}}.withDefaults()
	assert.Equal(t, defaultInterval/8, off.Backoff.Delay(1, 0.9))
	unset := Policy{}.withDefaults()
	assert.Greater(t, unset.Backoff.Delay(1, 0.9), defaultInterval/8)
}

// TestPolicyBackoffMaxIsAtLeastInitial: an Initial longer than the default Max, with Max
// left unset, waits Initial; a Max the policy sets is kept.
func TestPolicyBackoffMaxIsAtLeastInitial(t *testing.T) {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	p := Policy{Backoff: converge.Backoff{Initial: d(10 * time.Minute)}, ManifestBackoff: converge.Backoff{Initial: d(time.Minute)}}.withDefaults()
	assert.Equal(t, 10*time.Minute, p.Backoff.Delay(3, 0))
	assert.Equal(t, time.Minute, p.ManifestBackoff.Delay(3, 0))
	set := Policy{Backoff: converge.Backoff{Initial: d(time.Second), Max: d(2 * time.Second)}}.withDefaults()
	assert.Equal(t, 2*time.Second, set.Backoff.Delay(5, 0))
}

func TestPolicyValidate(t *testing.T) {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	tests := []struct {
		name string
		p    Policy
		want string // "" for valid
	}{
		{name: "zero", p: Policy{}},
		{name: "custom", p: Policy{Interval: d(time.Second), Backoff: converge.Backoff{Initial: d(time.Second), FactorPercent: 100, Max: d(time.Minute), JitterPercent: ptr.To[int32](100)}}},
		{name: "negative interval", p: Policy{Interval: d(-1)}, want: "payload: invalid policy: interval -1ns is negative"},
		{name: "negative workers", p: Policy{InitializingWorkers: -1}, want: "payload: invalid policy: initializingWorkers -1 is negative"},
		{name: "unknown readiness effect", p: Policy{ReadinessEffect: "Sometimes"}, want: `payload: invalid policy: readinessEffect "Sometimes" is unknown`},
		{name: "a backoff's problems are named by its field", p: Policy{Backoff: converge.Backoff{FactorPercent: 50}, ManifestBackoff: converge.Backoff{JitterPercent: ptr.To[int32](101)}},
			want: "payload: invalid policy: backoff: factorPercent 50 is below 100; manifestBackoff: jitterPercent 101 is outside 0..100"},
		{name: "every problem at once", p: Policy{Interval: d(-1), Workers: -2, Backoff: converge.Backoff{Initial: d(-1)}},
			want: "payload: invalid policy: interval -1ns is negative; workers -2 is negative; backoff: initial -1ns is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tt.want)
		})
	}
}
