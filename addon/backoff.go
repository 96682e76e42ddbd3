package addon

import (
	"math"
	"time"
)

// Backoff is an exponential backoff with a cap and jitter: the n-th
// consecutive failure waits min(Cap, Base·2^(n-1)) · (1 + Jitter·j), where j
// in [0, 1) is supplied by the caller, so tests are exact. The zero value
// takes DefaultBackoffBase, DefaultBackoffCap and DefaultBackoffJitter. To
// run without jitter, inject a jitter source that returns 0
// (Config.Jitter, Input.Jitter).
type Backoff struct {
	// Base is the first delay.
	Base time.Duration `json:"base,omitempty"`
	// Cap bounds the delay before jitter.
	Cap time.Duration `json:"cap,omitempty"`
	// Jitter is the largest fraction added to a delay, in [0, 1].
	Jitter float64 `json:"jitter,omitempty"`
}

func (b Backoff) withDefaults() Backoff {
	b.Base = orDefault(b.Base, DefaultBackoffBase)
	b.Cap = orDefault(b.Cap, DefaultBackoffCap)
	if b.Cap < b.Base {
		b.Cap = b.Base
	}
	if b.Jitter == 0 {
		b.Jitter = DefaultBackoffJitter
	}
	return b
}

// Delay returns the wait after the failures-th consecutive failure (0 and 1
// both give Base) with jitter j, clamped to [0, 1). It never overflows and
// never exceeds Cap·(1+Jitter).
func (b Backoff) Delay(failures int, j float64) time.Duration {
	b = b.withDefaults()
	if j < 0 || j != j {
		j = 0
	}
	if j >= 1 {
		j = 0.999999
	}
	d := b.Base
	for i := 1; i < failures && d < b.Cap; i++ {
		if d > b.Cap/2 {
			d = b.Cap
			break
		}
		d *= 2
	}
	extra := float64(d) * b.Jitter * j
	if extra >= float64(math.MaxInt64-d) {
		return math.MaxInt64
	}
	return d + time.Duration(extra)
}
