package payload

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// lessProgress reports whether a has done a smaller fraction of its payload than b,
// comparing Done/Total exactly; a Total of 0 is a fraction of 0.
func lessProgress(a, b Status) bool {
	an, ad := fraction(a)
	bn, bd := fraction(b)
	return an*bd < bn*ad
}

func fraction(s Status) (num, den int64) {
	if s.Total <= 0 {
		return 0, 1
	}
	return int64(s.Done), int64(s.Total)
}

// NextStatus decides what to publish when an apply that started from baseline reports
// next at now. It returns false, and baseline, when next must be dropped: baseline
// failed, next has no failure, both are about the same release, and next has done a
// smaller fraction of the payload — a retry must not make progress appear to go
// backwards. Otherwise it returns next with LastProgress set to now (truncated to
// seconds) when the fraction done or the completed count grew, or a new release is
// applied without failure, and kept from baseline otherwise; a zero Generation is taken
// from baseline.
func NextStatus(baseline, next Status, now time.Time) (Status, bool) {
	if baseline.Failure != nil && next.Failure == nil && baseline.Actual == next.Actual && lessProgress(next, baseline) {
		return baseline, false
	}
	if lessProgress(baseline, next) || next.Completed > baseline.Completed ||
		(next.Failure == nil && next.Actual != baseline.Actual) {
		next.LastProgress = metav1.NewTime(now.Truncate(time.Second))
	} else {
		next.LastProgress = baseline.LastProgress
	}
	if next.Generation == 0 {
		next.Generation = baseline.Generation
	}
	return next, true
}

// Reporter publishes the statuses of one apply through NextStatus, against the status
// the apply started from. It is safe for concurrent use.
type Reporter struct {
	mu       sync.Mutex
	baseline Status
	clock    clock.PassiveClock
	publish  func(Status)
}

// NewReporter returns a reporter for an apply that started from baseline; publish
// receives every status that is not dropped (nil publishes nowhere); a nil clk is the
// real clock.
func NewReporter(baseline Status, clk clock.PassiveClock, publish func(Status)) *Reporter {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if publish == nil {
		publish = func(Status) {}
	}
	return &Reporter{baseline: baseline, clock: clk, publish: publish}
}

// Report publishes next unless NextStatus drops it, and reports whether it published.
func (r *Reporter) Report(next Status) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	status, ok := NextStatus(r.baseline, next, r.clock.Now())
	if ok {
		r.publish(status)
	}
	return ok
}
