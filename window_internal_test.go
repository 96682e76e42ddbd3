package converge

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zones, whatever the machine has

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fuzzZones are the zones the fuzz tests draw from: UTC, a European and an
// American daylight saving time, a southern one, one that moves by 30
// minutes, one 45 minutes off the hour.
var fuzzZones = []string{"", "Europe/Berlin", "America/New_York", "Australia/Sydney", "Australia/Lord_Howe", "Asia/Kathmandu"}

// startsAt is the oracle of a window's starts, read minute by minute
// from the rule Window documents: the schedule starts the window at m if
// the clock shows a matching minute at m for the first time, or jumps at m
// past a matching minute it skips.
func startsAt(s schedule, loc *time.Location, m time.Time) bool {
	shown := wallOf(m.In(loc))
	if s.matches(shown) && !shownBefore(loc, m, shown) {
		return true
	}
	for skipped := wallOf(m.Add(-time.Minute).In(loc)).add(1); skipped.minutes() < shown.minutes(); skipped = skipped.add(1) {
		if s.matches(skipped) {
			return true
		}
	}
	return false
}

// shownBefore reports whether the clock showed the minute w in the three
// hours before m.
func shownBefore(loc *time.Location, m time.Time, w wall) bool {
	if _, now := m.In(loc).Zone(); true {
		if _, then := m.Add(-3 * time.Hour).In(loc).Zone(); then <= now {
			return false // no step back, no minute shown twice
		}
	}
	for k := 1; k <= 180; k++ {
		if wallOf(m.Add(-time.Duration(k)*time.Minute).In(loc)) == w {
			return true
		}
	}
	return false
}

// activeAt is the oracle of a window being active: it started less than
// its duration before t.
func activeAt(s schedule, loc *time.Location, d time.Duration, t time.Time) bool {
	for m := t.Truncate(time.Minute); t.Sub(m) < d; m = m.Add(-time.Minute) {
		if startsAt(s, loc, m) {
			return true
		}
	}
	return false
}

// openAt is the oracle of Argo CD's rule.
func openAt(t *testing.T, windows []Window, zones Zones, at time.Time) bool {
	allows, allowed := false, false
	for _, w := range windows {
		s, problems := w.parse()
		require.Empty(t, problems)
		loc := time.UTC
		if w.TimeZone != "" {
			loc = zones[w.TimeZone]
		}
		active := activeAt(s, loc, w.Duration.Duration, at)
		if w.Kind == WindowDeny && active {
			return false
		}
		allows, allowed = allows || w.Kind == WindowAllow, allowed || (w.Kind == WindowAllow && active)
	}
	return allowed || !allows
}

func loadFuzzZones(t testing.TB) Zones {
	var ws []Window
	for _, z := range fuzzZones {
		ws = append(ws, Window{TimeZone: z})
	}
	zones, err := Zones(nil).Load(ws)
	require.NoError(t, err)
	return zones
}

// FuzzWindowsOpen holds WindowsOpen to the oracle: the state at now, just
// before the change and at the change, and to itself: the state holds
// until the change, and the change is the same seen from just before it.
func FuzzWindowsOpen(f *testing.F) {
	zones := loadFuzzZones(f)
	for _, seed := range []struct {
		s1, s2 string
		deny1  bool
		deny2  bool
		d1, d2 uint16
		z1, z2 uint8
		unix   int64
	}{
		{"0 2 * * *", "", false, false, 60, 0, 1, 0, 1711843200},            // Berlin springs forward
		{"0 2 * * *", "", false, false, 120, 0, 1, 0, 1729980000},           // Berlin falls back
		{"30 2 * * *", "* 1-3 * * *", false, true, 30, 1, 1, 1, 1729987200}, // the second pass of 02:30
		{"30 2 * * *", "", true, false, 90, 0, 2, 0, 1710048600},            // New York springs forward
		{"* * * * *", "0 0 * * *", true, false, 1, 60, 1, 3, 1717200000},    // a deny that has a hole
		{"0 22 * * 1-5", "0 0 24-26 DEC *", false, true, 480, 1440, 1, 0, 1735000000},
		{"*/7 */5 13 * FRI", "0 0 * * 0,6", false, false, 9, 1440, 4, 5, 1699999999},
		{"0 0 29 2 *", "", false, false, 60, 0, 0, 0, 1700000000},
	} {
		f.Add(seed.s1, seed.s2, seed.deny1, seed.deny2, seed.d1, seed.d2, seed.z1, seed.z2, seed.unix)
	}
	f.Fuzz(func(t *testing.T, s1, s2 string, deny1, deny2 bool, d1, d2 uint16, z1, z2 uint8, unix int64) {
		window := func(s string, deny bool, d uint16, z uint8) Window {
			kind := WindowAllow
			if deny {
				kind = WindowDeny
			}
			return Window{Kind: kind, Schedule: s, Duration: metav1.Duration{Duration: time.Duration(d%4320) * time.Minute},
				TimeZone: fuzzZones[int(z)%len(fuzzZones)]}
		}
		windows := []Window{window(s1, deny1, d1, z1)}
		if s2 != "" {
			windows = append(windows, window(s2, deny2, d2, z2))
		}
		now := time.Unix(1<<30+unix%(1<<31), 0).UTC() // 1984..2052
		open, change, err := WindowsOpen(windows, zones, now)
		if verr := ValidateWindows(windows); verr != nil {
			require.True(t, errors.Is(err, ErrInvalid))
			require.Equal(t, verr.Error(), err.Error())
			return
		}
		require.NoError(t, err)
		checkWindowsOpen(t, windows, zones, now, open, change)
	})
}

// checkWindowsOpen holds the answer of WindowsOpen at now to the oracle and
// to itself: the state at now, just before the change, halfway to it and
// at it, and the change seen from just before it.
func checkWindowsOpen(t *testing.T, windows []Window, zones Zones, now time.Time, open bool, change time.Time) {
	t.Helper()
	require.Equal(t, openAt(t, windows, zones, now), open, "at %s", now)
	if change.IsZero() {
		for _, later := range []time.Duration{time.Minute, time.Hour, 24 * time.Hour} { // the budget follows days at least
			require.Equal(t, open, openAt(t, windows, zones, now.Add(later)), "at %s, with no change", now.Add(later))
		}
		return
	}
	require.True(t, change.After(now))
	before := change.Add(-time.Nanosecond)
	openBefore, changeBefore, _ := WindowsOpen(windows, zones, before)
	require.Equal(t, open, openBefore, "just before %s", change)
	require.True(t, change.Equal(changeBefore), "seen from just before %s: %s", change, changeBefore)
	openAtChange, _, _ := WindowsOpen(windows, zones, change)
	require.NotEqual(t, open, openAtChange, "at %s", change)
	if change.Sub(now) < 60*24*time.Hour {
		require.Equal(t, open, openAt(t, windows, zones, before), "just before %s", change)
		require.Equal(t, !open, openAt(t, windows, zones, change), "at %s", change)
		mid := now.Add(change.Sub(now) / 2)
		require.Equal(t, open, openAt(t, windows, zones, mid), "at %s, before %s", mid, change)
	}
}

// TestWindowsOpenAgreesWithTheOracle draws valid windows from the cron
// grammar, per seed, in the fuzz tests' zones, and holds WindowsOpen to
// the oracle as FuzzWindowsOpen does.
func TestWindowsOpenAgreesWithTheOracle(t *testing.T) {
	zones := loadFuzzZones(t)
	durations := []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute, 59 * time.Minute, time.Hour,
		61 * time.Minute, 3 * time.Hour, 24 * time.Hour, 25 * time.Hour, 72 * time.Hour}
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 0))
		windows := make([]Window, 1+r.IntN(3))
		for i := range windows {
			kind := WindowAllow
			if r.IntN(2) == 0 {
				kind = WindowDeny
			}
			windows[i] = Window{Kind: kind, Schedule: randomSchedule(r), Duration: metav1.Duration{Duration: durations[r.IntN(len(durations))]},
				TimeZone: fuzzZones[r.IntN(len(fuzzZones))]}
		}
		if ValidateWindows(windows) != nil {
			continue // a day no month it names has
		}
		// 1990..2050, on a minute or off it
		now := time.Unix(631152000+r.Int64N(60*365*24*3600), 0).Truncate(time.Duration(1+r.IntN(2)*59) * time.Second).UTC()
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			open, change, err := WindowsOpen(windows, zones, now)
			require.NoError(t, err)
			checkWindowsOpen(t, windows, zones, now, open, change)
		})
	}
}

// randomSchedule draws a schedule from the cron grammar, leaning to the
// shapes windows have.
func randomSchedule(r *rand.Rand) string {
	field := func(f cronField) string {
		n := func() int { return f.min + r.IntN(f.max-f.min+1) }
		switch r.IntN(7) {
		case 0, 1:
			return "*"
		case 2:
			return strconv.Itoa(n())
		case 3:
			a := n()
			return fmt.Sprintf("%d-%d", a, a+r.IntN(f.max-a+1))
		case 4:
			return fmt.Sprintf("*/%d", 1+r.IntN(f.max))
		case 5:
			a := n()
			return fmt.Sprintf("%d-%d/%d", a, a+r.IntN(f.max-a+1), 1+r.IntN(f.max))
		}
		return fmt.Sprintf("%d,%d", n(), n())
	}
	parts := make([]string, len(cronFields))
	for i, f := range cronFields {
		parts[i] = field(f)
	}
	return strings.Join(parts, " ")
}

// The budget of a search covers the 400 days of daily windows that keep
// one another closed, with room to spare.
func TestWindowSearchBudgetCoversDailyWindowsForTheHorizon(t *testing.T) {
	zones := loadFuzzZones(t)
	for _, zone := range []string{"", "Europe/Berlin"} {
		windows := []Window{
			{Kind: WindowAllow, Schedule: "0 1 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: zone},
			{Kind: WindowDeny, Schedule: "0 0 * * *", Duration: metav1.Duration{Duration: 3 * time.Hour}, TimeZone: zone},
		}
		ws, err := zoneWindows(nil, windows, zones)
		require.NoError(t, err)
		now := time.Date(2024, 6, 5, 12, 0, 0, 0, time.UTC)
		search := windowSearch{windows: ws}
		require.True(t, search.opensAfter(now, now.Add(windowHorizon)).IsZero())
		require.Less(t, search.steps, maxSteps/4, "in %q", zone)
	}
}
