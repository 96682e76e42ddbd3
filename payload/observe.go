package payload

import "time"

// Observation is everything Decide needs: what the host wants, what the worker has
// done, and what the apply that just ended did.
type Observation struct {
	// Desired is the release the host wants (Worker.Update); zero before it says.
	Desired Release
	// Generation is the generation of Desired.
	Generation int64
	// Status is the worker's status: persisted, or the last one Decide returned.
	Status Status
	// Outcome is what the apply that just ended did, nil when none ended.
	Outcome *Outcome
	// Now is the time of the decision.
	Now time.Time
	// Jitter is a random number in [0, 1) that spreads retries (Config.Jitter).
	Jitter float64
}

// Outcome is what one apply did.
type Outcome struct {
	// Release and State are what the apply applied (Decision.Status).
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
	// Removed names the objects the apply deleted (Manifest.Delete), sorted.
	Removed []string
}
