package converge

import (
	"math/bits"
	"time"
)

// windowSet is a list of valid windows, located in their zones, and how
// far to look for a change.
type windowSet struct {
	windows []zonedWindow
	limit   time.Time
}

// open applies Argo CD's rule at t: no active Deny window, and an active
// Allow window if there is any.
func (s windowSet) open(t time.Time) bool {
	allows, allowed := false, false
	for i := range s.windows {
		w := &s.windows[i]
		switch {
		case w.deny && w.active(t):
			return false
		case !w.deny && !allowed:
			allows, allowed = true, w.active(t)
		}
	}
	return allowed || !allows
}

// hasAllow reports whether the set has an Allow window.
func (s windowSet) hasAllow() bool {
	for _, w := range s.windows {
		if !w.deny {
			return true
		}
	}
	return false
}

// closesAfter returns when the open windows close: at the next start of a
// Deny window, or when the Allow windows stop covering one another, if
// there are any; the zero time if neither comes before the limit.
func (s windowSet) closesAfter(now time.Time) time.Time {
	change, found := s.limit, false
	for i := range s.windows {
		if w := &s.windows[i]; w.deny {
			if n, ok := w.nextStart(now, change); ok {
				change, found = n, true
			}
		}
	}
	if s.hasAllow() {
		if e, ok := s.freeFrom(now, false, change); ok {
			change, found = e, true
		}
	}
	if !found {
		return time.Time{}
	}
	return change
}

// opensAfter returns when the closed windows open: the first time after
// now that no Deny window covers, inside an Allow window if there are
// any; the zero time if none comes before the limit.
func (s windowSet) opensAfter(now time.Time) time.Time {
	allows := s.hasAllow()
	for t := now; ; {
		free, ok := s.freeFrom(t, true, s.limit)
		if !ok {
			return time.Time{}
		}
		if t = free; !allows || s.anyActive(t, false) {
			return t
		}
		next, found := s.limit, false
		for i := range s.windows {
			if w := &s.windows[i]; !w.deny {
				if n, ok := w.nextStart(t, next); ok {
					next, found = n, true
				}
			}
		}
		if !found {
			return time.Time{}
		}
		t = next
	}
}

// anyActive reports whether a window of the kind deny says is active at t.
func (s windowSet) anyActive(t time.Time, deny bool) bool {
	for i := range s.windows {
		if w := &s.windows[i]; w.deny == deny && w.active(t) {
			return true
		}
	}
	return false
}

// freeFrom returns the first time from t on at which no window of the
// kind deny says is active; false if the windows cover the time until
// limit.
func (s windowSet) freeFrom(t time.Time, deny bool, limit time.Time) (time.Time, bool) {
	for {
		end, covered := t, false
		for i := range s.windows {
			w := &s.windows[i]
			if w.deny != deny {
				continue
			}
			if p, ok := w.lastStart(t); ok && t.Before(p.Add(w.d)) {
				e, ok := w.activeUntil(p, limit)
				if !ok {
					return time.Time{}, false
				}
				end, covered = later(end, e), true
			}
		}
		if !covered {
			return t, true
		}
		t = end
	}
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// zonedWindow is a valid window ready to evaluate: its schedule, its kind,
// its duration, its location, and how far its starts follow one another
// within its duration by the schedule's shape alone (reachOf).
type zonedWindow struct {
	sched schedule
	deny  bool
	d     time.Duration
	loc   *time.Location
	reach reach
}

// lastStart returns the window's last start at or before t, if it is no
// more than its duration (or the horizon) before t.
func (w *zonedWindow) lastStart(t time.Time) (time.Time, bool) {
	lt := t.In(w.loc)
	from := wallOf(lt)
	if end, ok := secondPass(lt); ok {
		from = end.add(-1) // each minute of the pass started at its first, before t
	}
	floor := wallOf(t.Add(-min(w.d, windowHorizon)).In(w.loc)).year - 1
	p, ok := w.sched.prev(from, floor)
	if !ok {
		return time.Time{}, false
	}
	return instant(p, w.loc), true
}

// active reports whether the window is active at t: it started less than
// its duration before.
func (w *zonedWindow) active(t time.Time) bool {
	p, ok := w.lastStart(t)
	return ok && t.Before(p.Add(w.d))
}

// nextStart returns the window's first start after t, if it is no later
// than limit.
func (w *zonedWindow) nextStart(t, limit time.Time) (time.Time, bool) {
	lt := t.In(w.loc)
	last := wallOf(limit.In(w.loc)).year + 1
	from := wallOf(lt).add(1)
	if end, ok := secondPass(lt); ok {
		from = end // each minute of the pass started at its first, before t
	}
	for {
		n, ok := w.sched.next(from, last)
		if !ok {
			return time.Time{}, false
		}
		if a := instant(n, w.loc); a.After(t) {
			return a, !a.After(limit)
		}
		from = n.add(1) // a minute shown before t by a clock that stepped back twice
	}
}

// activeUntil returns when the window, active from its start p, stops
// being active: when its duration has passed since a start that no other
// start follows within the duration; false if that is after limit.
func (w *zonedWindow) activeUntil(p, limit time.Time) (time.Time, bool) {
	for {
		var ok bool
		if p, ok = w.stretch(p, limit); !ok {
			return time.Time{}, false
		}
		end := p.Add(w.d)
		if end.After(limit) {
			return time.Time{}, false
		}
		n, ok := w.nextStart(p, end)
		if !ok {
			return end, true
		}
		p = n
	}
}

// stretch returns the last start of the run from the start p in which
// each start follows the one before within the duration, as far as the
// window's reach shows it on p's UTC offset: p itself where it shows
// nothing, false if the run outlasts limit.
func (w *zonedWindow) stretch(p, limit time.Time) (time.Time, bool) {
	lp := p.In(w.loc)
	at := wallOf(lp)
	if w.reach == reachNone || lp.Second() != 0 || lp.Nanosecond() != 0 || !w.sched.matches(at) {
		return p, true // a start the clock moved past a skip has no shape
	}
	_, zoneEnd := lp.ZoneBounds()
	if w.reach == reachAlways {
		if zoneEnd.IsZero() || zoneEnd.After(limit) {
			return time.Time{}, false
		}
		if q, ok := w.lastStart(zoneEnd.Add(-time.Nanosecond)); ok && q.After(p) {
			return q, true
		}
		return p, true
	}
	for r := w.reach; r > reachNone; r-- {
		end := at
		if r == reachDay {
			end.hour = prevBit(w.sched.hour, 63)
		}
		end.minute = prevBit(w.sched.minute, 63)
		if q := p.Add(time.Duration(end.minutes()-at.minutes()) * time.Minute); zoneEnd.IsZero() || q.Before(zoneEnd) {
			return q, true
		}
	}
	return p, true
}

// reach is how far a window's starts follow one another within its
// duration by its schedule's shape alone, on one UTC offset: from any
// start to the last start of its hour, of its day, or forever.
type reach int

// The reaches of a window.
const (
	reachNone reach = iota
	reachHour
	reachDay
	reachAlways
)

// reachOf returns the reach of a window with schedule s and duration d.
func reachOf(s schedule, d time.Duration) reach {
	within := func(minutes int) bool { return time.Duration(minutes)*time.Minute <= d }
	first, last := nextBit(s.minute, 0), prevBit(s.minute, 63)
	switch {
	case !within(widestGap(s.minute)):
		return reachNone
	case !within(widestGap(s.hour)*60 + first - last):
		return reachHour
	case !s.everyDay() || !within((24+nextBit(s.hour, 0)-prevBit(s.hour, 63))*60+first-last):
		return reachDay
	}
	return reachAlways
}

// widestGap returns the largest difference between two consecutive values
// of set, 0 if it has fewer than two.
func widestGap(set uint64) int {
	gap, prev := 0, -1
	for ; set != 0; set &= set - 1 {
		v := bits.TrailingZeros64(set)
		if prev >= 0 {
			gap = max(gap, v-prev)
		}
		prev = v
	}
	return gap
}

// instant returns when the wall-clock minute at starts in loc: the first
// time the clock shows it, or, if the clock skips it, when the clock jumps
// past it.
func instant(at wall, loc *time.Location) time.Time {
	t := time.Date(at.year, time.Month(at.month), at.day, at.hour, at.minute, 0, 0, loc)
	start, end := t.ZoneBounds()
	switch shown := wallOf(t).minutes(); {
	case shown > at.minutes():
		return start
	case shown < at.minutes():
		return end
	}
	if start, back := stepBack(t); t.Add(-back).Before(start) {
		return t.Add(-back)
	}
	return t
}

// stepBack returns when t's UTC offset began and how far the clock
// stepped back then, 0 if it did not.
func stepBack(t time.Time) (time.Time, time.Duration) {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return start, 0
	}
	_, off := t.Zone()
	_, before := start.Add(-time.Nanosecond).Zone()
	return start, max(0, time.Duration(before-off)*time.Second)
}

// secondPass returns, while the clock at t shows again minutes it showed
// before it stepped back, the first minute it had not shown yet.
func secondPass(t time.Time) (wall, bool) {
	start, back := stepBack(t)
	if end := start.Add(back); t.Before(end) {
		return wallOf(end), true
	}
	return wall{}, false
}
