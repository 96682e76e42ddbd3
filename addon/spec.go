package addon

import (
	"fmt"

	"github.com/converge-dev/converge/internal/input"
)

// Spec is the host's view of what the add-on should be, read from its object.
type Spec struct {
	// Name identifies the add-on (a key such as "namespace/name").
	Name string `json:"name"`
	// Generation is the object's metadata.generation. The engine acts on
	// a spec (a new version, a spec to leave Failed for) only under a
	// generation above Status.ObservedGeneration; a spec whose generation is
	// below it is stale (an old cache) and ignored.
	Generation int64 `json:"generation"`
	// Version is the desired version.
	Version string `json:"version"`
	// Deleting is true once the object has a deletion timestamp. The host
	// keeps a finalizer until Result.Deleted.
	Deleting bool `json:"deleting,omitempty"`
	// ResetToken requests a reset (Flux's reconcile.fluxcd.io/resetAt): any
	// new non-empty value clears the failure counters and the failed
	// version, leaves PhaseFailed, and restarts a deletion stopped at its
	// deadline. The retry it starts still waits out the backoff of the
	// failures before it.
	ResetToken string `json:"resetToken,omitempty"`
	// ForceToken requests a forced re-apply (Flux's
	// reconcile.fluxcd.io/forceAt): any new non-empty value re-applies the
	// desired version now, once, even on a Running add-on or in PhaseFailed.
	// The first request after a success runs at once; a request that
	// follows a failed forced attempt waits out the backoff, so a token
	// that changes on every reconcile cannot loop without it.
	ForceToken string `json:"forceToken,omitempty"`
}

// Validate reports an empty name or version and a negative generation. The
// error matches converge.ErrInvalid.
func (s Spec) Validate() error {
	if s.Name != "" && s.Version != "" && s.Generation >= 0 {
		return nil
	}
	var problems []string
	if s.Name == "" {
		problems = append(problems, "empty name")
	}
	if s.Version == "" {
		problems = append(problems, "empty version")
	}
	if s.Generation < 0 {
		problems = append(problems, fmt.Sprintf("negative generation %d", s.Generation))
	}
	return input.Invalid("addon", "spec", problems...)
}
