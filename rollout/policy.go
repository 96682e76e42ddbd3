package rollout

import "time"

// Policy tunes a rollout. The zero value is the conservative default that
// library-go's installer controller implements: one node at a time, installer
// retries forever with a 10 s · 1.5^n backoff capped at 10 min, no timeouts,
// no soak, not paused.
type Policy struct {
	// MaxUnavailable is how many reachable nodes may be in transition or have
	// a not-ready operand at once (0 means 1). Starting a node never exceeds
	// it; a node that fails stays counted until it recovers. Unreachable nodes
	// are not counted.
	MaxUnavailable int
	// InstallerBackoff is the delay before retrying a failed installer.
	InstallerBackoff Backoff
	// MaxInstallerRetries is how many times a node retries a revision it
	// failed (its installer failed or timed out, or its operand failed)
	// before it gives up and the rollout reports Degraded with reason
	// InstallerRetriesExhausted (0 means retry forever). Only a newer
	// revision moves a node that gave up.
	MaxInstallerRetries int32
	// InstallerPendingTimeout is how long an installer may stay pending or
	// running before it is deleted and counted as a failure (0 means forever).
	InstallerPendingTimeout time.Duration
	// MinReadyDuration is how long every ready operand must have been ready
	// before another node is started (0 means no soak).
	MinReadyDuration time.Duration
	// Paused stops starting nodes, moving targets and creating installers;
	// what is in flight is still observed and recorded.
	Paused bool
}

// Validate reports negative values or a bad backoff, wrapped in ErrInvalid.
func (p Policy) Validate() error {
	if p.MaxUnavailable < 0 {
		return invalidf("maxUnavailable %d is negative", p.MaxUnavailable)
	}
	if p.MaxInstallerRetries < 0 {
		return invalidf("maxInstallerRetries %d is negative", p.MaxInstallerRetries)
	}
	if p.InstallerPendingTimeout < 0 || p.MinReadyDuration < 0 {
		return invalidf("timeouts must not be negative (installerPendingTimeout %v, minReadyDuration %v)",
			p.InstallerPendingTimeout, p.MinReadyDuration)
	}
	return p.InstallerBackoff.Validate()
}

// Unavailable returns the effective MaxUnavailable: at least 1.
func (p Policy) Unavailable() int { return max(p.MaxUnavailable, 1) }

// RetriesExhausted reports whether a node's failure is still in its way (see
// NodeStatus.Failing) and it failed that revision more often than
// MaxInstallerRetries allows.
func (p Policy) RetriesExhausted(n NodeStatus) bool {
	return p.MaxInstallerRetries > 0 && n.Failing() && n.LastFailedCount > p.MaxInstallerRetries
}
