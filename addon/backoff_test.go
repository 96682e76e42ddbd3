package addon_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge/addon"
)

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b        addon.Backoff
		failures int
		jitter   float64
		want     time.Duration
	}{
		{"zero value, first failure: base", addon.Backoff{}, 1, 0, 10 * time.Second},
		{"no failure yet counts as the first", addon.Backoff{}, 0, 0, 10 * time.Second},
		{"doubles", addon.Backoff{}, 3, 0, 40 * time.Second},
		{"capped", addon.Backoff{}, 6, 0, 5 * time.Minute},
		{"huge failure count neither overflows nor loops long", addon.Backoff{}, math.MaxInt, 0, 5 * time.Minute},
		{"jitter scales by up to Jitter", addon.Backoff{Jitter: 0.5}, 1, 0.5, 12500 * time.Millisecond},
		{"jitter on the cap", addon.Backoff{}, 10, 0.5, 315 * time.Second},
		{"jitter below 0 is clamped", addon.Backoff{}, 1, -3, 10 * time.Second},
		{"NaN jitter is clamped", addon.Backoff{}, 1, math.NaN(), 10 * time.Second},
		{"custom base and cap", addon.Backoff{Base: time.Second, Cap: 4 * time.Second, Jitter: 1e-9}, 5, 0, 4 * time.Second},
		{"cap below base lifts to base", addon.Backoff{Base: time.Minute, Cap: time.Second}, 3, 0, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.b.Delay(tc.failures, tc.jitter))
		})
	}
}

func TestBackoffDelayIsMonotonicAndBounded(t *testing.T) {
	b := addon.Backoff{}
	prev := time.Duration(0)
	for n := 1; n < 100; n++ {
		d := b.Delay(n, 0.999)
		assert.GreaterOrEqual(t, d, prev, "failure %d", n)
		assert.LessOrEqual(t, d, time.Duration(float64(addon.DefaultBackoffCap)*(1+addon.DefaultBackoffJitter)))
		prev = d
	}
}

func TestBackoffDelayDoesNotOverflow(t *testing.T) {
	b := addon.Backoff{Base: time.Duration(math.MaxInt64 / 3), Cap: time.Duration(math.MaxInt64 - 1), Jitter: 1}
	assert.Equal(t, time.Duration(math.MaxInt64-1), b.Delay(10, 0))
	assert.Equal(t, time.Duration(math.MaxInt64), b.Delay(10, 0.9))
}
