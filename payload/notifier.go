package payload

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/clock"
)

// IsEdge reports whether next must be notified at once after last: the generation, the
// release, the reconciling flag or the presence of a failure changed.
func IsEdge(last, next Status) bool {
	return next.Generation != last.Generation || next.Actual != last.Actual ||
		next.Reconciling != last.Reconciling || (next.Failure != nil) != (last.Failure != nil)
}

// Notifier passes statuses to a function: edges (IsEdge) at once, other changes at most
// burst at a time and then one per interval, coalesced so the function always sees the
// latest status. Offer is safe for concurrent use and never blocks; Run delivers.
type Notifier struct {
	limiter *rate.Limiter
	clock   clock.Clock
	notify  func(Status)
	signal  chan struct{}

	mu      sync.Mutex
	pending Status
	has     bool
	last    Status
	sent    bool
}

// NewNotifier returns a notifier calling notify. An interval of 0 means one second, a
// burst below 1 means 1, a nil clk the real clock.
func NewNotifier(interval time.Duration, burst int, clk clock.Clock, notify func(Status)) *Notifier {
	if interval <= 0 {
		interval = time.Second
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Notifier{
		limiter: rate.NewLimiter(rate.Every(interval), max(burst, 1)),
		clock:   clk,
		notify:  notify,
		signal:  make(chan struct{}, 1),
	}
}

// Offer records s as the latest status to deliver.
func (n *Notifier) Offer(s Status) {
	n.mu.Lock()
	n.pending, n.has = s, true
	n.mu.Unlock()
	select {
	case n.signal <- struct{}{}:
	default:
	}
}

// take returns the latest offered status, if any, and whether it is an edge.
func (n *Notifier) take() (Status, bool, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.has {
		return Status{}, false, false
	}
	return n.pending, !n.sent || IsEdge(n.last, n.pending), true
}

func (n *Notifier) deliver() {
	n.mu.Lock()
	s, ok := n.pending, n.has
	n.has = false
	if ok {
		n.last, n.sent = s, true
	}
	n.mu.Unlock()
	if ok && n.notify != nil {
		n.notify(s)
	}
}

// Run delivers offered statuses until ctx ends. While a throttled status waits, a newer
// offer replaces it, and an edge is delivered at once.
func (n *Notifier) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.signal:
		}
		_, edge, ok := n.take()
		if !ok {
			continue
		}
		if !edge && !n.throttle(ctx) {
			return
		}
		n.deliver()
	}
}

// throttle waits for the limiter, or for an offer that is an edge; it returns false
// when ctx ends first.
func (n *Notifier) throttle(ctx context.Context) bool {
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
			if _, edge, _ := n.take(); edge {
				reservation.CancelAt(n.clock.Now())
				return true
			}
		}
	}
}
