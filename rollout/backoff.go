package rollout

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default installer backoff: library-go's installer controller waits
// 10 s · 1.5^n after n failures, capped at 10 min, so its first retry waits
// 15 s, then 22.5 s, 33.75 s, … The same sequence here is
// Initial · (FactorPercent/100)^(n-1) with these defaults.
const (
	DefaultBackoffInitial       = 15 * time.Second
	DefaultBackoffMax           = 10 * time.Minute
	DefaultBackoffFactorPercent = 150
)

// Backoff spaces retries: the n-th consecutive failure waits
// min(Max, Initial·(FactorPercent/100)^(n-1)), plus up to JitterPercent% of that.
// Zero fields take the defaults (15 s, 10 min, 150 %, no jitter), which
// reproduce library-go's installer backoff exactly.
// +kubebuilder:object:generate=true
type Backoff struct {
	// Initial is the wait after the first failure.
	// +optional
	Initial metav1.Duration `json:"initial,omitempty"`
	// Max bounds the wait (before jitter).
	// +optional
	Max metav1.Duration `json:"max,omitempty"`
	// FactorPercent multiplies the wait after each further failure; 200 doubles; ≥ 100.
	// +optional
	FactorPercent int32 `json:"factorPercent,omitempty"`
	// JitterPercent adds up to this share of the wait, 0..100.
	// +optional
	JitterPercent int32 `json:"jitterPercent,omitempty"`
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial.Duration == 0 {
		b.Initial.Duration = DefaultBackoffInitial
	}
	if b.Max.Duration == 0 {
		b.Max.Duration = DefaultBackoffMax
	}
	if b.FactorPercent == 0 {
		b.FactorPercent = DefaultBackoffFactorPercent
	}
	return b
}

// Validate reports a negative duration, a factor below 100 % (other than
// the zero default) or a jitter outside 0..100 %, wrapped in ErrInvalid.
func (b Backoff) Validate() error {
	if b.Initial.Duration < 0 || b.Max.Duration < 0 {
		return invalidf("backoff durations must not be negative (initial %v, max %v)", b.Initial.Duration, b.Max.Duration)
	}
	if b.FactorPercent != 0 && b.FactorPercent < 100 {
		return invalidf("backoff factorPercent %d is below 100", b.FactorPercent)
	}
	if b.JitterPercent < 0 || b.JitterPercent > 100 {
		return invalidf("backoff jitterPercent %d is not within 0..100", b.JitterPercent)
	}
	return nil
}

// Delay returns the wait after the given number of consecutive failures: 0
// for none, Initial for one, Initial·(FactorPercent/100)^(failures-1) up to
// Max after that, plus jitter·JitterPercent% of it (jitter in [0,1), clamped
// there). It saturates: no count overflows it and it never exceeds Max plus
// its jitter.
func (b Backoff) Delay(failures int32, jitter float64) time.Duration {
	if failures <= 0 {
		return 0
	}
	b = b.withDefaults()
	limit := float64(b.Max.Duration)
	d := float64(b.Initial.Duration) * math.Pow(float64(b.FactorPercent)/100, float64(failures-1))
	if math.IsNaN(d) || d > limit {
		d = limit
	}
	if math.IsNaN(jitter) || jitter < 0 {
		jitter = 0
	}
	jitter = min(jitter, math.Nextafter(1, 0))
	d += d * float64(b.JitterPercent) / 100 * jitter
	if d >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d)
}

// longest returns the longest wait Delay can give after failures.
func (b Backoff) longest(failures int32) time.Duration { return b.Delay(failures, 1) }

// RetryAt is the earliest time a node may retry the revision it failed (its
// target, or with no target a revision it has not reached): its RetryTime,
// or, for a status written without one, the last failed time plus the
// backoff without jitter. It returns the zero time when the node has no
// failure in its way (see NodeStatus.Failing).
func (b Backoff) RetryAt(n NodeStatus) time.Time {
	switch {
	case !n.Failing():
		return time.Time{}
	case n.RetryTime != nil:
		return n.RetryTime.Time
	case n.LastFailedTime != nil:
		return n.LastFailedTime.Add(b.Delay(n.LastFailedCount, 0))
	}
	return time.Time{}
}
