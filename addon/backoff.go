package addon

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Backoff spaces retries: the n-th consecutive failure waits
// min(Max, Initial·(FactorPercent/100)^(n-1)), plus up to JitterPercent% of that.
// Zero fields take DefaultBackoffInitial, DefaultBackoffMax,
// DefaultBackoffFactorPercent and DefaultBackoffJitterPercent. To run without
// jitter, inject a jitter source that returns 0 (Config.Jitter, Input.Jitter).
// +kubebuilder:object:generate=true
type Backoff struct {
	// Initial is the first delay.
	// +optional
	Initial metav1.Duration `json:"initial,omitempty"`
	// Max bounds the delay before jitter.
	// +optional
	Max metav1.Duration `json:"max,omitempty"`
	// FactorPercent multiplies the delay after each failure: 200 doubles it;
	// at least 100.
	// +optional
	FactorPercent int32 `json:"factorPercent,omitempty"`
	// JitterPercent is the largest share of a delay added to it, 0..100.
	// +optional
	JitterPercent int32 `json:"jitterPercent,omitempty"`
}

// Backoff defaults.
const (
	DefaultBackoffInitial       = 10 * time.Second
	DefaultBackoffMax           = 5 * time.Minute
	DefaultBackoffFactorPercent = 200
	DefaultBackoffJitterPercent = 10
)

// Validate reports a negative duration, a factor below 100 (other than the
// zero default) or a jitter outside 0..100, as an *InvalidError (wrapping
// ErrInvalid).
func (b Backoff) Validate() error {
	if problems := b.problems(""); len(problems) > 0 {
		return invalid("backoff", problems...)
	}
	return nil
}

// problems lists what Validate reports, each field name after prefix.
func (b Backoff) problems(prefix string) []string {
	var out []string
	if b.Initial.Duration < 0 {
		out = append(out, fmt.Sprintf("%sinitial %s is negative", prefix, b.Initial.Duration))
	}
	if b.Max.Duration < 0 {
		out = append(out, fmt.Sprintf("%smax %s is negative", prefix, b.Max.Duration))
	}
	if f := b.FactorPercent; f != 0 && f < 100 {
		out = append(out, fmt.Sprintf("%sfactorPercent %d is below 100", prefix, f))
	}
	if j := b.JitterPercent; j < 0 || j > 100 {
		out = append(out, fmt.Sprintf("%sjitterPercent %d is outside 0..100", prefix, j))
	}
	return out
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial.Duration <= 0 {
		b.Initial.Duration = DefaultBackoffInitial
	}
	if b.Max.Duration <= 0 {
		b.Max.Duration = DefaultBackoffMax
	}
	if b.Max.Duration < b.Initial.Duration {
		b.Max.Duration = b.Initial.Duration
	}
	if b.FactorPercent < 100 {
		b.FactorPercent = DefaultBackoffFactorPercent
	}
	if b.JitterPercent <= 0 || b.JitterPercent > 100 {
		b.JitterPercent = DefaultBackoffJitterPercent
	}
	return b
}

// Delay returns the wait after the failures-th consecutive failure with
// jitter in [0, 1) (clamped) supplied by the caller: 0 failures wait
// nothing. Defaults apply to zero fields. The arithmetic saturates: it never
// overflows and never exceeds Max plus its jitter.
func (b Backoff) Delay(failures int32, jitter float64) time.Duration {
	if failures <= 0 {
		return 0
	}
	b = b.withDefaults()
	if !(jitter >= 0) {
		jitter = 0
	}
	if jitter >= 1 {
		jitter = math.Nextafter(1, 0)
	}
	d, limit := b.Initial.Duration, b.Max.Duration
	for i := int32(1); i < failures && d < limit; i++ {
		f := time.Duration(b.FactorPercent)
		if d > math.MaxInt64/f {
			d = limit
			break
		}
		d = d * f / 100
	}
	d = min(d, limit)
	extra := float64(d) * float64(b.JitterPercent) / 100 * jitter
	if extra >= float64(math.MaxInt64-d) {
		return math.MaxInt64
	}
	return d + time.Duration(extra)
}
