package payload

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBackoffDelay(t *testing.T) {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	doubling := Backoff{Initial: d(time.Second), Max: d(10 * time.Second), FactorPercent: 200, JitterPercent: 50}
	tests := []struct {
		name     string
		b        Backoff
		failures int32
		jitter   float64
		want     time.Duration
	}{
		{"no failure waits nothing", doubling, 0, 0.9, 0},
		{"first failure", doubling, 1, 0, time.Second},
		{"doubles", doubling, 3, 0, 4 * time.Second},
		{"capped", doubling, 10, 0, 10 * time.Second},
		{"jitter adds up to its percent", doubling, 1, 0.5, 1250 * time.Millisecond},
		{"jitter on the cap", doubling, 40, 0.999, 10*time.Second + 4995*time.Millisecond},
		{"never overflows", Backoff{Initial: d(time.Hour), Max: d(math.MaxInt64), FactorPercent: 1000}, math.MaxInt32, 0, math.MaxInt64},
		{"a factor below 100 counts as 100", Backoff{Initial: d(time.Second), Max: d(time.Minute), FactorPercent: 10}, 5, 0, time.Second},
		{"negative jitter is none", doubling, 1, -1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.Delay(tt.failures, tt.jitter))
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := Policy{}.withDefaults()
	assert.Equal(t, defaultInterval, p.Interval.Duration)
	for n, want := range []time.Duration{0, defaultInterval / 8, defaultInterval / 4, defaultInterval / 2, defaultInterval, defaultInterval} {
		assert.Equal(t, want, p.Backoff.Delay(int32(n), 0), "the cluster-version operator's waits after %d failures", n)
	}
	assert.Equal(t, int32(defaultInitializingWorkers), p.InitializingWorkers)
	assert.Equal(t, EffectFailAfterInterval, p.ReadinessEffect)
}

// Backoff.Validate holds the rule every engine's Backoff follows: zero
// fields are defaults; a negative duration, a factor below 100 and a jitter
// outside 0..100 are ErrInvalid.
func TestBackoffValidate(t *testing.T) {
	d := func(x time.Duration) metav1.Duration { return metav1.Duration{Duration: x} }
	tests := []struct {
		name string
		b    Backoff
		want string // "" for valid, else what the error names
	}{
		{name: "zero", b: Backoff{}},
		{name: "custom", b: Backoff{Initial: d(time.Second), FactorPercent: 100, Max: d(time.Minute), JitterPercent: 100}},
		{name: "negative initial", b: Backoff{Initial: d(-1)}, want: "negative duration"},
		{name: "negative max", b: Backoff{Max: d(-1)}, want: "negative duration"},
		{name: "shrinking factor", b: Backoff{FactorPercent: 50}, want: "factorPercent 50 is below 100"},
		{name: "negative jitter", b: Backoff{JitterPercent: -1}, want: "jitterPercent -1 is not within 0..100"},
		{name: "jitter above 100", b: Backoff{JitterPercent: 101}, want: "jitterPercent 101 is not within 0..100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalid)
			assert.ErrorContains(t, err, "payload: backoff: "+tt.want)
		})
	}
}
