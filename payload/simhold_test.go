package payload_test

import (
	"math/rand/v2"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// simWindows are the maintenance windows a schedule draws from: short, frequent,
// in three zones, Allow and Deny, so that a schedule of a few simulated hours
// crosses many openings and closings.
var simWindows = []converge.Window{
	{Kind: converge.WindowAllow, Schedule: "*/10 * * * *", Duration: metav1.Duration{Duration: 3 * time.Minute}},
	{Kind: converge.WindowAllow, Schedule: "5-55/15 * * * *", Duration: metav1.Duration{Duration: 5 * time.Minute}, TimeZone: "Asia/Kolkata"},
	{Kind: converge.WindowDeny, Schedule: "*/30 * * * *", Duration: metav1.Duration{Duration: 7 * time.Minute}, TimeZone: "Europe/Berlin"},
	{Kind: converge.WindowAllow, Schedule: "0-59/20 * * * *", Duration: metav1.Duration{Duration: 10 * time.Minute}, TimeZone: "Europe/Berlin"},
}

// simZones holds the zones of simWindows.
var simZones = func() converge.Zones {
	zones, err := converge.Zones(nil).Load(simWindows)
	if err != nil {
		panic(err)
	}
	return zones
}()

// simHolds is what holds a schedule's worker back: the windows it draws, and
// whether it pauses at all.
type simHolds struct {
	windows []converge.Window
	pausing bool // new workers are made paused or not, the seed says
	paused  bool // the running worker's Policy.Paused
	// opensAt is when, in the world's time, the running worker must start the
	// release it was told once the windows it waits for open; zero when nothing
	// is to start then, or a clock jump made the wait's length unknown.
	opensAt time.Time
}

// drawHolds draws a schedule's windows and pauses: a third of the schedules have
// one or two windows, a quarter pause and lift the pause across restarts.
func drawHolds(rng *rand.Rand) simHolds {
	var h simHolds
	if rng.IntN(3) == 0 {
		for range 1 + rng.IntN(2) {
			h.windows = append(h.windows, simWindows[rng.IntN(len(simWindows))])
		}
	}
	h.pausing = rng.IntN(4) == 0
	return h
}

// policy is simPolicy with the schedule's windows and the running worker's pause.
func (s *sim) policy() payload.Policy {
	p := simPolicy
	p.Paused, p.Windows = s.holds.paused, s.holds.windows
	return p
}

// held reports whether the running worker may start no release now: it is paused,
// or its windows are closed as its clock reads.
func (s *sim) held() bool {
	if s.holds.paused {
		return true
	}
	open, _, err := converge.WindowsOpen(s.holds.windows, simZones, s.wall.Now())
	if err != nil {
		s.fail("the simulated windows: %v", err)
	}
	return !open
}

// target is the release the worker is to apply next, from its status st: the one it
// was told, unless the pause or the windows hold that one back; then the release st
// names, which the worker goes on with, or none.
func (s *sim) target(st payload.Status) payload.Release {
	current := st.State != "" && !st.Release.IsZero()
	if (current && simID(st.Release) == simID(s.told)) || !s.held() {
		return s.told
	}
	if !current {
		return payload.Release{}
	}
	return st.Release
}

// expectOpening records when the running worker, held by its windows alone from
// starting the release it was told, must start it: when they open.
func (s *sim) expectOpening(st payload.Status) {
	s.holds.opensAt = time.Time{}
	if s.holds.paused || s.told.IsZero() || simID(st.Release) == simID(s.told) {
		return
	}
	wall := s.wall.Now()
	open, opens, err := converge.WindowsOpen(s.holds.windows, simZones, wall)
	if err != nil || open || opens.IsZero() {
		return
	}
	s.injected["a release held by closed windows"]++
	s.holds.opensAt = s.clk.Now().Add(opens.Sub(wall))
}

// checkHeldCall holds when a host call c of a live worker starts: a call of a
// release the world has not seen the worker start never comes while the worker is
// paused or its windows are closed; and the worker calls for another release than
// it was told only for the release it goes on with while held, in an apply that
// started while held or that an Update held back did not cancel.
func (s *sim) checkHeldCall(c *simCall) {
	held := s.held()
	if !s.pass.started && held {
		s.pass.kept = true // a pass that starts while held finishes once the hold ends
	}
	kept := s.pass.kept && (!s.pass.started || s.pass.release == c.release)
	if c.release != simID(s.told) && (c.release != s.begun || !held && !kept) {
		s.fail("%s of %s (%s) started once the worker was told %s (%s)", c.kind, c.version, c.release, s.told, simID(s.told))
	}
	if c.release == s.begun {
		return
	}
	if held {
		s.fail("%s of %s (%s), a release the worker had not started, came while it was paused (%t) or its windows closed",
			c.kind, c.version, c.release, s.holds.paused)
	}
	s.begun = c.release
}

// checkOpening holds after every step: once the windows a worker waited for have
// opened, a worker with no apply in flight has started the release it was told.
func (s *sim) checkOpening(pending int) {
	if s.holds.opensAt.IsZero() || pending > 0 || s.pass.started || !s.clk.Now().After(s.holds.opensAt) {
		return
	}
	if st := s.worker.Status(); simID(st.Release) != simID(s.told) {
		s.fail("the windows opened at %s, yet the worker, idle, has not started %s: %s/%s, holds %v",
			s.holds.opensAt.Format("15:04:05.000000"), s.told, st.Release, st.State, st.Holds)
	}
	s.holds.opensAt = time.Time{}
}
