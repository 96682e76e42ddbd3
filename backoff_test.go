package converge_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
)

func backoff(initial, max time.Duration, factor int32, jitter *int32) converge.Backoff {
	return converge.Backoff{Initial: metav1.Duration{Duration: initial}, Max: metav1.Duration{Duration: max}, FactorPercent: factor, JitterPercent: jitter}
}

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		name     string
		b        converge.Backoff
		failures int32
		jitter   float64
		want     time.Duration
	}{
		{name: "no failure waits nothing", b: backoff(10*time.Second, time.Minute, 200, nil), failures: 0, want: 0},
		{name: "a negative count waits nothing", b: backoff(10*time.Second, time.Minute, 200, nil), failures: -3, want: 0},
		{name: "the first failure waits Initial", b: backoff(10*time.Second, time.Minute, 200, nil), failures: 1, want: 10 * time.Second},
		{name: "each further failure multiplies by the factor", b: backoff(10*time.Second, time.Minute, 200, nil), failures: 3, want: 40 * time.Second},
		{name: "a factor of 150 percent", b: backoff(15*time.Second, 10*time.Minute, 150, nil), failures: 4, want: 50625 * time.Millisecond},
		{name: "Max bounds the wait", b: backoff(10*time.Second, time.Minute, 200, nil), failures: 4, want: time.Minute},
		{name: "no Initial waits nothing", b: backoff(0, time.Minute, 200, nil), failures: 5, want: 0},
		{name: "no factor keeps the wait constant", b: backoff(10*time.Second, time.Minute, 0, nil), failures: 5, want: 10 * time.Second},
		{name: "no Max bounds nothing and saturates", b: backoff(time.Second, 0, 200, nil), failures: math.MaxInt32, want: math.MaxInt64},
		{name: "a Max below Initial still bounds the wait", b: backoff(time.Minute, time.Second, 200, nil), failures: 1, want: time.Second},
		{name: "jitter adds its share of the wait", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](50)), failures: 1, jitter: 0.5, want: 12500 * time.Millisecond},
		{name: "jitter adds on top of Max", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](10)), failures: 9, jitter: 0.5, want: 63 * time.Second},
		{name: "jitter percent 0 adds nothing", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](0)), failures: 1, jitter: 0.99, want: 10 * time.Second},
		{name: "no jitter percent adds nothing", b: backoff(10*time.Second, time.Minute, 200, nil), failures: 1, jitter: 0.99, want: 10 * time.Second},
		{name: "a jitter of 1 or more adds at most the whole share", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](100)), failures: 1, jitter: 7, want: 20 * time.Second},
		{name: "a negative jitter adds nothing", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](100)), failures: 1, jitter: -1, want: 10 * time.Second},
		{name: "a NaN jitter adds nothing", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](100)), failures: 1, jitter: math.NaN(), want: 10 * time.Second},
		{name: "a jitter percent over 100 counts as 100", b: backoff(10*time.Second, time.Minute, 200, ptr.To[int32](300)), failures: 1, jitter: 0.5, want: 15 * time.Second},
		{name: "the largest wait with jitter saturates", b: backoff(math.MaxInt64, math.MaxInt64, 200, ptr.To[int32](100)), failures: 2, jitter: 0.9, want: math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.Delay(tt.failures, tt.jitter))
		})
	}
}

func TestBackoffDelayNeverShrinksAsFailuresGrow(t *testing.T) {
	for _, b := range []converge.Backoff{
		backoff(15*time.Second, 10*time.Minute, 150, nil),
		backoff(time.Nanosecond, 0, 101, nil),
		backoff(time.Hour, 2*time.Hour, 1000, ptr.To[int32](100)),
	} {
		prev := time.Duration(0)
		for n := int32(0); n < 200; n++ {
			d := b.Delay(n, 0.5)
			require.GreaterOrEqual(t, d, prev, "%+v after %d failures", b, n)
			prev = d
		}
	}
}

func TestBackoffWithDefaults(t *testing.T) {
	defaults := backoff(15*time.Second, 10*time.Minute, 150, ptr.To[int32](10))
	tests := []struct {
		name string
		b    converge.Backoff
		want converge.Backoff
	}{
		{name: "the zero backoff is the defaults", b: converge.Backoff{}, want: defaults},
		{name: "set fields stay", b: backoff(time.Second, time.Minute, 200, ptr.To[int32](30)), want: backoff(time.Second, time.Minute, 200, ptr.To[int32](30))},
		{name: "a jitter of 0 is set: no jitter", b: backoff(0, 0, 0, ptr.To[int32](0)), want: backoff(15*time.Second, 10*time.Minute, 150, ptr.To[int32](0))},
		{name: "one field set, the others defaulted", b: backoff(time.Second, 0, 0, nil), want: backoff(time.Second, 10*time.Minute, 150, ptr.To[int32](10))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.WithDefaults(defaults))
		})
	}
}

func TestBackoffWithDefaultsDoesNotShareTheDefaultsJitter(t *testing.T) {
	j := int32(10)
	got := converge.Backoff{}.WithDefaults(converge.Backoff{JitterPercent: &j})
	*got.JitterPercent = 99
	assert.Equal(t, int32(10), j)
}

func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		name    string
		b       converge.Backoff
		problem string
	}{
		{name: "the zero backoff is valid", b: converge.Backoff{}},
		{name: "a full backoff is valid", b: backoff(time.Second, time.Minute, 150, ptr.To[int32](100))},
		{name: "no jitter is valid", b: backoff(0, 0, 0, ptr.To[int32](0))},
		{name: "a negative initial", b: backoff(-time.Second, 0, 0, nil), problem: "converge: invalid backoff: initial -1s is negative"},
		{name: "a negative max", b: backoff(0, -time.Second, 0, nil), problem: "converge: invalid backoff: max -1s is negative"},
		{name: "a max below initial", b: backoff(time.Minute, time.Second, 0, nil), problem: "converge: invalid backoff: max 1s is below initial 1m0s"},
		{name: "a factor below 100", b: backoff(0, 0, 99, nil), problem: "converge: invalid backoff: factorPercent 99 is below 100"},
		{name: "a negative factor", b: backoff(0, 0, -1, nil), problem: "converge: invalid backoff: factorPercent -1 is below 100"},
		{name: "a jitter over 100", b: backoff(0, 0, 0, ptr.To[int32](101)), problem: "converge: invalid backoff: jitterPercent 101 is outside 0..100"},
		{name: "a negative jitter", b: backoff(0, 0, 0, ptr.To[int32](-1)), problem: "converge: invalid backoff: jitterPercent -1 is outside 0..100"},
		{name: "every problem at once", b: backoff(-time.Second, -time.Second, 50, ptr.To[int32](-1)),
			problem: "converge: invalid backoff: initial -1s is negative; max -1s is negative; factorPercent 50 is below 100; jitterPercent -1 is outside 0..100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.problem == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, converge.ErrInvalid))
			assert.Equal(t, tt.problem, err.Error())
		})
	}
}
