package payload

import (
	"context"
	"sync"
	"time"

	"github.com/converge-dev/converge"

	"golang.org/x/time/rate"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// isEdge reports whether next must be written at once after last: the generation, the
// release, the state, the interruption or the presence of a failure changed.
func isEdge(last, next *Status) bool {
	return next.ObservedGeneration != last.ObservedGeneration || next.Release != last.Release ||
		next.State != last.State || next.Interrupted != last.Interrupted ||
		(next.Failure != nil) != (last.Failure != nil)
}

// notifier writes statuses through a StatusWriter: edges (isEdge) at once, other
// changes at most one per interval, coalesced so the writer always gets the latest
// status. A write that fails is tried again with the latest status: at once after a
// conflict (the worker owns its status), after the interval otherwise. offer is safe
// for concurrent use and never blocks; run writes.
type notifier struct {
	limiter *rate.Limiter
	clock   clock.WithDelayedExecution
	write   func(context.Context, Status) error
	signal  chan struct{}

	mu      sync.Mutex
	pending Status
	has     bool
	last    Status
	sent    bool
}

func newNotifier(interval time.Duration, clk clock.WithDelayedExecution, write func(context.Context, Status) error) *notifier {
	return &notifier{
		limiter: rate.NewLimiter(rate.Every(interval), 1),
		clock:   clk,
		write:   write,
		signal:  make(chan struct{}, 1),
	}
}

// offer records s as the latest status to write.
func (n *notifier) offer(s Status) {
	n.mu.Lock()
	n.pending, n.has = s, true
	n.mu.Unlock()
	n.poke()
}

func (n *notifier) poke() {
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

// take reports whether a status waits and whether it is an edge.
func (n *notifier) take() (waiting, edge bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.has, n.has && (!n.sent || isEdge(&n.last, &n.pending))
}

// conflictRetries is how many conflicts in a row deliver answers with an
// immediate write; after that the status waits for the notify interval, so a
// writer that keeps conflicting cannot make the worker hammer the apiserver.
const conflictRetries = 3

// deliver writes the latest offered status; it reports false when the write failed
// and the status waits again. A conflict is written again at once, up to
// conflictRetries times in a row.
func (n *notifier) deliver(ctx context.Context) bool {
	n.mu.Lock()
	s, ok := n.pending, n.has
	n.has = false
	n.mu.Unlock()
	if !ok {
		return true
	}
	for attempt := 1; ; attempt++ {
		err := n.write(ctx, s)
		if err == nil {
			n.mu.Lock()
			n.last, n.sent = s, true
			n.mu.Unlock()
			return true
		}
		klog.FromContext(ctx).V(2).Info("Writing the payload status failed", "err", err)
		n.mu.Lock()
		if !n.has {
			n.pending, n.has = s, true
		}
		s = n.pending
		retryNow := converge.IsConflict(err) && ctx.Err() == nil && attempt <= conflictRetries
		if retryNow {
			n.has = false
		}
		n.mu.Unlock()
		if !retryNow {
			return false
		}
	}
}

// run writes offered statuses until ctx ends. While a throttled status waits, a newer
// offer replaces it, and an edge is written at once.
func (n *notifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		waiting, edge := n.take()
		if !waiting {
			continue
		}
		if !edge && !n.throttle(ctx) {
			return
		}
		if !n.deliver(ctx) && !n.throttle(ctx) {
			return
		}
		if waiting, _ := n.take(); waiting {
			n.poke()
		}
	}
}

// throttle waits for the limiter, or for an offer that is an edge; it returns false
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
			return true
		case <-n.signal:
			if _, edge := n.take(); edge {
				reservation.CancelAt(n.clock.Now())
				return true
			}
		}
	}
}
