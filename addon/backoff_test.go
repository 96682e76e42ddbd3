package addon_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b        addon.Backoff
		failures int32
		jitter   float64
		want     time.Duration
	}{
		{"no failure waits nothing", addon.Backoff{}, 0, 0.5, 0},
		{"zero value, first failure: initial", addon.Backoff{}, 1, 0, 10 * time.Second},
		{"doubles", addon.Backoff{}, 3, 0, 40 * time.Second},
		{"capped", addon.Backoff{}, 6, 0, 5 * time.Minute},
		{"huge failure count neither overflows nor loops long", addon.Backoff{}, math.MaxInt32, 0, 5 * time.Minute},
		{"jitter adds up to JitterPercent", addon.Backoff{JitterPercent: 50}, 1, 0.5, 12500 * time.Millisecond},
		{"jitter on the cap", addon.Backoff{}, 10, 0.5, 315 * time.Second},
		{"jitter below 0 is clamped", addon.Backoff{}, 1, -3, 10 * time.Second},
		{"NaN jitter is clamped", addon.Backoff{}, 1, math.NaN(), 10 * time.Second},
		{"factor 150", addon.Backoff{FactorPercent: 150}, 3, 0, 22500 * time.Millisecond},
		{"custom initial and max", addon.Backoff{Initial: dur(time.Second), Max: dur(4 * time.Second)}, 5, 0, 4 * time.Second},
		{"max below initial lifts to initial", addon.Backoff{Initial: dur(time.Minute), Max: dur(time.Second)}, 3, 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.b.Delay(tc.failures, tc.jitter))
		})
	}
}

func TestBackoffDelayIsMonotonicAndBounded(t *testing.T) {
	b := addon.Backoff{}
	prev := time.Duration(0)
	for n := int32(1); n < 100; n++ {
		d := b.Delay(n, 0.999)
		assert.GreaterOrEqual(t, d, prev, "failure %d", n)
		assert.LessOrEqual(t, d, addon.DefaultBackoffMax*(100+addon.DefaultBackoffJitterPercent)/100)
		prev = d
	}
}

func TestBackoffDelayDoesNotOverflow(t *testing.T) {
	b := addon.Backoff{Initial: dur(math.MaxInt64 / 3), Max: dur(math.MaxInt64 - 1), FactorPercent: 1000, JitterPercent: 100}
	assert.Equal(t, time.Duration(math.MaxInt64-1), b.Delay(10, 0))
	assert.Equal(t, time.Duration(math.MaxInt64), b.Delay(10, 0.9))
}

// Backoff.Validate holds the rule every engine's Backoff follows: zero
// fields are defaults; a negative duration, a factor below 100 and a jitter
// outside 0..100 are ErrInvalid.
func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		name string
		b    addon.Backoff
		want string // "" for valid, else a problem the error names
	}{
		{name: "zero", b: addon.Backoff{}},
		{name: "custom", b: addon.Backoff{Initial: dur(time.Second), FactorPercent: 100, Max: dur(time.Minute), JitterPercent: 100}},
		{name: "negative initial", b: addon.Backoff{Initial: dur(-1)}, want: "initial -1ns is negative"},
		{name: "negative max", b: addon.Backoff{Max: dur(-1)}, want: "max -1ns is negative"},
		{name: "shrinking factor", b: addon.Backoff{FactorPercent: 50}, want: "factorPercent 50 is below 100"},
		{name: "negative jitter", b: addon.Backoff{JitterPercent: -1}, want: "jitterPercent -1 is outside 0..100"},
		{name: "jitter above 100", b: addon.Backoff{JitterPercent: 101}, want: "jitterPercent 101 is outside 0..100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, addon.ErrInvalid)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
