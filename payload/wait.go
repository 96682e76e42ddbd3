package payload

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// boundWaits keeps every wait the status holds within its own length from now, so
// that neither a clock that stepped back nor a replica whose clock runs behind the
// one that wrote the status makes a wait longer than what set it: a next apply due
// further from now than the interval (after a completed apply) or than the backoff at
// its largest jitter (after a failed one) is pulled back to now plus that length, and
// a LastProgressTime in the future, from which a failure of
// EffectFailAfterInterval counts its interval, becomes now.
func boundWaits(s *Status, p Policy, now time.Time) {
	if s.NextApplyTime != nil {
		longest := p.Interval.Duration
		if s.Failures > 0 {
			longest = p.Backoff.Delay(s.Failures, 1)
		}
		if latest := dueAfter(now, longest); s.NextApplyTime.After(latest.Time) {
			s.NextApplyTime = latest
		}
	}
	if s.LastProgressTime != nil && s.LastProgressTime.After(now) {
		at := metav1.NewTime(now.Truncate(time.Second))
		s.LastProgressTime = &at
	}
}
