package converge_test

import (
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
// open or not, until change ("" for no change within ten years).
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
		{name: "29 February of 2104 is the next, since 2100 skips it", windows: []converge.Window{allow("0 0 29 2 *", 24*h)},
			now: "2097-03-01T00:00:00Z", change: "2104-02-29T00:00:00Z"},
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
