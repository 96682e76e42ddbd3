package rollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultHoldDegradedAfter is how long unavailable nodes may hold a rollout
// back before Degraded reports it, when Policy.HoldDegradedAfter is zero.
const DefaultHoldDegradedAfter = 10 * time.Minute

// Policy tunes a rollout; it can be embedded in a CRD's spec. The zero value
// is the conservative default that library-go's installer controller
// implements: one node at a time, installer retries forever with its
// 15 s · 1.5^(n-1) backoff capped at 10 min, no timeouts, no soak, not paused.
// +kubebuilder:object:generate=true
type Policy struct {
	// MaxUnavailable is how many nodes may be unavailable at once (0 means
	// 1). A node is unavailable while it is unreachable, in transition, its
	// operand is not ready, or its operand runs below its current revision,
	// as a DaemonSet counts it. A node whose operand is ready is started only
	// while fewer than MaxUnavailable nodes are unavailable; a reachable node
	// that is already unavailable may be started while fewer than
	// MaxUnavailable nodes are in transition, since starting it takes
	// nothing more down. A node that stays unreachable therefore holds a
	// rollout with MaxUnavailable 1: raise it, or drop the node from the
	// observation once it is gone for good.
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	// InstallerBackoff spaces the retries of a failed revision on a node.
	// +optional
	InstallerBackoff Backoff `json:"installerBackoff,omitempty"`
	// MaxInstallerRetries is how many times a node retries a revision it
	// failed before it gives up and Degraded reports
	// InstallerRetriesExhausted (0 means retry forever). Only a newer
	// revision moves a node that gave up.
	// +optional
	MaxInstallerRetries int32 `json:"maxInstallerRetries,omitempty"`
	// InstallerPendingTimeout is how long an installer may stay pending or
	// running, counted from when the engine ordered it, before it is deleted
	// and counted as a failure (0 means forever).
	// +optional
	InstallerPendingTimeout metav1.Duration `json:"installerPendingTimeout,omitempty"`
	// OperandReadyTimeout is how long an operand may take to become ready at
	// its revision once its installer succeeded before that counts as a
	// failed attempt (0 means forever, library-go's behaviour).
	// +optional
	OperandReadyTimeout metav1.Duration `json:"operandReadyTimeout,omitempty"`
	// MinReadyDuration is how long every ready operand must have been ready
	// before another node is started (0 means no soak). A ready time in the
	// future (a clock that stepped back) counts as soaked.
	// +optional
	MinReadyDuration metav1.Duration `json:"minReadyDuration,omitempty"`
	// HoldDegradedAfter is how long unavailable nodes may hold back the
	// start of a node before Degraded reports the hold, naming the nodes and
	// the way out (0 means DefaultHoldDegradedAfter). Progressing explains a
	// hold at once.
	// +optional
	HoldDegradedAfter metav1.Duration `json:"holdDegradedAfter,omitempty"`
	// Paused stops starting nodes, moving targets and creating installers;
	// what is in flight is still observed and recorded.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// Validate reports negative values or a bad backoff, wrapped in ErrInvalid.
func (p Policy) Validate() error {
	if p.MaxUnavailable < 0 {
		return invalidf("maxUnavailable %d is negative", p.MaxUnavailable)
	}
	if p.MaxInstallerRetries < 0 {
		return invalidf("maxInstallerRetries %d is negative", p.MaxInstallerRetries)
	}
	if p.InstallerPendingTimeout.Duration < 0 || p.OperandReadyTimeout.Duration < 0 ||
		p.MinReadyDuration.Duration < 0 || p.HoldDegradedAfter.Duration < 0 {
		return invalidf("durations must not be negative (installerPendingTimeout %v, operandReadyTimeout %v, minReadyDuration %v, holdDegradedAfter %v)",
			p.InstallerPendingTimeout.Duration, p.OperandReadyTimeout.Duration, p.MinReadyDuration.Duration, p.HoldDegradedAfter.Duration)
	}
	return p.InstallerBackoff.Validate()
}

// Unavailable returns the effective MaxUnavailable: at least 1.
func (p Policy) Unavailable() int { return max(int(p.MaxUnavailable), 1) }

// holdDegradedAfter returns the effective HoldDegradedAfter.
func (p Policy) holdDegradedAfter() time.Duration {
	if p.HoldDegradedAfter.Duration == 0 {
		return DefaultHoldDegradedAfter
	}
	return p.HoldDegradedAfter.Duration
}

// RetriesExhausted reports whether a node's failure is still in its way (see
// NodeStatus.Failing) and it failed that revision more often than
// MaxInstallerRetries allows.
func (p Policy) RetriesExhausted(n NodeStatus) bool {
	return p.MaxInstallerRetries > 0 && n.Failing() && n.LastFailedCount > p.MaxInstallerRetries
}
