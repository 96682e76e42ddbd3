package addon_test

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

// simWindows are the maintenance windows a schedule draws: none in half of
// them; else windows that open and close every few of the schedule's
// minutes, on UTC and on zones of their own.
var simWindows = [][]converge.Window{
	nil, nil, nil,
	{{Kind: converge.WindowAllow, Schedule: "0,30 * * * *", Duration: metav1.Duration{Duration: 10 * time.Minute}, TimeZone: "Europe/Berlin"}},
	{{Kind: converge.WindowDeny, Schedule: "*/20 * * * *", Duration: metav1.Duration{Duration: 15 * time.Minute}}},
	{
		{Kind: converge.WindowAllow, Schedule: "0 * * * *", Duration: metav1.Duration{Duration: 40 * time.Minute}, TimeZone: "America/New_York"},
		{Kind: converge.WindowDeny, Schedule: "10 * * * *", Duration: metav1.Duration{Duration: 5 * time.Minute}},
	},
}

// simZones are the zones of simWindows, loaded once.
var simZones = func() converge.Zones {
	zones := converge.Zones(nil)
	for _, ws := range simWindows {
		var err error
		if zones, err = zones.Load(ws); err != nil {
			panic(err)
		}
	}
	return zones
}()

// gatedAction reports whether a is what a pause or closed windows keep
// from starting, as Policy.Paused documents it.
func gatedAction(a addon.Action) bool {
	return a == addon.ActionInstall || a == addon.ActionUpgrade || a == addon.ActionTest
}

// closedAt reports whether the schedule's windows are closed at t, and
// when they open.
func (s *simulation) closedAt(t time.Time) (bool, time.Time) {
	open, change, err := converge.WindowsOpen(s.policy.Windows, simZones, t)
	if err != nil {
		panic(err)
	}
	return !open, change
}

// machineNow is the time on the clock of the Machine whose reconcile is on.
func (s *simulation) machineNow() time.Time { return s.clock.Now().Add(s.skew[s.running]) }

// gateHeld checks a mutating call about to start, decided on spec: no
// install, upgrade or test starts while the add-on is paused (the policy
// of the Machine that decided it) or its windows are closed (on the clock of the Machine that decided it), but
// for a deletion.
func (s *simulation) gateHeld(c simCall, spec addon.Spec) {
	if !gatedAction(c.action) || spec.Deleting {
		return
	}
	if s.runPaused {
		s.violate("%s of %s started while the add-on is paused", c.action, c.to)
	}
	if closed, opens := s.closedAt(s.machineNow()); closed {
		s.violate("%s of %s started at %s while the windows are closed (until %s)", c.action, c.to, s.machineNow().UTC().Format(time.RFC3339), opens.UTC().Format(time.RFC3339))
	}
}

// holdsHonest checks the holds of a status: only while the pending action,
// not in flight, is one a pause or closed windows keep from starting, never
// during a deletion, and a closed window's requeue (after, from Machine i's
// reconcile) no later than the opening.
func (s *simulation) holdsHonest(st addon.Status, deleting bool, after time.Duration) {
	if len(st.Holds) == 0 {
		return
	}
	if st.InFlight != nil || !gatedAction(st.PendingAction) || deleting {
		s.violate("holds %v while %s is pending (in flight: %v, deleting: %v): nothing a hold keeps from starting", st.Holds, st.PendingAction, st.InFlight != nil, deleting)
	}
	if s.runPaused {
		return
	}
	if closed, opens := s.closedAt(s.machineNow()); closed && !opens.IsZero() && after > opens.Sub(s.machineNow()) {
		s.violate("held by closed windows, looks again after %s, past their opening at %s", after, opens.UTC().Format(time.RFC3339))
	}
}

// setPaused pauses or resumes the add-on: its Machines take the policy
// anew, as a host builds its Machine from the object's policy.
func (s *simulation) setPaused(paused bool) {
	s.policy.Paused = paused
	s.newMachines()
}
