package converge

import (
	"math/bits"
	"time"
)

// windowSearch looks for the changes of a list of valid windows, located
// in their zones, within a budget of steps: each turn of one of its loops,
// each of which moves the search on in time, is a step.
type windowSearch struct {
	windows []zonedWindow
	steps   int
}

// maxSteps is the budget of a search: enough to follow every window of a
// year of daily windows that keep one another closed, few enough to take
// milliseconds.
const maxSteps = 10000

// step spends one step of the budget, and reports whether there was one.
func (s *windowSearch) step() bool {
	s.steps++
	return s.steps <= maxSteps
}

// open applies Argo CD's rule at t: no active Deny window, and an active
// Allow window if there is any.
func (s *windowSearch) open(t time.Time) bool {
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

// hasAllow reports whether the list has an Allow window.
func (s *windowSearch) hasAllow() bool {
	for i := range s.windows {
		if !s.windows[i].deny {
			return true
		}
	}
	return false
}

// closesAfter returns when the open windows close: at the next start of a
// Deny window, or when the Allow windows, if there are any, stop covering
// one another; the zero time if neither comes before limit.
func (s *windowSearch) closesAfter(now, limit time.Time) time.Time {
	change, found := s.firstStart(now, true, limit) // limit if none
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
// any; the zero time if none comes before limit.
func (s *windowSearch) opensAfter(now, limit time.Time) time.Time {
	allows := s.hasAllow()
	for t := now; s.step(); {
		free, ok := s.freeFrom(t, true, limit)
		if !ok {
			return time.Time{}
		}
		if t = free; !allows || s.anyActive(t, false) {
			return t
		}
		if t, ok = s.firstStart(t, false, limit); !ok {
			return time.Time{}
		}
	}
	return time.Time{}
}

// firstStart returns the first start after t of a window of the kind deny
// says, if one comes before limit.
func (s *windowSearch) firstStart(t time.Time, deny bool, limit time.Time) (time.Time, bool) {
	first, found := limit, false
	for i := range s.windows {
		if w := &s.windows[i]; w.deny == deny {
			if n, ok := w.nextStart(t, first); ok {
				first, found = n, true
			}
		}
	}
	return first, found
}

// anyActive reports whether a window of the kind deny says is active at t.
func (s *windowSearch) anyActive(t time.Time, deny bool) bool {
	for i := range s.windows {
		if w := &s.windows[i]; w.deny == deny && w.active(t) {
			return true
		}
	}
	return false
}

// freeFrom returns the first time from t on at which no window of the
// kind deny says is active; false if the windows cover the time until
// limit, or the budget runs out first.
func (s *windowSearch) freeFrom(t time.Time, deny bool, limit time.Time) (time.Time, bool) {
	for s.step() {
		end, covered := t, false
		for i := range s.windows {
			w := &s.windows[i]
			if w.deny != deny {
				continue
			}
			if p, ok := w.lastStart(t); ok && t.Before(p.Add(w.d)) {
				e, ok := s.activeUntil(w, p, limit)
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
	return time.Time{}, false
}

// activeUntil returns when the window w, active from its start p, stops
// being active: when its duration has passed since a start that no other
// start follows within the duration; false if that is after limit, or
// the budget runs out first.
func (s *windowSearch) activeUntil(w *zonedWindow, p, limit time.Time) (time.Time, bool) {
	for s.step() {
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
	return time.Time{}, false
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
	// last remembers the last answer of lastStart: a search asks the same
	// question of each window several times.
	last struct {
		t, start time.Time
		ok, set  bool
	}
}

// lastStart returns the window's last start at or before t, if it is no
// more than its duration before t.
func (w *zonedWindow) lastStart(t time.Time) (time.Time, bool) {
	if !w.last.set || !w.last.t.Equal(t) {
		w.last.start, w.last.ok = w.searchLastStart(t)
		w.last.t, w.last.set = t, true
	}
	return w.last.start, w.last.ok
}

// searchLastStart is lastStart without its memory.
func (w *zonedWindow) searchLastStart(t time.Time) (time.Time, bool) {
	lt := t.In(w.loc)
	from := wallOf(lt)
	if end, ok := secondPass(lt); ok {
		from = end.add(-1) // each minute of the pass started at its first, before t
	}
	floor := wallOf(t.Add(-w.d).In(w.loc)).year - 1
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

// stretch returns the last start of the run from the start p in which
// each start follows the one before within the duration, as far as the
// window's reach shows it on p's UTC offset: p itself where it shows
// nothing, false if the run outlasts limit.
func (w *zonedWindow) stretch(p, limit time.Time) (time.Time, bool) {
	lp := p.In(w.loc)
	at := wallOf(lp)
	if w.reach == reachNone || lp.Second() != 0 || lp.Nanosecond() != 0 || !w.sched.matches(at) {
		return p, true // no shape to follow, or a start moved to the end of a skip
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
	if loc == time.UTC {
		return t
	}
	start, end := t.ZoneBounds()
	switch shown := wallOf(t).minutes(); {
	case shown > at.minutes():
		return start
	case shown < at.minutes():
		return end
	}
	if back := stepBack(t, start); t.Add(-back).Before(start) {
		return t.Add(-back)
	}
	return t
}

// stepBack returns how far the clock stepped back when t's UTC offset
// began at start, 0 if it did not.
func stepBack(t, start time.Time) time.Duration {
	if start.IsZero() {
		return 0
	}
	_, off := t.Zone()
	_, before := start.Add(-time.Nanosecond).Zone()
	return max(0, time.Duration(before-off)*time.Second)
}

// secondPass returns, while the clock at t shows again minutes it showed
// before it stepped back, the first minute it had not shown yet.
func secondPass(t time.Time) (wall, bool) {
	start, _ := t.ZoneBounds()
	if start.IsZero() || t.Sub(start) >= 24*time.Hour {
		return wall{}, false // no clock ever stepped back by more than a day
	}
	if end := start.Add(stepBack(t, start)); t.Before(end) {
		return wallOf(end), true
	}
	return wall{}, false
}
