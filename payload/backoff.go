package payload

import (
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Backoff spaces retries: the n-th consecutive failure waits
// min(Max, Initial·(FactorPercent/100)^(n-1)), plus up to JitterPercent% of that.
// +kubebuilder:object:generate=true
type Backoff struct {
	// Initial is the wait after the first failure.
	// +optional
	Initial metav1.Duration `json:"initial,omitempty"`
	// Max bounds the wait before jitter.
	// +optional
	Max metav1.Duration `json:"max,omitempty"`
	// FactorPercent multiplies the wait after each further failure: 200 doubles; ≥ 100.
	// +optional
	FactorPercent int32 `json:"factorPercent,omitempty"`
	// JitterPercent is the most added to a wait, in percent of it: 0..100.
	// +optional
	JitterPercent int32 `json:"jitterPercent,omitempty"`
}

// Delay returns the wait after failures consecutive failures, with jitter in [0, 1)
// drawn by the caller: 0 for no failure, never more than Max plus its jitter. The
// arithmetic saturates instead of overflowing. Zero fields count as zero: use a
// Policy's defaults (see Policy) for a ready backoff.
func (b Backoff) Delay(failures int32, jitter float64) time.Duration {
	if failures <= 0 {
		return 0
	}
	limit := max(b.Max.Duration, 0)
	d := min(max(b.Initial.Duration, 0), limit)
	factor := float64(max(b.FactorPercent, 100)) / 100
	for i := int32(1); i < failures && d < limit; i++ {
		next := float64(d) * factor
		if next >= float64(limit) {
			d = limit
			break
		}
		d = time.Duration(next)
	}
	if !(jitter > 0) { // also NaN
		return d
	}
	jitter = min(jitter, 1)
	extra := float64(d) * float64(min(max(b.JitterPercent, 0), 100)) / 100 * jitter
	if extra >= float64(math.MaxInt64-d) {
		return math.MaxInt64
	}
	return d + time.Duration(extra)
}

// Validate reports a negative duration, a factor below 100 (other than the
// zero default) or a jitter outside 0..100, wrapped in ErrInvalid.
func (b Backoff) Validate() error { return b.validate("backoff") }

func (b Backoff) validate(field string) error {
	switch {
	case b.Initial.Duration < 0 || b.Max.Duration < 0:
		return invalidf("%s: negative duration (initial %s, max %s)", field, b.Initial.Duration, b.Max.Duration)
	case b.FactorPercent != 0 && b.FactorPercent < 100:
		return invalidf("%s: factorPercent %d is below 100", field, b.FactorPercent)
	case b.JitterPercent < 0 || b.JitterPercent > 100:
		return invalidf("%s: jitterPercent %d is not within 0..100", field, b.JitterPercent)
	}
	return nil
}

// withDefaults fills the zero fields of b from def.
func (b Backoff) withDefaults(def Backoff) Backoff {
	if b.Initial.Duration == 0 {
		b.Initial = def.Initial
	}
	if b.Max.Duration == 0 {
		b.Max = def.Max
	}
	if b.FactorPercent == 0 {
		b.FactorPercent = def.FactorPercent
	}
	if b.JitterPercent == 0 {
		b.JitterPercent = def.JitterPercent
	}
	b.Max.Duration = max(b.Max.Duration, b.Initial.Duration)
	return b
}
