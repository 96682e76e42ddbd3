package converge_test

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the machine has

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

func window(kind converge.WindowKind, schedule string, d time.Duration, zone string) converge.Window {
	return converge.Window{Kind: kind, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: zone}
}

func allow(schedule string, d time.Duration) converge.Window {
	return window(converge.WindowAllow, schedule, d, "")
}

func deny(schedule string, d time.Duration) converge.Window {
	return window(converge.WindowDeny, schedule, d, "")
}

// at reads an RFC 3339 time, "" as the zero time.
func at(t *testing.T, s string) time.Time {
	t.Helper()
	if s == "" {
		return time.Time{}
	}
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

// windowCase is one row of a WindowsOpen table: at now, the windows are
// open or not, until change ("" for no change found).
type windowCase struct {
	name    string
	windows []converge.Window
	now     string
	open    bool
	change  string
}

// runWindowCases checks each row, and that the state holds until the
// change and turns there.
func runWindowCases(t *testing.T, zones converge.Zones, tests []windowCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now, want := at(t, tt.now), at(t, tt.change)
			open, change, err := converge.WindowsOpen(tt.windows, zones, now)
			require.NoError(t, err)
			assert.Equal(t, tt.open, open, "open")
			assert.Equal(t, want.UTC().Format(time.RFC3339Nano), change.UTC().Format(time.RFC3339Nano), "change")
			if change.IsZero() {
				return
			}
			before, _, err := converge.WindowsOpen(tt.windows, zones, change.Add(-time.Nanosecond))
			require.NoError(t, err)
			assert.Equal(t, tt.open, before, "just before the change")
			after, _, err := converge.WindowsOpen(tt.windows, zones, change)
			require.NoError(t, err)
			assert.Equal(t, !tt.open, after, "at the change")
		})
	}
}

func TestWindowsOpenFollowsArgoCDsRule(t *testing.T) {
	h := time.Hour
	runWindowCases(t, nil, []windowCase{
		{name: "no window is always open", now: "2024-06-03T12:00:00Z", open: true},
		{name: "inside an Allow window: open until it ends", windows: []converge.Window{allow("0 22 * * *", 8*h)},
			now: "2024-06-03T23:00:00Z", open: true, change: "2024-06-04T06:00:00Z"},
		{name: "outside every Allow window: closed until one starts", windows: []converge.Window{allow("0 22 * * *", 8*h)},
			now: "2024-06-03T12:00:00Z", change: "2024-06-03T22:00:00Z"},
		{name: "a window that started before now and lasts past it is active", windows: []converge.Window{allow("0 22 * * FRI", 60*h)},
			now: "2024-06-09T09:00:00Z", open: true, change: "2024-06-10T10:00:00Z"},
		{name: "the end of a window is outside it", windows: []converge.Window{allow("0 22 * * *", 8*h)},
			now: "2024-06-04T06:00:00Z", change: "2024-06-04T22:00:00Z"},
		{name: "Allow windows that overlap stay open until the last ends",
			windows: []converge.Window{allow("0 8 * * MON-FRI", 9*h), allow("0 16 * * MON-FRI", 4*h)},
			now:     "2024-06-03T10:00:00Z", open: true, change: "2024-06-03T20:00:00Z"},
		{name: "a window that starts as the one before ends continues it", windows: []converge.Window{allow("0 */6 * * *", 6*h)},
			now: "2024-06-03T10:00:00Z", open: true},
		{name: "a Deny window closes an active Allow window until it ends",
			windows: []converge.Window{allow("0 0 * * *", 24*h), deny("0 12 * * *", 2*h)},
			now:     "2024-06-03T12:30:00Z", change: "2024-06-03T14:00:00Z"},
		{name: "a Deny window that outlasts the Allow window closes until the next Allow start",
			windows: []converge.Window{allow("0 20 * * *", 4*h), deny("0 23 * * *", 2*h)},
			now:     "2024-06-03T23:30:00Z", change: "2024-06-04T20:00:00Z"},
		{name: "open inside an Allow window until a Deny window starts",
			windows: []converge.Window{allow("0 20 * * *", 4*h), deny("0 23 * * *", 2*h)},
			now:     "2024-06-03T21:00:00Z", open: true, change: "2024-06-03T23:00:00Z"},
		{name: "with Deny windows alone, open until one starts", windows: []converge.Window{deny("0 0 24 12 *", 48*h)},
			now: "2024-12-01T00:00:00Z", open: true, change: "2024-12-24T00:00:00Z"},
		{name: "with Deny windows alone, closed until it ends", windows: []converge.Window{deny("0 0 24 12 *", 48*h)},
			now: "2024-12-25T09:00:00Z", change: "2024-12-26T00:00:00Z"},
		{name: "a Deny window of every minute closes UTC windows for good", windows: []converge.Window{deny("* * * * *", time.Minute)},
			now: "2024-06-03T12:00:00Z"},
		{name: "an Allow window that a Deny window always covers never opens",
			windows: []converge.Window{allow("0 1 * * *", h), deny("0 0 * * *", 3*h)},
			now:     "2024-06-03T12:00:00Z"},
		{name: "a yearly window is found a year ahead", windows: []converge.Window{allow("0 0 1 JAN *", h)},
			now: "2024-01-01T00:30:00Z", open: true, change: "2024-01-01T01:00:00Z"},
		{name: "a yearly window opens a year later", windows: []converge.Window{allow("0 0 1 JAN *", h)},
			now: "2024-01-01T01:00:00Z", change: "2025-01-01T00:00:00Z"},
		{name: "29 February is found in a leap year", windows: []converge.Window{allow("0 0 29 2 *", 24*h)},
			now: "2027-03-01T00:00:00Z", change: "2028-02-29T00:00:00Z"},
		{name: "a 29 February more than 400 days away is not found", windows: []converge.Window{allow("0 0 29 2 *", 24*h)},
			now: "2025-03-01T00:00:00Z"},
		{name: "a window of many years that started on a 29 February is active", windows: []converge.Window{deny("0 0 29 2 *", 3*366*24*h)},
			now: "2027-02-01T00:00:00Z", change: "2027-03-03T00:00:00Z"},
		{name: "windows that start one another every minute for weeks are not followed",
			windows: []converge.Window{allow("*/2 * * * *", time.Minute), allow("1-59/2 * 1-20 * *", time.Minute)},
			now:     "2024-06-01T00:00:00Z", open: true},
		{name: "windows that start one another every minute for days are followed",
			windows: []converge.Window{allow("*/2 * * * *", time.Minute), allow("1-59/2 * 1-2 * *", time.Minute)},
			now:     "2024-06-01T00:00:00Z", open: true, change: "2024-06-03T00:01:00Z"},
		{name: "a day of month or a weekday starts it when neither is *", windows: []converge.Window{allow("0 0 13 * FRI", h)},
			now: "2024-09-01T00:00:00Z", change: "2024-09-06T00:00:00Z"},
	})
}

func TestWindowsOpenAcrossDaylightSavingTime(t *testing.T) {
	zones, err := converge.Zones(nil).Load([]converge.Window{
		{TimeZone: "Europe/Berlin"}, {TimeZone: "America/New_York"}, {TimeZone: "Australia/Lord_Howe"}})
	require.NoError(t, err)
	h := time.Hour
	berlin := func(kind converge.WindowKind, s string, d time.Duration) []converge.Window {
		return []converge.Window{window(kind, s, d, "Europe/Berlin")}
	}
	newYork := func(s string) []converge.Window {
		return []converge.Window{window(converge.WindowAllow, s, h, "America/New_York")}
	}
	runWindowCases(t, zones, []windowCase{
		// Berlin springs forward on 2024-03-31 from 02:00 CET to 03:00 CEST (01:00Z).
		{name: "Berlin: a start the clock skips starts when it jumps", windows: berlin(converge.WindowAllow, "30 2 * * *", h),
			now: "2024-03-31T00:00:00Z", change: "2024-03-31T01:00:00Z"},
		{name: "Berlin: from the jump, it lasts its duration", windows: berlin(converge.WindowAllow, "30 2 * * *", h),
			now: "2024-03-31T01:30:00Z", open: true, change: "2024-03-31T02:00:00Z"},
		{name: "Berlin: the day after, it starts at 02:30 CEST", windows: berlin(converge.WindowAllow, "30 2 * * *", h),
			now: "2024-03-31T12:00:00Z", change: "2024-04-01T00:30:00Z"},
		{name: "Berlin: the minutes the clock skips start it once, when it jumps", windows: berlin(converge.WindowAllow, "* 2 * * *", time.Minute),
			now: "2024-03-31T01:00:30Z", open: true, change: "2024-03-31T01:01:00Z"},
		{name: "Berlin: after the jump, it starts at 02:00 CEST the next day", windows: berlin(converge.WindowAllow, "* 2 * * *", time.Minute),
			now: "2024-03-31T01:01:00Z", change: "2024-04-01T00:00:00Z"},
		// Berlin falls back on 2024-10-27 from 03:00 CEST to 02:00 CET (01:00Z).
		{name: "Berlin: a start the clock shows twice starts at the first", windows: berlin(converge.WindowAllow, "30 2 * * *", h),
			now: "2024-10-26T12:00:00Z", change: "2024-10-27T00:30:00Z"},
		{name: "Berlin: from the first, it lasts an hour of elapsed time", windows: berlin(converge.WindowAllow, "30 2 * * *", h),
			now: "2024-10-27T00:45:00Z", open: true, change: "2024-10-27T01:30:00Z"},
		{name: "Berlin: the second 02:30 starts nothing", windows: berlin(converge.WindowAllow, "30 2 * * *", h),
			now: "2024-10-27T01:30:00Z", change: "2024-10-28T01:30:00Z"},
		{name: "Berlin: in the second pass, a start of the first pass still counts", windows: berlin(converge.WindowAllow, "* * * * *", 59*time.Minute),
			now: "2024-10-27T01:28:00Z", open: true, change: "2024-10-27T01:58:00Z"},
		{name: "Berlin: a daily 24-hour Deny window leaves the 25th hour of the day open", windows: berlin(converge.WindowDeny, "0 0 * * *", 24*h),
			now: "2024-10-01T00:00:00Z", change: "2024-10-27T22:00:00Z"},
		{name: "Berlin: and closes at the next midnight", windows: berlin(converge.WindowDeny, "0 0 * * *", 24*h),
			now: "2024-10-27T22:30:00Z", open: true, change: "2024-10-27T23:00:00Z"},
		{name: "Berlin: a Deny window of every minute opens for the hour shown twice", windows: berlin(converge.WindowDeny, "* * * * *", time.Minute),
			now: "2024-06-01T00:00:00Z", change: "2024-10-27T01:00:00Z"},
		// New York springs forward on 2024-03-10 from 02:00 EST to 03:00 EDT (07:00Z)
		// and falls back on 2024-11-03 from 02:00 EDT to 01:00 EST (06:00Z).
		{name: "New York: a start the clock skips starts when it jumps", windows: newYork("30 2 * * *"),
			now: "2024-03-10T06:00:00Z", change: "2024-03-10T07:00:00Z"},
		{name: "New York: a start the clock shows twice starts at the first", windows: newYork("30 1 * * *"),
			now: "2024-11-03T04:00:00Z", change: "2024-11-03T05:30:00Z"},
		{name: "New York: the second 01:30 starts nothing", windows: newYork("30 1 * * *"),
			now: "2024-11-03T06:45:00Z", change: "2024-11-04T06:30:00Z"},
		// Lord Howe springs forward by 30 minutes on 2024-10-06, from 02:00 to 02:30 (15:30Z).
		{name: "Lord Howe: a start in the half hour skipped starts at 02:30",
			windows: []converge.Window{window(converge.WindowAllow, "15 2 * * *", h, "Australia/Lord_Howe")},
			now:     "2024-10-05T15:00:00Z", change: "2024-10-05T15:30:00Z"},
	})
}

func TestValidateWindowsNamesTheWindowAndTheField(t *testing.T) {
	tests := []struct {
		name    string
		windows []converge.Window
		problem string
	}{
		{name: "no window is valid"},
		{name: "windows of both kinds in zones are valid", windows: []converge.Window{
			allow("0 22 * * MON-FRI", 8*time.Hour), window(converge.WindowDeny, "0 0 24 DEC *", 48*time.Hour, "Europe/Berlin")}},
		{name: "a kind is required", windows: []converge.Window{{Schedule: "* * * * *", Duration: metav1.Duration{Duration: time.Hour}}},
			problem: `converge: invalid window: window 0: kind "" is neither Allow nor Deny`},
		{name: "kinds are case-sensitive", windows: []converge.Window{window("allow", "* * * * *", time.Hour, "")},
			problem: `converge: invalid window: window 0: kind "allow" is neither Allow nor Deny`},
		{name: "a schedule that does not parse", windows: []converge.Window{allow("0 25 * * *", time.Hour)},
			problem: `converge: invalid window: window 0: schedule "0 25 * * *": hour 25 is outside 0-23`},
		{name: "a schedule that never starts", windows: []converge.Window{allow("0 0 30 2 *", time.Hour)},
			problem: `converge: invalid window: window 0: schedule "0 0 30 2 *": no month it names has a day it names`},
		{name: "a duration is required", windows: []converge.Window{allow("* * * * *", 0)},
			problem: `converge: invalid window: window 0: duration 0s is not positive`},
		{name: "a negative duration", windows: []converge.Window{allow("* * * * *", -time.Second)},
			problem: `converge: invalid window: window 0: duration -1s is not positive`},
		{name: "the machine's zone", windows: []converge.Window{window(converge.WindowDeny, "* * * * *", time.Hour, "Local")},
			problem: `converge: invalid window: window 0: timeZone "Local" is the machine's zone, not an IANA name`},
		{name: "every problem of every window, in order", windows: []converge.Window{
			{Kind: "Maybe", Schedule: "x"}, allow("* * * * *", time.Hour), deny("* * * * *", 0)},
			problem: `converge: invalid window: window 0: kind "Maybe" is neither Allow nor Deny; ` +
				`window 0: schedule "x": want 5 fields (minute hour day-of-month month day-of-week), got 1; ` +
				`window 0: duration 0s is not positive; window 2: duration 0s is not positive`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := converge.ValidateWindows(tt.windows)
			if tt.problem == "" {
				require.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tt.problem)
		})
	}
}

func TestZonesLoadResolvesEachZoneOnce(t *testing.T) {
	windows := []converge.Window{window(converge.WindowAllow, "* * * * *", time.Hour, "Europe/Berlin"), allow("* * * * *", time.Hour),
		window(converge.WindowDeny, "* * * * *", time.Hour, "Asia/Tokyo"), window(converge.WindowDeny, "0 0 * * *", time.Hour, "Europe/Berlin")}
	zones, err := converge.Zones(nil).Load(windows)
	require.NoError(t, err)
	assert.Equal(t, []string{"Asia/Tokyo", "Europe/Berlin"}, sortedKeys(zones), `"" is UTC and needs no entry`)
	assert.Equal(t, "Europe/Berlin", zones["Europe/Berlin"].String())

	again, err := zones.Load(windows)
	require.NoError(t, err)
	assert.Equal(t, reflect.ValueOf(zones).Pointer(), reflect.ValueOf(again).Pointer(), "nothing lacking: the same map, no I/O")

	more, err := zones.Load(append(windows, window(converge.WindowDeny, "* * * * *", time.Hour, "America/New_York")))
	require.NoError(t, err)
	assert.Equal(t, []string{"America/New_York", "Asia/Tokyo", "Europe/Berlin"}, sortedKeys(more))
	assert.Len(t, zones, 2, "Load never changes the zones it is given")

	repaired, err := converge.Zones{"Europe/Berlin": nil}.Load(windows[:1])
	require.NoError(t, err)
	assert.NotNil(t, repaired["Europe/Berlin"], "a nil location is loaded again")
}

func TestZonesLoadRefusesAnUnknownZone(t *testing.T) {
	zones, err := converge.Zones(nil).Load([]converge.Window{
		window(converge.WindowAllow, "* * * * *", time.Hour, "Europe/Berlin"),
		window(converge.WindowAllow, "* * * * *", time.Hour, "Mars/Olympus_Mons")})
	assert.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, `converge: invalid window: window 1: timeZone "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons`)
	assert.Equal(t, []string{"Europe/Berlin"}, sortedKeys(zones), "the zones it could load")
}

func sortedKeys(zones converge.Zones) []string {
	return slices.Sorted(maps.Keys(zones))
}

func TestWindowsOpenRefusesWhatItCannotRead(t *testing.T) {
	berlin := []converge.Window{window(converge.WindowAllow, "* * * * *", time.Hour, "Europe/Berlin")}
	tests := []struct {
		name    string
		windows []converge.Window
		zones   converge.Zones
		problem string
	}{
		{name: "a zone not loaded", windows: berlin,
			problem: `converge: invalid window: window 0: timeZone "Europe/Berlin" is not in the Zones: load it with Zones.Load`},
		{name: "a nil location", windows: berlin, zones: converge.Zones{"Europe/Berlin": nil},
			problem: `converge: invalid window: window 0: timeZone "Europe/Berlin" is not in the Zones: load it with Zones.Load`},
		{name: "an invalid window", windows: []converge.Window{allow("* * * * *", time.Hour), deny("0 0 31 APR *", time.Hour)},
			problem: `converge: invalid window: window 1: schedule "0 0 31 APR *": no month it names has a day it names`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open, change, err := converge.WindowsOpen(tt.windows, tt.zones, at(t, "2024-06-03T12:00:00Z"))
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tt.problem)
			assert.False(t, open)
			assert.True(t, change.IsZero())
		})
	}
}

func TestWindowsOpenAnswersInNowsLocation(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	_, change, err := converge.WindowsOpen([]converge.Window{allow("0 22 * * *", time.Hour)}, nil, at(t, "2024-06-03T12:00:00Z").In(tokyo))
	require.NoError(t, err)
	assert.Equal(t, "2024-06-04T07:00:00+09:00", change.Format(time.RFC3339))
}

func TestWindowClosedHoldNamesWhenTheWindowsOpen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	tests := []struct {
		name  string
		opens time.Time
		want  string
	}{
		{name: "an absolute time in UTC", opens: time.Date(2024, 3, 31, 3, 0, 0, 0, berlin),
			want: "the maintenance windows are closed until 2024-03-31T01:00:00Z"},
		{name: "fractions of a second are kept", opens: time.Date(2024, 3, 31, 1, 0, 0, 500_000_000, time.UTC),
			want: "the maintenance windows are closed until 2024-03-31T01:00:00.5Z"},
		{name: "no opening", want: "the maintenance windows are closed and no opening was found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, converge.Hold{Reason: converge.HoldWindowClosed, Message: tt.want}, converge.WindowClosedHold(tt.opens))
		})
	}
}

// benchWindows are a policy's usual windows: weeknights and weekends in
// Berlin, no change over Christmas and New Year in UTC.
var benchWindows = []converge.Window{
	window(converge.WindowAllow, "0 22 * * MON-FRI", 8*time.Hour, "Europe/Berlin"),
	window(converge.WindowAllow, "0 0 * * SAT", 48*time.Hour, "Europe/Berlin"),
	deny("0 0 24 DEC *", 9*24*time.Hour),
}

// WindowsOpen runs on every decision: it allocates nothing.
func TestWindowsOpenAllocatesNothing(t *testing.T) {
	zones, err := converge.Zones(nil).Load(benchWindows)
	require.NoError(t, err)
	now := at(t, "2024-06-05T12:00:00Z")
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := converge.WindowsOpen(benchWindows, zones, now); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}

// BenchmarkWindowsOpen measures a decision's cost: the usual windows at
// times that are open and closed, and the worst cases: windows that never
// open, searched for 400 days, and windows that spend the budget.
func BenchmarkWindowsOpen(b *testing.B) {
	zones, err := converge.Zones(nil).Load(benchWindows)
	require.NoError(b, err)
	for _, bb := range []struct {
		name    string
		windows []converge.Window
		now     string
	}{
		{name: "usual/closed", windows: benchWindows, now: "2024-06-05T12:00:00Z"},
		{name: "usual/open", windows: benchWindows, now: "2024-06-08T12:00:00Z"},
		{name: "usual/christmas", windows: benchWindows, now: "2024-12-27T23:00:00Z"},
		{name: "never-open", windows: []converge.Window{allow("0 1 * * *", time.Hour), deny("0 0 * * *", 3*time.Hour)}, now: "2024-06-05T12:00:00Z"},
		{name: "budget", windows: []converge.Window{allow("*/2 * * * *", time.Minute), allow("1-59/2 * * * *", time.Minute)}, now: "2024-06-05T12:00:00Z"},
	} {
		now, err := time.Parse(time.RFC3339, bb.now)
		require.NoError(b, err)
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := converge.WindowsOpen(bb.windows, zones, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Nothing panics on input: times at the ends of time.Time's range, and
// durations of any length, are answered.
func TestWindowsOpenAnswersAtTheEndsOfTime(t *testing.T) {
	zones, err := converge.Zones(nil).Load([]converge.Window{{TimeZone: "Europe/Berlin"}})
	require.NoError(t, err)
	for _, now := range []time.Time{{}, time.Unix(1<<62, 0), time.Unix(-1<<62, 0), time.Unix(math.MaxInt64, 0), time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		for _, d := range []time.Duration{time.Nanosecond, time.Hour, math.MaxInt64} {
			for _, zone := range []string{"", "Europe/Berlin"} {
				windows := []converge.Window{window(converge.WindowAllow, "0 22 * * MON-FRI", d, zone), window(converge.WindowDeny, "0 0 29 2 *", d, zone)}
				_, _, err := converge.WindowsOpen(windows, zones, now)
				assert.NoError(t, err, "at %s, for %s in %q", now, d, zone)
			}
		}
	}
}
