package payload

import (
	"context"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
)

// isEdge reports whether next must be written at once after last: the generation, the
// release, the state, the interruption or the presence of a failure changed.
func isEdge(last, next *Status) bool {
	return next.ObservedGeneration != last.ObservedGeneration || next.Release != last.Release ||
		next.State != last.State || next.Interrupted != last.Interrupted ||
		(next.Failure != nil) != (last.Failure != nil)
}

// notifier writes the worker's status through a StatusWriter: edges (isEdge) at once,
// other changes at most one per interval, coalesced. It reads the status to write from
// the worker when it writes (latest), never from a copy handed over earlier, so that
// writes follow the status in order: progress a write persists never goes back within
// a release. A write that fails is tried again with the latest status: at once after a
// conflict (the worker owns its status), after the interval otherwise, or at once when
// the status changes by an edge again; a poke that brings no change does not retry it.
// poke is safe for concurrent use and never blocks; run and deliver write, one at a
// time.
type notifier struct {
	limiter *rate.Limiter
	clock   clock.WithDelayedExecution
	// latest returns the worker's status and its version, which grows with every change.
	latest func() (Status, uint64)
	write  func(context.Context, Status) error
	signal chan struct{}

	// The status written last and its version, and the version tried last, owned by
	// whoever writes.
	last    Status
	version uint64
	sent    bool
	tried   uint64
}

func newNotifier(interval time.Duration, clk clock.WithDelayedExecution, latest func() (Status, uint64), write func(context.Context, Status) error) *notifier {
	return &notifier{
		limiter: rate.NewLimiter(rate.Every(interval), 1),
		clock:   clk,
		latest:  latest,
		write:   write,
		signal:  make(chan struct{}, 1),
	}
}

// poke says the status changed.
func (n *notifier) poke() {
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

// take reports whether a status not written yet waits, and whether it is an edge not
// tried yet, to be written at once.
func (n *notifier) take() (waiting, edge bool) {
	s, v := n.latest()
	if n.sent && v == n.version {
		return false, false
	}
	return true, (!n.sent || isEdge(&n.last, &s)) && v != n.tried
}

// conflictRetries is how many conflicts in a row deliver answers with an
// immediate write; after that the status waits for the notify interval, so a
// writer that keeps conflicting cannot make the worker hammer the apiserver.
const conflictRetries = 3

// deliver writes the latest status unless it is written already; it reports false
// when the write failed and the status waits again. A conflict is written again at
// once, with the latest status, up to conflictRetries times in a row.
func (n *notifier) deliver(ctx context.Context) bool {
	for attempt := 1; ; attempt++ {
		s, v := n.latest()
		if n.sent && v == n.version {
			return true
		}
		n.tried = v
		err := n.write(ctx, s)
		if err == nil {
			n.last, n.version, n.sent = s, v, true
			return true
		}
		klog.FromContext(ctx).V(2).Info("Writing the payload status failed", "err", err)
		if !converge.IsConflict(err) || ctx.Err() != nil || attempt > conflictRetries {
			return false
		}
	}
}

// run writes the status as it changes, until ctx ends. While a throttled status
// waits, a newer one takes its place, and an edge is written at once. A write that
// failed is tried again once the limiter allows, or at once for a new edge.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
		case <-n.signal:
		}
		if ctx.Err() != nil { // an end that comes with a change wins: Start writes the last status
			return
		}
		waiting, edge := n.take()
		if !waiting {
			continue
		}
		if !edge && !n.throttle(ctx) {
			return
		}
		for !n.deliver(ctx) {
			if !n.throttle(ctx) {
				return
			}
		}
		if waiting, _ := n.take(); waiting {
			n.poke()
		}
	}
}

// throttle waits for the limiter, or for a change that is an edge; it returns false
// when ctx ends first.
func (n *notifier) throttle(ctx context.Context) bool {
	now := n.clock.Now()
	reservation := n.limiter.ReserveN(now, 1)
	delay := reservation.DelayFrom(now)
	if delay <= 0 {
		return true
	}
	timer := n.clock.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-timer.C():
			return ctx.Err() == nil
		case <-n.signal:
			if ctx.Err() != nil {
				return false
			}
			if _, edge := n.take(); edge {
				reservation.CancelAt(n.clock.Now())
				return true
			}
		}
	}
}
