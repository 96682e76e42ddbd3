package converge

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// values lists the values of a field's set.
func values(set uint64) []int {
	var out []int
	for v := 0; v < 64; v++ {
		if set&(1<<v) != 0 {
			out = append(out, v)
		}
	}
	return out
}

func TestParseScheduleReadsEveryForm(t *testing.T) {
	tests := []struct {
		name, spec     string
		field          int // the field to look at
		want           []int
		domStar, dowOr bool
	}{
		{name: "a number", spec: "5 * * * *", field: 0, want: []int{5}},
		{name: "a leading zero", spec: "05 * * * *", field: 0, want: []int{5}},
		{name: "* is the whole range", spec: "* * * * *", field: 1, want: values(1<<24 - 1)},
		{name: "a range", spec: "* 9-12 * * *", field: 1, want: []int{9, 10, 11, 12}},
		{name: "a list", spec: "0,30,15 * * * *", field: 0, want: []int{0, 15, 30}},
		{name: "a step over everything", spec: "*/15 * * * *", field: 0, want: []int{0, 15, 30, 45}},
		{name: "a step over a range", spec: "* 9-17/4 * * *", field: 1, want: []int{9, 13, 17}},
		{name: "a step longer than its range", spec: "* 9-12/7 * * *", field: 1, want: []int{9}},
		{name: "a list of ranges and steps", spec: "1-3,*/20,59 * * * *", field: 0, want: []int{0, 1, 2, 3, 20, 40, 59}},
		{name: "the days of a month start at 1", spec: "* * * * *", field: 2, want: values(1<<32 - 2)},
		{name: "month names in any case", spec: "* * * jan,Jul,DEC *", field: 3, want: []int{1, 7, 12}},
		{name: "a range of month names", spec: "* * * MAR-may *", field: 3, want: []int{3, 4, 5}},
		{name: "weekday names", spec: "* * * * MON-FRI", field: 4, want: []int{1, 2, 3, 4, 5}},
		{name: "7 is Sunday", spec: "* * * * 7", field: 4, want: []int{0}},
		{name: "0 and 7 are one Sunday", spec: "* * * * 0,7", field: 4, want: []int{0}},
		{name: "a range to 7 ends on Sunday", spec: "* * * * 5-7", field: 4, want: []int{0, 5, 6}},
		{name: "tabs and runs of spaces separate fields", spec: "\t1  2\t3 4   5 ", field: 4, want: []int{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, problem := parseSchedule(tt.spec)
			require.Empty(t, problem)
			assert.Equal(t, tt.want, values([]uint64{s.minute, s.hour, s.dom, s.month, s.dow}[tt.field]))
		})
	}
}

func TestParseScheduleSaysWhatIsWrong(t *testing.T) {
	tests := []struct{ spec, problem string }{
		{"", "want 5 fields (minute hour day-of-month month day-of-week), got 0"},
		{"0 0 * *", "want 5 fields (minute hour day-of-month month day-of-week), got 4"},
		{"0 0 * * * *", "want 5 fields (minute hour day-of-month month day-of-week), got 6"},
		{"@daily", "want 5 fields (minute hour day-of-month month day-of-week), got 1"},
		{"60 * * * *", "minute 60 is outside 0-59"},
		{"* 24 * * *", "hour 24 is outside 0-23"},
		{"* * 0 * *", "day-of-month 0 is outside 1-31"},
		{"* * 32 * *", "day-of-month 32 is outside 1-31"},
		{"* * * 13 *", "month 13 is outside 1-12"},
		{"* * * * 8", "day-of-week 8 is outside 0-7"},
		{"-1 * * * *", `minute "" is neither a number nor a name`},
		{"+1 * * * *", `minute "+1" is neither a number nor a name`},
		{"10000 * * * *", `minute "10000" is neither a number nor a name`},
		{"MON * * * *", `minute "MON" is neither a number nor a name`},
		{"* * * FOO *", `month "FOO" is neither a number nor a name`},
		{"* * ? * *", `day-of-month "?" is neither a number nor a name`},
		{"5-1 * * * *", `minute range "5-1" runs backwards`},
		{"* * * * FRI-MON", `day-of-week range "FRI-MON" runs backwards`},
		{"*/0 * * * *", `minute step "0" is outside 1-59`},
		{"*/60 * * * *", `minute step "60" is outside 1-59`},
		{"*/x * * * *", `minute step "x" is outside 1-59`},
		{"5/2 * * * *", `minute "5/2" has a step without * or a range`},
		{"1,,2 * * * *", `minute "1,,2" has an empty item`},
		{"1, * * * *", `minute "1," has an empty item`},
		{"0 0 30 2 *", "no month it names has a day it names"},
		{"0 0 31 4,6,9,11 *", "no month it names has a day it names"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, problem := parseSchedule(tt.spec)
			assert.Equal(t, tt.problem, problem)
		})
	}
}

func TestScheduleDays(t *testing.T) {
	tests := []struct {
		name, spec string
		from, want wall
	}{
		{name: "a day of month", spec: "0 0 13 * *", from: wall{2024, 1, 1, 0, 0}, want: wall{2024, 1, 13, 0, 0}},
		{name: "a weekday", spec: "0 0 * * FRI", from: wall{2024, 1, 1, 0, 0}, want: wall{2024, 1, 5, 0, 0}},
		{name: "both restricted: either matches", spec: "0 0 13 * FRI", from: wall{2024, 1, 6, 0, 0}, want: wall{2024, 1, 12, 0, 0}},
		{name: "both restricted: the day of month too", spec: "0 0 13 * FRI", from: wall{2024, 1, 12, 0, 1}, want: wall{2024, 1, 13, 0, 0}},
		{name: "a step is restricted: either matches", spec: "0 0 */10 * MON", from: wall{2024, 1, 2, 0, 0}, want: wall{2024, 1, 8, 0, 0}},
		{name: "a weekday with * days: only the weekday", spec: "0 0 * * MON", from: wall{2024, 1, 2, 0, 0}, want: wall{2024, 1, 8, 0, 0}},
		{name: "a day with * weekdays: only the day", spec: "0 0 31 * *", from: wall{2024, 4, 1, 0, 0}, want: wall{2024, 5, 31, 0, 0}},
		{name: "29 February skips 2100", spec: "0 0 29 2 *", from: wall{2097, 1, 1, 0, 0}, want: wall{2104, 2, 29, 0, 0}},
		{name: "the minute itself", spec: "30 4 * * *", from: wall{2024, 1, 1, 4, 30}, want: wall{2024, 1, 1, 4, 30}},
		{name: "over a year's end", spec: "0 0 1 JAN *", from: wall{2024, 1, 1, 0, 1}, want: wall{2025, 1, 1, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, problem := parseSchedule(tt.spec)
			require.Empty(t, problem)
			got, ok := s.next(tt.from, tt.want.year)
			require.True(t, ok)
			assert.Equal(t, tt.want, got)
			back, ok := s.prev(got, tt.from.year-1)
			require.True(t, ok)
			assert.Equal(t, tt.want, back, "prev finds the start next found")
			_, ok = s.next(tt.from, tt.want.year-1)
			assert.False(t, ok, "next searches no further than its last year")
		})
	}
}

func TestWallArithmeticAgreesWithTime(t *testing.T) {
	for _, w := range []wall{{1970, 1, 1, 0, 0}, {1969, 12, 31, 23, 59}, {2000, 2, 29, 12, 0}, {2100, 3, 1, 0, 0}, {1, 1, 1, 0, 0}, {-400, 3, 1, 0, 0}} {
		for _, n := range []int{-1, 1, 1440, -1440 * 366, 1440 * 365 * 401} {
			got := w.add(n)
			assert.Equal(t, w.minutes()+n, got.minutes(), "%v + %d", w, n)
			assert.Equal(t, n, got.minutes()-w.minutes())
		}
	}
	assert.Equal(t, wall{2024, 3, 1, 0, 0}, wall{2024, 2, 29, 23, 59}.add(1))
	assert.Equal(t, wall{2023, 12, 31, 23, 59}, wall{2024, 1, 1, 0, 0}.prevDay())
}

// fieldHas is the reference reading of one field of a schedule: whether
// its text names v, read item by item with no sets, or false if it does
// not parse.
func fieldHas(text string, f cronField, v int) bool {
	for _, item := range strings.Split(text, ",") {
		span, step := item, 1
		if i := strings.Index(item, "/"); i >= 0 {
			span = item[:i]
			n, err := strconv.Atoi(item[i+1:])
			if err != nil {
				return false
			}
			step = n
		}
		lo, hi := f.min, f.max
		if span != "*" {
			ends := strings.SplitN(span, "-", 2)
			lo = reference(ends[0], f)
			hi = lo
			if len(ends) == 2 {
				hi = reference(ends[1], f)
			}
		}
		for x := lo; x <= hi; x += step {
			if x == v || f.name == "day-of-week" && x == 7 && v == 0 {
				return true
			}
		}
	}
	return false
}

// reference reads a number or a name of f.
func reference(text string, f cronField) int {
	for i, name := range f.names {
		if strings.EqualFold(name, text) {
			return f.min + i
		}
	}
	n, _ := strconv.Atoi(text)
	return n
}

// FuzzParseSchedule holds the parser to a reference reading of each field
// and to the search: it never panics, every value it accepts the
// reference reads the same, and next and prev find the starts a minute by
// minute scan finds.
func FuzzParseSchedule(f *testing.F) {
	for _, spec := range []string{"* * * * *", "*/15 9-17/2 1,15 JAN-jun MON-FRI", "0 0 29 2 *", "0 0 13 * 5", "5-7 * 31 4 7",
		"0 0 30 2 *", "1,,2 * * * *", "*/0 * * * *", "0 2 * * SUN"} {
		f.Add(spec, int64(1_000_000))
	}
	f.Fuzz(func(t *testing.T, spec string, at int64) {
		s, problem := parseSchedule(spec)
		if problem != "" {
			return
		}
		fields := strings.Fields(spec)
		require.Len(t, fields, 5)
		sets := []uint64{s.minute, s.hour, s.dom, s.month, s.dow}
		for i, field := range cronFields {
			for v := field.min; v <= field.max; v++ {
				if i == 4 && v == 7 {
					continue
				}
				require.Equal(t, fieldHas(fields[i], field, v), sets[i]&(1<<v) != 0, "%s value %d of %q", field.name, v, spec)
			}
		}
		from := wall{2000, 1, 1, 0, 0}.add(int(at % (1440 * 365 * 80)))
		if at < 0 {
			from = wall{2000, 1, 1, 0, 0}.add(-int(-at % (1440 * 365 * 80)))
		}
		next, ok := s.next(from, from.year+9)
		require.True(t, ok, "a schedule that parses starts within 8 years")
		require.True(t, s.matches(next))
		prev, ok := s.prev(from, from.year-9)
		require.True(t, ok)
		require.True(t, s.matches(prev))
		for w, n := from, 0; w.minutes() < next.minutes() && n < 3000; w, n = w.add(1), n+1 {
			require.False(t, s.matches(w), "%v starts before next %v", w, next)
		}
		for w, n := from, 0; w.minutes() > prev.minutes() && n < 3000; w, n = w.add(-1), n+1 {
			require.False(t, s.matches(w), "%v starts after prev %v", w, prev)
		}
	})
}
