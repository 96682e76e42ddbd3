package helmconverge

import (
	"errors"

	"github.com/converge-dev/converge"
)

// The driver's errors, matched with errors.Is. Bad input (a nil chart, a
// release name Helm refuses, a Config without Charts or Cluster) matches
// converge.ErrInvalid instead.
var (
	// ErrRollbackTargetMissing: no revision of the release carries the
	// version a rollback goes back to (Helm's history no longer holds it).
	ErrRollbackTargetMissing = errors.New("helm: no revision carries the rollback target")
	// ErrReleaseMissing: the add-on's release is not in Helm's storage.
	ErrReleaseMissing = errors.New("helm: release not found")
	// ErrReleasePending: the release's last revision is pending-install,
	// pending-upgrade or pending-rollback with no action of this engine
	// running: the action that left it was cut short. The next install,
	// upgrade, rollback or uninstall unlocks it (marks it failed) and goes
	// on, as Flux's helm-controller does.
	ErrReleasePending = errors.New("helm: release left pending")
	// ErrFenced: the release's latest revision was written under a newer
	// claim's fencing token than the call's (addon.Request.Fence): the call
	// comes from a replica whose claim was taken over, and writes nothing.
	ErrFenced = errors.New("helm: fenced out by a newer claim")
)

func invalid(what string, problems ...string) error {
	return converge.Invalid("helm", what, problems...)
}

func invalidf(what, format string, args ...any) error {
	return converge.Invalidf("helm", what, format, args...)
}
