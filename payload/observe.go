package payload

import (
	"time"

	"github.com/converge-dev/converge"
)

// Input is everything Decide needs: what the host wants, what the worker has done, what
// the host reported of the apply that just ended, and how to pace the work.
type Input struct {
	// Desired is the release the host wants (Worker.Update); zero before it says.
	Desired Release
	// Generation is the generation of Desired.
	Generation int64
	// Status is the worker's status: persisted, or the last one Decide returned.
	Status Status
	// Observation is what the host reported of the apply that just ended; zero when
	// none ended.
	Observation Observation
	// Policy paces the worker; the zero value is every default.
	Policy Policy
	// Zones holds the location of every TimeZone of Policy.Windows
	// (converge.Zones.Load), so that Decide does no I/O.
	Zones converge.Zones
	// Now is the time of the decision.
	Now time.Time
	// Jitter is a random number in [0, 1) that spreads retries (Config.Jitter).
	Jitter float64
}

// Observation is what the host reported of one apply: what its loader, appliers,
// deleter and readiness checks returned, counted and summarized.
type Observation struct {
	// Release and State are what the apply applied (Decision.Status); a zero Release
	// is no apply.
	Release Release
	State   State
	// Done and Total count the manifests applied and those that belong to the cluster.
	Done, Total int32
	// Err is the apply's summarized error: nil, or one of EffectReport when the apply
	// completed, anything else when it failed.
	Err error
	// Interrupted is true when the apply was stopped before it ended: the worker was
	// stopped or the release replaced. It is not a failure.
	Interrupted bool
	// Removed names the objects the apply deleted (manifest.Manifest.Delete), sorted.
	Removed []string
}
