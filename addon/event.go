package addon

import (
	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// The reasons of a rollback that is not attempted.
const (
	ReasonRollbackTargetMissing  = "RollbackTargetMissing"
	ReasonRollbackTargetUnusable = "RollbackTargetUnusable"
)

func (d *decider) event(typ, reason, msg string) {
	d.events = append(d.events, converge.Event{Type: typ, Reason: reason, Message: conditions.TruncateMessage(msg, maxMessage)})
}
