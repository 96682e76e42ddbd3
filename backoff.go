package converge

import (
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Backoff spaces the retries of something that keeps failing: after the n-th
// consecutive failure it waits min(Max, Initial·(FactorPercent/100)^(n-1)),
// plus up to JitterPercent % of that. It is the one backoff of every engine,
// embeddable in a custom resource.
//
// A field left unset (a zero duration or factor, a nil JitterPercent) means
// the default of the engine whose Policy holds the Backoff, as that Policy's
// documentation gives it: the engine fills them with WithDefaults before it
// computes a Delay. To turn jitter off, set JitterPercent to 0, which a CRD
// expresses as jitterPercent: 0.
// +kubebuilder:object:generate=true
type Backoff struct {
	// Initial is the wait after the first failure.
	// +optional
	Initial metav1.Duration `json:"initial,omitempty"`
	// Max bounds the wait, before jitter.
	// +optional
	Max metav1.Duration `json:"max,omitempty"`
	// FactorPercent multiplies the wait after each further failure: 200
	// doubles it; at least 100.
	// +optional
	FactorPercent int32 `json:"factorPercent,omitempty"`
	// JitterPercent is the largest share of a wait added to it at random,
	// 0..100; unset means the engine's default, 0 means no jitter.
	// +optional
	JitterPercent *int32 `json:"jitterPercent,omitempty"`
}

// WithDefaults returns b with each unset field taken from defaults.
func (b Backoff) WithDefaults(defaults Backoff) Backoff {
	if b.Initial.Duration == 0 {
		b.Initial = defaults.Initial
	}
	if b.Max.Duration == 0 {
		b.Max = defaults.Max
	}
	if b.FactorPercent == 0 {
		b.FactorPercent = defaults.FactorPercent
	}
	if b.JitterPercent == nil && defaults.JitterPercent != nil {
		j := *defaults.JitterPercent
		b.JitterPercent = &j
	}
	return b
}

// Delay returns the wait after failures consecutive failures, with jitter in
// [0, 1) drawn by the caller (clamped there): 0 for no failure, and never
// more than Max plus its jitter. Delay reads b's fields as they are (an
// engine fills the unset ones first, see WithDefaults): no Initial waits
// nothing, no Max bounds nothing, no FactorPercent keeps the wait constant,
// no JitterPercent adds none. The arithmetic saturates instead of
// overflowing.
func (b Backoff) Delay(failures int32, jitter float64) time.Duration {
	if failures <= 0 || b.Initial.Duration <= 0 {
		return 0
	}
	limit := math.Inf(1)
	if b.Max.Duration > 0 {
		limit = float64(b.Max.Duration)
	}
	factor := float64(max(b.FactorPercent, 100)) / 100
	d := min(float64(b.Initial.Duration)*math.Pow(factor, float64(failures-1)), limit)
	if b.JitterPercent != nil && jitter > 0 { // false for NaN too
		jitter = min(jitter, math.Nextafter(1, 0))
		d += d * float64(min(max(*b.JitterPercent, 0), 100)) / 100 * jitter
	}
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// Validate reports a negative duration, a Max below a set Initial, a factor
// below 100 % other than unset, and a jitter outside 0..100 %, as an error
// matching ErrInvalid.
func (b Backoff) Validate() error {
	var problems []string
	if b.Initial.Duration < 0 {
		problems = append(problems, fmt.Sprintf("initial %s is negative", b.Initial.Duration))
	}
	if b.Max.Duration < 0 {
		problems = append(problems, fmt.Sprintf("max %s is negative", b.Max.Duration))
	}
	if b.Initial.Duration > 0 && b.Max.Duration > 0 && b.Max.Duration < b.Initial.Duration {
		problems = append(problems, fmt.Sprintf("max %s is below initial %s", b.Max.Duration, b.Initial.Duration))
	}
	if f := b.FactorPercent; f != 0 && f < 100 {
		problems = append(problems, fmt.Sprintf("factorPercent %d is below 100", f))
	}
	if j := b.JitterPercent; j != nil && (*j < 0 || *j > 100) {
		problems = append(problems, fmt.Sprintf("jitterPercent %d is outside 0..100", *j))
	}
	return Invalid("converge", "backoff", problems...)
}
