package addon

import (
	"fmt"
)

// Spec is the host's view of what the add-on should be, read from its object.
type Spec struct {
	// Name identifies the add-on to the Driver (a key such as "namespace/name").
	Name string `json:"name"`
	// Generation is the object's metadata.generation.
	Generation int64 `json:"generation"`
	// Version is the desired version.
	Version string `json:"version"`
	// Deleting is true once the object has a deletion timestamp. The host
	// keeps a finalizer until Result.Deleted, so deletion never depends on a
	// cache that a restart would lose.
	Deleting bool `json:"deleting,omitempty"`
	// Suspended holds the engine still: no action, the status says so.
	// Deletion overrides it.
	Suspended bool `json:"suspended,omitempty"`
	// RetryToken requests a retry (like Flux's reconcile.fluxcd.io/requestedAt
	// annotation): any new non-empty value resets the failure counters,
	// leaves PhaseFailed, and restarts a deletion stopped at its deadline.
	RetryToken string `json:"retryToken,omitempty"`
}

// Validate reports an empty name or version and a negative generation. The
// error matches ErrInvalid.
func (s Spec) Validate() error {
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
	if len(problems) > 0 {
		return invalid("spec", problems...)
	}
	return nil
}
