package converge

import (
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WindowKind says what a Window does while it is active.
type WindowKind string

// The kinds of a Window.
const (
	// WindowAllow lets work start while it is active: once a policy has an
	// Allow window, work starts only inside one.
	WindowAllow WindowKind = "Allow"
	// WindowDeny keeps work from starting while it is active, whatever the
	// Allow windows say.
	WindowDeny WindowKind = "Deny"
)

// Window is a maintenance window, the one of every engine's Policy, with
// the semantics of Argo CD's sync windows: no window means always open; if
// any Allow window exists, the windows are open only while one is active;
// an active Deny window closes them, whatever the Allow windows say. While
// they are closed an engine starts no new work, holds (WindowClosedHold)
// and looks again when they open; what already runs finishes.
//
// A window is active from each time its Schedule starts it, read on the
// wall clock of its TimeZone, for Duration of elapsed time. A start time
// that the clock skips (02:30 on the day it springs forward from 02:00 to
// 03:00) starts the window when the clock jumps (03:00); a start time the
// clock shows twice (02:30 on the day it falls back from 03:00 to 02:00)
// starts it once, the first time. WindowsOpen evaluates windows without
// I/O; Zones.Load resolves their time zones beforehand.
// +kubebuilder:object:generate=true
type Window struct {
	// Kind is Allow or Deny.
	// +kubebuilder:validation:Enum=Allow;Deny
	Kind WindowKind `json:"kind"`
	// Schedule says when the window starts, in the standard 5-field cron
	// syntax "minute hour day-of-month month day-of-week": numbers, "*",
	// ranges "a-b", lists "a,b", steps "*/n" and "a-b/n", the names
	// JAN..DEC and SUN..SAT, 0 and 7 both Sunday. When neither the day of
	// month nor the day of week is "*", a day matching either matches.
	Schedule string `json:"schedule"`
	// Duration is how long the window stays active after each start; more
	// than zero.
	Duration metav1.Duration `json:"duration"`
	// TimeZone is the IANA name of the zone whose wall clock Schedule reads
	// ("Europe/Berlin"); "" is UTC.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// ValidateWindows reports, as an error matching ErrInvalid, a kind other
// than Allow and Deny, a schedule that does not parse or never starts the
// window (30 February), a duration that is not positive, and the time zone
// "Local" (the machine's, not an IANA name). Each problem names the window
// by its index and the field: "window 1: duration 0s is not positive".
func ValidateWindows(windows []Window) error {
	var problems []string
	for i, w := range windows {
		_, p := w.parse()
		problems = appendWindowProblems(problems, i, p)
	}
	return Invalid("converge", "window", problems...)
}

// appendWindowProblems appends the problems of the i-th window to
// problems, each naming the window.
func appendWindowProblems(problems []string, i int, windowProblems []string) []string {
	for _, p := range windowProblems {
		problems = append(problems, fmt.Sprintf("window %d: %s", i, p))
	}
	return problems
}

// parse returns w's schedule and what is wrong with w, nil when nothing
// is; it allocates only to say what is wrong.
func (w Window) parse() (schedule, []string) {
	var problems []string
	if w.Kind != WindowAllow && w.Kind != WindowDeny {
		problems = append(problems, fmt.Sprintf("kind %q is neither %s nor %s", w.Kind, WindowAllow, WindowDeny))
	}
	s, problem := parseSchedule(w.Schedule)
	if problem != "" {
		problems = append(problems, fmt.Sprintf("schedule %q: %s", w.Schedule, problem))
	}
	if w.Duration.Duration <= 0 {
		problems = append(problems, fmt.Sprintf("duration %s is not positive", w.Duration.Duration))
	}
	if w.TimeZone == "Local" {
		problems = append(problems, `timeZone "Local" is the machine's zone, not an IANA name`)
	}
	return s, problems
}

// Zones holds the location of each TimeZone of a list of windows, by name,
// so that WindowsOpen does no I/O: a shell loads it once with Load, keeps
// it, and hands it to every decision. "" is UTC and needs no entry.
type Zones map[string]*time.Location

// Load returns z with the location of every window's TimeZone that z
// lacks, loaded with time.LoadLocation; z itself, with no I/O, when it
// lacks none. It never changes z, so a shell may keep the result and call
// Load again on every pass. time.LoadLocation reads the system's zoneinfo;
// a binary that runs where there is none (a distroless image) imports
// time/tzdata. A zone it cannot load is an error matching ErrInvalid,
// beside the zones it could.
func (z Zones) Load(windows []Window) (Zones, error) {
	out, copied := z, false
	var problems []string
	for i, w := range windows {
		if w.TimeZone == "" || w.TimeZone == "Local" || out[w.TimeZone] != nil {
			continue
		}
		loc, err := time.LoadLocation(w.TimeZone)
		if err != nil {
			problems = append(problems, fmt.Sprintf("window %d: timeZone %q: %v", i, w.TimeZone, err))
			continue
		}
		if !copied {
			out, copied = make(Zones, len(z)+1), true
			maps.Copy(out, z)
		}
		out[w.TimeZone] = loc
	}
	return out, Invalid("converge", "window", problems...)
}

// windowHorizon is how far WindowsOpen looks for a change: more than a
// year, so that it finds the next start of a yearly window.
const windowHorizon = 400 * 24 * time.Hour

// WindowsOpen reports whether windows let work start at now, and when that
// next changes, in now's location: when they open if they are closed, when
// they close if they are open. The change is the zero time when none was
// found: when there is none within 400 days (no window; a Deny window that
// never ends; a 29 February further away), or when finding it would follow
// the windows through more than 10,000 runs of starts (windows of a minute
// that follow one another for weeks). A shell holds a closed window with
// WindowClosedHold(change) and looks again at change.
//
// It is pure: it reads each window's location from zones (Zones.Load)
// and returns an error matching ErrInvalid for a window ValidateWindows
// refuses or a zone zones lacks. It allocates nothing for up to eight
// valid windows.
func WindowsOpen(windows []Window, zones Zones, now time.Time) (open bool, change time.Time, err error) {
	var buf [8]zonedWindow
	ws, err := zoneWindows(buf[:0], windows, zones)
	if err != nil {
		return false, time.Time{}, err
	}
	search, limit := windowSearch{windows: ws}, now.Add(windowHorizon)
	if open = search.open(now); open {
		change = search.closesAfter(now, limit)
	} else {
		change = search.opensAfter(now, limit)
	}
	if change.IsZero() || search.steps > maxSteps {
		return open, time.Time{}, nil
	}
	return open, change.In(now.Location()), nil
}

// zoneWindows appends windows, parsed and located in zones, to ws.
func zoneWindows(ws []zonedWindow, windows []Window, zones Zones) ([]zonedWindow, error) {
	var problems []string
	for i, w := range windows {
		s, p := w.parse()
		loc := time.UTC
		if w.TimeZone != "" && w.TimeZone != "Local" {
			if loc = zones[w.TimeZone]; loc == nil {
				p = append(p, fmt.Sprintf("timeZone %q is not in the Zones: load it with Zones.Load", w.TimeZone))
			}
		}
		if problems = appendWindowProblems(problems, i, p); len(problems) == 0 {
			ws = append(ws, zonedWindow{sched: s, deny: w.Kind == WindowDeny, d: w.Duration.Duration,
				loc: loc, reach: reachOf(s, w.Duration.Duration)})
		}
	}
	return ws, Invalid("converge", "window", problems...)
}

// HoldWindowClosed is the reason of the hold an engine writes while its
// maintenance windows keep it from starting work (Object "").
const HoldWindowClosed = "WindowClosed"

// WindowClosedHold returns the hold of an engine whose windows are closed
// until opens (WindowsOpen's change), the zero time when no opening was
// found. Its message names the opening as an absolute time in UTC, so that
// it stays the same until the windows open.
func WindowClosedHold(opens time.Time) Hold {
	if opens.IsZero() {
		return Hold{Reason: HoldWindowClosed, Message: "the maintenance windows are closed and no opening was found"}
	}
	return Hold{Reason: HoldWindowClosed, Message: "the maintenance windows are closed until " + opens.UTC().Format(time.RFC3339Nano)}
}
