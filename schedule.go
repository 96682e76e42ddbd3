package converge

import (
	"fmt"
	"math/bits"
	"strings"
	"time"
)

// schedule is a parsed 5-field cron schedule: one bit a value of each field,
// day-of-week 7 folded into 0 (Sunday). domStar and dowStar say the field
// was written "*": when neither was, a day matches if its day of month or
// its weekday does.
type schedule struct {
	minute, hour, dom, month, dow uint64
	domStar, dowStar              bool
}

// cronField is the range and the names of one field of a schedule.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is the value min+i
}

// cronFields are the fields of a schedule, in order.
var cronFields = [5]cronField{
	{name: "minute", max: 59},
	{name: "hour", max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day-of-week", max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// parseSchedule reads a standard 5-field cron schedule ("minute hour
// day-of-month month day-of-week"): numbers, "*", ranges "a-b", lists
// "a,b", steps "*/n" and "a-b/n", and the names JAN..DEC and SUN..SAT in any
// case. It returns what is wrong with spec, "" when nothing is, and
// allocates only to say so.
func parseSchedule(spec string) (schedule, string) {
	var texts [5]string
	n := 0
	for i := 0; i < len(spec); {
		if spec[i] == ' ' || spec[i] == '\t' {
			i++
			continue
		}
		end := i
		for end < len(spec) && spec[end] != ' ' && spec[end] != '\t' {
			end++
		}
		if n < len(texts) {
			texts[n] = spec[i:end]
		}
		i, n = end, n+1
	}
	if n != len(texts) {
		return schedule{}, fmt.Sprintf("want 5 fields (minute hour day-of-month month day-of-week), got %d", n)
	}
	var sets [5]uint64
	for i, text := range texts {
		var problem string
		if sets[i], problem = parseField(text, cronFields[i]); problem != "" {
			return schedule{}, problem
		}
	}
	s := schedule{minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3],
		dow:     sets[4]&0x7f | sets[4]>>7, // 7 is Sunday, as 0 is
		domStar: texts[2] == "*", dowStar: texts[4] == "*"}
	if !s.fires() {
		return schedule{}, "no month it names has a day it names"
	}
	return s, ""
}

// parseField reads one field, a list of items, into a set of values.
func parseField(text string, f cronField) (uint64, string) {
	var set uint64
	rest := text
	for more := true; more; {
		var item string
		item, rest, more = strings.Cut(rest, ",")
		if item == "" {
			return 0, fmt.Sprintf("%s %q has an empty item", f.name, text)
		}
		span, stepText, stepped := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		if span != "*" {
			first, last, ranged := strings.Cut(span, "-")
			var problem string
			if lo, problem = f.value(first); problem != "" {
				return 0, problem
			}
			if hi = lo; ranged {
				if hi, problem = f.value(last); problem != "" {
					return 0, problem
				}
			}
			if !ranged && stepped {
				return 0, fmt.Sprintf("%s %q has a step without * or a range", f.name, item)
			}
			if lo > hi {
				return 0, fmt.Sprintf("%s range %q runs backwards", f.name, span)
			}
		}
		step := 1
		if stepped {
			if step = number(stepText); step < 1 || step > f.max {
				return 0, fmt.Sprintf("%s step %q is outside 1-%d", f.name, stepText, f.max)
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, ""
}

// value reads a number or a name of the field f.
func (f cronField) value(text string) (int, string) {
	v := number(text)
	if v < 0 {
		for i, name := range f.names {
			if strings.EqualFold(text, name) {
				return f.min + i, ""
			}
		}
		return 0, fmt.Sprintf("%s %q is neither a number nor a name", f.name, text)
	}
	if v < f.min || v > f.max {
		return 0, fmt.Sprintf("%s %d is outside %d-%d", f.name, v, f.min, f.max)
	}
	return v, ""
}

// number reads up to four decimal digits, and returns -1 for anything else.
func number(text string) int {
	if text == "" || len(text) > 4 {
		return -1
	}
	v := 0
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return -1
		}
		v = v*10 + int(text[i]-'0')
	}
	return v
}

// wall is a minute of a wall clock: a date and a time of day in no zone.
type wall struct{ year, month, day, hour, minute int }

// wallOf returns the minute t's wall clock shows, in t's location.
func wallOf(t time.Time) wall {
	y, m, d := t.Date()
	h, mi, _ := t.Clock()
	return wall{y, int(m), d, h, mi}
}

// minutes counts the minutes from 1970-01-01 00:00 to w.
func (w wall) minutes() int {
	return daysFromCivil(w.year, w.month, w.day)*1440 + w.hour*60 + w.minute
}

// add returns w moved by n minutes.
func (w wall) add(n int) wall {
	m := w.minutes() + n
	days := floorDiv(m, 1440)
	y, mo, d := civilFromDays(days)
	m -= days * 1440
	return wall{y, mo, d, m / 60, m % 60}
}

// nextDay returns the first minute of the day after w's.
func (w wall) nextDay() wall {
	if w.day < daysIn(w.year, w.month) {
		return wall{w.year, w.month, w.day + 1, 0, 0}
	}
	if w.month < 12 {
		return wall{w.year, w.month + 1, 1, 0, 0}
	}
	return wall{w.year + 1, 1, 1, 0, 0}
}

// prevDay returns the last minute of the day before w's.
func (w wall) prevDay() wall {
	switch {
	case w.day > 1:
		return wall{w.year, w.month, w.day - 1, 23, 59}
	case w.month > 1:
		return wall{w.year, w.month - 1, daysIn(w.year, w.month-1), 23, 59}
	}
	return wall{w.year - 1, 12, 31, 23, 59}
}

// matches reports whether the schedule starts at the wall-clock minute w.
func (s schedule) matches(w wall) bool {
	return s.month&(1<<w.month) != 0 && s.matchesDay(w.year, w.month, w.day) &&
		s.hour&(1<<w.hour) != 0 && s.minute&(1<<w.minute) != 0
}

// matchesDay applies the day-of-month and day-of-week fields to a date:
// both must match, or, when neither is "*", either.
func (s schedule) matchesDay(y, m, d int) bool {
	dom := s.dom&(1<<d) != 0
	if s.dowStar || (dom && !s.domStar) {
		return dom
	}
	return s.dow&(1<<floorMod(daysFromCivil(y, m, d)+4, 7)) != 0 // 1970-01-01 was a Thursday
}

// everyDay reports whether every date matches.
func (s schedule) everyDay() bool {
	const allDom, allDow, allMonths = 1<<32 - 2, 1<<7 - 1, 1<<13 - 2
	if s.month != allMonths {
		return false
	}
	if s.domStar || s.dowStar {
		return s.dom == allDom && s.dow == allDow
	}
	return s.dom == allDom || s.dow == allDow
}

// fires reports whether any date matches: a day of month that only months
// too short for it name (30 February) never comes.
func (s schedule) fires() bool {
	if s.domStar || !s.dowStar {
		return true
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) != 0 && s.dom&(1<<(daysIn(2000, m)+1)-1) != 0 {
			return true
		}
	}
	return false
}

// next returns the first minute at or after w at which the schedule
// starts, searching up to the end of the year last.
func (s schedule) next(w wall, last int) (wall, bool) {
	for w.year <= last {
		switch {
		case s.month&(1<<w.month) == 0:
			if m := nextBit(s.month, w.month); m <= 12 {
				w = wall{w.year, m, 1, 0, 0}
			} else {
				w = wall{w.year + 1, 1, 1, 0, 0}
			}
		case !s.matchesDay(w.year, w.month, w.day):
			w = w.nextDay()
		case s.hour&(1<<w.hour) == 0:
			if h := nextBit(s.hour, w.hour); h < 24 {
				w.hour, w.minute = h, 0
			} else {
				w = w.nextDay()
			}
		case s.minute&(1<<w.minute) == 0:
			if m := nextBit(s.minute, w.minute); m < 60 {
				w.minute = m
			} else if w.hour < 23 {
				w.hour, w.minute = w.hour+1, 0
			} else {
				w = w.nextDay()
			}
		default:
			return w, true
		}
	}
	return wall{}, false
}

// prev returns the last minute at or before w at which the schedule
// starts, searching back to the start of the year first.
func (s schedule) prev(w wall, first int) (wall, bool) {
	for w.year >= first {
		switch {
		case s.month&(1<<w.month) == 0:
			if m := prevBit(s.month, w.month); m >= 1 {
				w = wall{w.year, m, daysIn(w.year, m), 23, 59}
			} else {
				w = wall{w.year - 1, 12, 31, 23, 59}
			}
		case !s.matchesDay(w.year, w.month, w.day):
			w = w.prevDay()
		case s.hour&(1<<w.hour) == 0:
			if h := prevBit(s.hour, w.hour); h >= 0 {
				w.hour, w.minute = h, 59
			} else {
				w = w.prevDay()
			}
		case s.minute&(1<<w.minute) == 0:
			if m := prevBit(s.minute, w.minute); m >= 0 {
				w.minute = m
			} else if w.hour > 0 {
				w.hour, w.minute = w.hour-1, 59
			} else {
				w = w.prevDay()
			}
		default:
			return w, true
		}
	}
	return wall{}, false
}

// nextBit returns the lowest value of set at or above from, 64 if none.
func nextBit(set uint64, from int) int { return bits.TrailingZeros64(set >> from << from) }

// prevBit returns the highest value of set at or below upto, -1 if none.
func prevBit(set uint64, upto int) int { return 63 - bits.LeadingZeros64(set<<(63-upto)>>(63-upto)) }

// daysIn returns the number of days of month m of year y.
func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil counts the days from 1970-01-01 to a date of the proleptic
// Gregorian calendar (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int) int {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	return era*146097 + yoe*365 + yoe/4 - yoe/100 + doy - 719468
}

// civilFromDays is the date days after 1970-01-01.
func civilFromDays(days int) (y, m, d int) {
	days += 719468
	era := floorDiv(days, 146097)
	doe := days - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d, m = doy-(153*mp+2)/5+1, (mp+2)%12+1
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// floorDiv and floorMod round towards minus infinity.
func floorDiv(a, b int) int { return (a - floorMod(a, b)) / b }

func floorMod(a, b int) int { return (a%b + b) % b }
