package payload_test

import (
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// simClock is the simulated world's time: it moves only when the simulator steps it,
// and its timers fire one at a time, in the order of their due times (then of their
// arming), so that a schedule replays exactly. Its timers measure the time that
// passes, as a process's do; what a process's clock reads is an offsetClock over it.
// It is safe for concurrent use.
type simClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers []*simTimer // armed, not fired, not stopped
}

var _ clock.WithDelayedExecution = (*simClock)(nil)

// simTimer is a timer, a ticker or an AfterFunc of a simClock.
type simTimer struct {
	clk    *simClock
	c      chan time.Time
	f      func()
	period time.Duration
	due    time.Time
	seq    int
}

func newSimClock(now time.Time) *simClock { return &simClock{now: now} }

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *simClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *simClock) NewTimer(d time.Duration) clock.Timer {
	t := &simTimer{clk: c, c: make(chan time.Time, 1)}
	c.arm(t, d)
	return t
}

func (c *simClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c *simClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &simTimer{clk: c, f: f}
	c.arm(t, d)
	return t
}

func (c *simClock) Sleep(d time.Duration) { <-c.After(d) }

func (c *simClock) Tick(d time.Duration) <-chan time.Time {
	t := &simTimer{clk: c, c: make(chan time.Time, 1), period: d}
	c.arm(t, d)
	return t.c
}

// arm makes t due after d; a timer due now fires at once.
func (c *simClock) arm(t *simTimer, d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	active := c.disarm(t)
	c.seq++
	t.due, t.seq = c.now.Add(d), c.seq
	if d <= 0 {
		c.fire(t)
		return active
	}
	c.timers = append(c.timers, t)
	return active
}

// disarm removes t from the armed timers and reports whether it was armed; the caller
// holds mu.
func (c *simClock) disarm(t *simTimer) bool {
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// fire delivers t at c.now; the caller holds mu. A ticker is armed again.
func (c *simClock) fire(t *simTimer) {
	if t.f != nil {
		go t.f() // AfterFunc runs f in its own goroutine
	} else {
		select {
		case t.c <- c.now:
		default:
		}
	}
	if t.period > 0 {
		c.seq++
		t.due, t.seq = c.now.Add(t.period), c.seq
		c.timers = append(c.timers, t)
	}
}

// next returns the due time of the timer that fires next, false when none is armed.
func (c *simClock) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.first()
	if t == nil {
		return time.Time{}, false
	}
	return t.due, true
}

// first is the armed timer that fires next; the caller holds mu.
func (c *simClock) first() *simTimer {
	var first *simTimer
	for _, t := range c.timers {
		if first == nil || t.due.Before(first.due) || (t.due.Equal(first.due) && t.seq < first.seq) {
			first = t
		}
	}
	return first
}

// advance moves the clock to at, firing nothing.
func (c *simClock) advance(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
}

// fireNext moves the clock to the due time of the timer that fires next, if later, and
// fires that one timer; false when none is armed.
func (c *simClock) fireNext() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.first()
	if t == nil {
		return false
	}
	if t.due.After(c.now) {
		c.now = t.due
	}
	c.disarm(t)
	c.fire(t)
	return true
}

func (t *simTimer) C() <-chan time.Time { return t.c }

func (t *simTimer) Stop() bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	return t.clk.disarm(t)
}

func (t *simTimer) Reset(d time.Duration) bool { return t.clk.arm(t, d) }

// offsetClock reads its clock's time plus an offset: a process's clock, which runs
// ahead or behind from the start (a replica) and steps when it is set. Its timers are
// its clock's, and measure the time that passes whatever the clock reads, as
// time.Time's monotonic reading does.
type offsetClock struct {
	clock.WithDelayedExecution
	mu     sync.Mutex
	offset time.Duration
}

// Now is what the process's clock reads.
func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.WithDelayedExecution.Now().Add(c.offset)
}

func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// jump steps what the clock reads by d, as an operator or NTP does.
func (c *offsetClock) jump(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// skew is how far the clock reads from its clock's time.
func (c *offsetClock) skew() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset
}
