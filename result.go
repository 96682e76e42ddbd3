package converge

import "time"

// Result is what an engine's shell hands back to its host after one pass:
// when to look again and the events to emit. It has the meaning of
// controller-runtime's reconcile.Result (without the deprecated Requeue), and
// a shell returns it even beside an error, so that the events of what was
// already persisted are not lost. The addon engine embeds it and adds fields
// of its own.
type Result struct {
	// RequeueAfter asks to run again after that long; zero means: wait for
	// a change.
	RequeueAfter time.Duration
	// Events are the events to emit, in order.
	Events []Event
}
