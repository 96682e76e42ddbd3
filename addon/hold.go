package addon

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/internal/input"
)

// The reasons of the holds the engine persists in Status.Holds (Object
// "") and writes as Reconciling's reason while one holds; Reasons lists
// them. Neither turns Degraded, Stalled or Ready by itself, and neither
// emits an event.
const (
	// HoldPaused: Policy.Paused keeps the pending install, upgrade or test
	// from starting.
	HoldPaused = converge.HoldPaused
	// HoldWindowClosed: Policy.Windows are closed and keep the pending
	// install, upgrade or test from starting until they open (an absolute
	// time in the message).
	HoldWindowClosed = converge.HoldWindowClosed
)

// pausedWhat is what a paused add-on keeps from starting.
const pausedWhat = "no install, upgrade or test is started"

// gated reports whether a is what a pause or closed windows keep from
// starting: an install, an upgrade (drift corrections and re-applies
// included) or a test.
func (a Action) gated() bool {
	return a == ActionInstall || a == ActionUpgrade || a == ActionTest
}

// gate reads whether a pause or closed windows keep work from starting at
// Input.Now; during a deletion neither does. A time zone the windows name
// that Input.Zones lacks is invalid input.
func (d *decider) gate() error {
	if d.in.Spec.Deleting {
		return nil
	}
	d.paused = d.in.Policy.Paused
	if len(d.in.Policy.Windows) == 0 {
		return nil
	}
	open, change, err := converge.WindowsOpen(d.in.Policy.Windows, d.in.Zones, d.in.Now)
	if err != nil {
		return input.Invalid("addon", "input", input.Problems(err, "Zones: ")...)
	}
	d.closed, d.opens = !open, change
	return nil
}

// held reports whether a pause or closed windows keep the pending action,
// which is not in flight, from starting.
func (d *decider) held() bool {
	return (d.paused || d.closed) && d.st.InFlight == nil && d.st.PendingAction.gated()
}

// lift ends a hold: the phase's deadline moves on by the time held, never
// further than the phase's timeout from now.
func (d *decider) lift() {
	st := &d.st
	if st.HeldSince == nil {
		return
	}
	if st.Deadline != nil {
		d.setDeadline(st.Deadline.Add(max(d.now.Sub(st.HeldSince.Time), 0)))
	}
	st.HeldSince = nil
}

// markHolds writes what holds the pending action in the decided status:
// Holds, and HeldSince from the first decision that held it; a hold that
// ended is lifted.
func (d *decider) markHolds() {
	st := &d.st
	if d.holding = d.held(); !d.holding {
		d.lift()
		st.Holds = nil
		return
	}
	if st.HeldSince == nil {
		st.HeldSince = d.at(0)
	}
	var buf [2]converge.Hold
	holds := buf[:0]
	if d.paused {
		holds = append(holds, converge.PausedHold(pausedWhat))
	}
	if d.closed {
		holds = append(holds, converge.WindowClosedHold(d.opens))
	}
	if holds = converge.SortHolds(holds); !slices.Equal(holds, st.Holds) {
		st.Holds = slices.Clone(holds)
	}
}

// showHold writes the first hold as Reconciling's reason and message; the
// phase keeps writing Ready, Stalled and Degraded.
func (d *decider) showHold() {
	if d.holding {
		h := d.st.Holds[0]
		d.setCond(conditions.TypeReconciling, metav1.ConditionTrue, h.Reason, h.Message)
	}
}

// holdRequeue is when a held add-on looks again: at the windows' opening
// when only they hold it, never (a spec change wakes it) while it is
// paused, and after the running poll interval when no opening was found.
func (d *decider) holdRequeue() time.Duration {
	switch {
	case d.paused:
		return 0
	case d.opens.IsZero():
		return d.rules.runningInterval
	}
	return max(d.opens.Sub(d.in.Now), RequeueNow)
}
