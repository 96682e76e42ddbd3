package rollout

import (
	"math"
	"time"
)

// Default installer backoff, as library-go behaves.
const (
	DefaultBackoffBase   = 10 * time.Second
	DefaultBackoffFactor = 1.5
	DefaultBackoffCap    = 10 * time.Minute
)

// Backoff is the delay before retrying a failed installer:
// Base · Factor^(failures-1), capped at Cap. Zero fields take the defaults
// (10 s, 1.5, 10 min).
type Backoff struct {
	// Base is the delay after the first failure.
	Base time.Duration
	// Factor multiplies the delay after each further failure; at least 1.
	Factor float64
	// Cap bounds the delay.
	Cap time.Duration
}

func (b Backoff) withDefaults() Backoff {
	if b.Base == 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Factor == 0 {
		b.Factor = DefaultBackoffFactor
	}
	if b.Cap == 0 {
		b.Cap = DefaultBackoffCap
	}
	return b
}

// Validate reports a negative duration or a factor below 1 (other than the zero default).
func (b Backoff) Validate() error {
	if b.Base < 0 || b.Cap < 0 {
		return invalidf("backoff durations must not be negative (base %v, cap %v)", b.Base, b.Cap)
	}
	if b.Factor != 0 && (b.Factor < 1 || math.IsNaN(b.Factor) || math.IsInf(b.Factor, 0)) {
		return invalidf("backoff factor %v must be a finite number of at least 1", b.Factor)
	}
	return nil
}

// Delay returns the wait after the given number of consecutive failures:
// 0 for none, Base for one, Base·Factor^(failures-1) up to Cap after that.
func (b Backoff) Delay(failures int32) time.Duration {
	if failures <= 0 {
		return 0
	}
	b = b.withDefaults()
	d := float64(b.Base) * math.Pow(b.Factor, float64(failures-1))
	if math.IsNaN(d) || d >= float64(b.Cap) {
		return b.Cap
	}
	return time.Duration(d)
}

// RetryAt is the earliest time a node may retry the revision it failed (its
// target, or with no target a revision it has not reached): the last failed
// time plus the delay for its failure count. It returns the zero time when
// the node has no failure in its way (see NodeStatus.Failing).
func (b Backoff) RetryAt(n NodeStatus) time.Time {
	if !n.Failing() || n.LastFailedTime == nil {
		return time.Time{}
	}
	return n.LastFailedTime.Add(b.Delay(n.LastFailedCount))
}
