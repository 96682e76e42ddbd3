package addontest

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

// The gates a state can draw: gatePaused sets Policy.Paused, gateClosed
// adds exploreFreeze to Policy.Windows.
const (
	gatePaused uint8 = 1 << iota
	gateClosed
)

// exploreFreeze is a Deny window closed at every time an exploration
// reaches (from 1 December 2025 to 22 February 2026, in UTC).
var exploreFreeze = converge.Window{Kind: converge.WindowDeny, Schedule: "0 0 1 12 *", Duration: metav1.Duration{Duration: 2000 * time.Hour}}

// policy is the explored policy under the gates of gate.
func (e *explorer) policy(gate uint8) addon.Policy {
	p := e.opts.Policy
	p.Paused = p.Paused || gate&gatePaused != 0
	if gate&gateClosed != 0 {
		p.Windows = append(slices.Clip(p.Windows), exploreFreeze)
	}
	return p
}

// gatedAction reports whether a is what a pause or closed windows keep
// from starting, as Policy.Paused documents it.
func gatedAction(a addon.Action) bool {
	return a == addon.ActionInstall || a == addon.ActionUpgrade || a == addon.ActionTest
}

// closed reports whether the windows of in's policy are closed at in.Now,
// and when they open.
func (e *explorer) closed(in addon.Input) (bool, time.Time) {
	open, change, err := converge.WindowsOpen(in.Policy.Windows, in.Zones, in.Now)
	return err == nil && !open, change
}

// gated checks the rules of a pause and of closed windows on decision d,
// decided from in: nothing they keep from starting starts, but for a
// deletion; holds stand only while they keep the pending action, not in
// flight, from starting, never during a deletion; and closed windows are
// looked at again no later than they open.
func (e *explorer) gated(in addon.Input, d addon.Decision, fail func(format string, args ...any) error) error {
	after := &d.Status
	closed, opens := e.closed(in)
	if gatedAction(d.Action) && !in.Spec.Deleting && (in.Policy.Paused || closed) {
		return fail("%s started while paused (%v) or the windows are closed (%v)", d.Action, in.Policy.Paused, closed)
	}
	if len(after.Holds) == 0 {
		return nil
	}
	if after.InFlight != nil || !gatedAction(after.PendingAction) || in.Spec.Deleting {
		return fail("holds %v with %s pending (in flight: %v, deleting: %v): nothing a hold keeps from starting", after.Holds, after.PendingAction, after.InFlight != nil, in.Spec.Deleting)
	}
	if closed && !in.Policy.Paused && d.Action == addon.ActionNone && (d.RequeueAfter == 0 || d.RequeueAfter > opens.Sub(in.Now)) {
		return fail("held by closed windows, looks again after %s, not at their opening at %s", d.RequeueAfter, opens.UTC().Format(time.RFC3339))
	}
	return nil
}

// waitsForOpening reports whether d, decided from in, waits for closed
// windows to open, no later than they do.
func (e *explorer) waitsForOpening(in addon.Input, d addon.Decision) bool {
	closed, opens := e.closed(in)
	return closed && len(d.Status.Holds) > 0 && d.RequeueAfter <= opens.Sub(in.Now)
}
