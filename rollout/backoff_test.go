package rollout

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// TestBackoffParityWithLibraryGo pins the default sequence to library-go's
// installer controller: backOffDuration(10s, 1.5, 10min) evaluated at the
// failure count, so the first retry waits 15 s.
func TestBackoffParityWithLibraryGo(t *testing.T) {
	libraryGo := func(count int32) time.Duration {
		d := time.Duration(float64(10*time.Second) * math.Pow(1.5, float64(count)))
		return min(d, 10*time.Minute)
	}
	for count := int32(1); count <= 20; count++ {
		assert.Equal(t, libraryGo(count), Backoff{}.Delay(count, 0), "failure %d", count)
	}
	assert.Equal(t, 15*time.Second, Backoff{}.Delay(1, 0), "the first retry waits 15 s")
}

func TestBackoffDelay(t *testing.T) {
	custom := Backoff{Initial: dur(time.Second), FactorPercent: 200, Max: dur(5 * time.Second)}
	tests := []struct {
		name     string
		b        Backoff
		failures int32
		jitter   float64
		want     time.Duration
	}{
		{name: "no failure", failures: 0, want: 0},
		{name: "negative count", failures: -3, want: 0},
		{name: "default first", failures: 1, want: 15 * time.Second},
		{name: "default second", failures: 2, want: 22500 * time.Millisecond},
		{name: "default capped", failures: 20, want: 10 * time.Minute},
		{name: "counter at its maximum saturates at the cap", failures: math.MaxInt32, want: 10 * time.Minute},
		{name: "custom", b: custom, failures: 3, want: 4 * time.Second},
		{name: "custom capped", b: custom, failures: 4, want: 5 * time.Second},
		{name: "factor 100 is constant", b: Backoff{Initial: dur(time.Second), FactorPercent: 100}, failures: 50, want: time.Second},
		{name: "jitter adds its share", b: Backoff{JitterPercent: 20}, failures: 1, jitter: 0.5, want: 16500 * time.Millisecond},
		{name: "jitter on the cap stays within cap plus jitter", b: Backoff{JitterPercent: 100}, failures: math.MaxInt32, jitter: 5, want: 20*time.Minute - 1},
		{name: "NaN jitter is none", b: Backoff{JitterPercent: 100}, failures: 1, jitter: math.NaN(), want: 15 * time.Second},
		{name: "huge initial saturates", b: Backoff{Initial: dur(math.MaxInt64), Max: dur(math.MaxInt64), JitterPercent: 100}, failures: 9, jitter: 0.9, want: math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.b.Delay(tt.failures, tt.jitter)
			if tt.name == "jitter on the cap stays within cap plus jitter" {
				assert.LessOrEqual(t, got, 20*time.Minute)
				assert.Greater(t, got, 19*time.Minute)
				return
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBackoffRetryAt(t *testing.T) {
	retry := metav1.NewTime(t0.Add(time.Minute))
	withRetry := failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0)
	withRetry.RetryTime = &retry
	tests := []struct {
		name string
		n    NodeStatus
		want time.Time
	}{
		{name: "no failure", n: node("a", 1, 2), want: time.Time{}},
		{name: "operand failed, target cleared", n: failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, t0), want: t0.Add(15 * time.Second)},
		{name: "not in transition, past the failed revision", n: failed(node("a", 2, 0), 2, 1, ReasonOperandFailed, t0), want: time.Time{}},
		{name: "failure of another revision", n: failed(node("a", 1, 3), 2, 1, ReasonInstallerPodFailed, t0), want: time.Time{}},
		{name: "first failure", n: failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0), want: t0.Add(15 * time.Second)},
		{name: "second failure", n: failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0), want: t0.Add(22500 * time.Millisecond)},
		{name: "a persisted retry time wins", n: withRetry, want: t0.Add(time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Backoff{}.RetryAt(tt.n))
		})
	}
}

func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		name    string
		b       Backoff
		wantErr bool
	}{
		{name: "zero", b: Backoff{}},
		{name: "custom", b: Backoff{Initial: dur(time.Second), FactorPercent: 100, Max: dur(time.Minute), JitterPercent: 100}},
		{name: "negative initial", b: Backoff{Initial: dur(-1)}, wantErr: true},
		{name: "negative max", b: Backoff{Max: dur(-1)}, wantErr: true},
		{name: "shrinking factor", b: Backoff{FactorPercent: 50}, wantErr: true},
		{name: "negative jitter", b: Backoff{JitterPercent: -1}, wantErr: true},
		{name: "jitter above 100", b: Backoff{JitterPercent: 101}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalid)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
