package rollout

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// defaultHoldDegradedAfter is how long a hold may keep nodes from starting
// before Degraded reports it, when Policy.HoldDegradedAfter is zero.
const defaultHoldDegradedAfter = 10 * time.Minute

// Policy tunes a rollout; it can be embedded in a CRD's spec. The zero value
// is the conservative default that library-go's installer controller
// implements: one node at a time, installer retries forever with its
// 15 s · 1.5^(n-1) backoff capped at 10 min, no timeouts, no soak, not paused.
// +kubebuilder:object:generate=true
type Policy struct {
	// MaxUnavailable is how many nodes may be unavailable at once (0 means
	// 1). A node is unavailable while it is unreachable, an installer of it
	// may run (ordered and not seen finished, or recorded for deletion and
	// not confirmed gone), its operand is not ready or missing, or its
	// operand runs below its current revision, as a DaemonSet counts it. A
	// node whose operand is ready is taken down (started, or given its next
	// installer in transition) only while fewer than MaxUnavailable other
	// nodes are unavailable; a reachable node that is already down may be
	// started while fewer than MaxUnavailable nodes are installing, since
	// starting it takes nothing more down. A node that stays unreachable
	// therefore holds a rollout with MaxUnavailable 1: raise it, or drop the
	// node from the node list once it is gone for good.
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`
	// InstallerBackoff spaces the retries of a failed revision on a node:
	// the n-th consecutive failure waits Initial·(FactorPercent/100)^(n-1),
	// at most Max. Unset fields are library-go's installer backoff
	// (10 s · 1.5^n after n failures): Initial 15 s, FactorPercent 150, Max
	// 10 min, no jitter (15 s, 22.5 s, 33.75 s, …). The retry time is
	// persisted (NodeStatus.RetryTime), so a restart never draws it again.
	// +optional
	InstallerBackoff converge.Backoff `json:"installerBackoff,omitempty"`
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
	// FallbackTimeout is how long an operand may take to become ready at a
	// newer revision once its installer succeeded before the engine falls
	// back (0, the default, never does): it installs the node's current
	// revision, its last good one, again, records the fallback
	// (LastFailedReason OperandFailedFallback, LastFallbackCount), and the
	// node retries the revision after FallbackBackoff. It is the one way,
	// opt-in and recorded, in which the engine moves a node's operand down.
	// A node with no current revision has nothing to fall back to and
	// waits. Set OperandReadyTimeout, if at all, longer: the shorter of the
	// two acts (the fallback at equal values), and OperandReadyTimeout would
	// count the same wait as a failed attempt first.
	// +optional
	FallbackTimeout metav1.Duration `json:"fallbackTimeout,omitempty"`
	// FallbackBackoff spaces the retries of a revision a node fell back
	// from, whether the engine (FallbackTimeout) or the startup monitor on
	// the node (OperandState.Fallback) did it: the n-th fallback
	// waits Initial·(FactorPercent/100)^(n-1), at most Max. Unset fields are
	// library-go's fallback backoff (10 min · 2^n after n fallbacks):
	// Initial 20 min, FactorPercent 200, Max 2 h, no jitter (20 min, 40
	// min, 80 min, 2 h). Fallbacks do not count against MaxInstallerRetries.
	// +optional
	FallbackBackoff converge.Backoff `json:"fallbackBackoff,omitempty"`
	// MinReadyDuration is how long every ready operand must have been ready
	// before another node is started (0 means no soak). A ready time in the
	// future (a clock that stepped back) counts as soaked.
	// +optional
	MinReadyDuration metav1.Duration `json:"minReadyDuration,omitempty"`
	// HoldDegradedAfter is how long a hold (Status.Holds; a pause or a soak
	// alone is a wait) may keep nodes from starting before Degraded reports
	// it, naming the nodes and the way out (0 means 10 minutes).
	// Progressing says every hold at once.
	// +optional
	HoldDegradedAfter metav1.Duration `json:"holdDegradedAfter,omitempty"`
	// Paused stops starting nodes, moving targets and creating installers;
	// what is in flight is still observed and recorded.
	// +optional
	Paused bool `json:"paused,omitempty"`
}

// Validate reports negative values or a bad backoff, as an error matching
// converge.ErrInvalid.
func (p Policy) Validate() error {
	var problems []string
	if p.MaxUnavailable < 0 {
		problems = append(problems, fmt.Sprintf("maxUnavailable %d is negative", p.MaxUnavailable))
	}
	if p.MaxInstallerRetries < 0 {
		problems = append(problems, fmt.Sprintf("maxInstallerRetries %d is negative", p.MaxInstallerRetries))
	}
	for _, d := range []struct {
		name string
		d    metav1.Duration
	}{
		{"installerPendingTimeout", p.InstallerPendingTimeout}, {"operandReadyTimeout", p.OperandReadyTimeout},
		{"fallbackTimeout", p.FallbackTimeout}, {"minReadyDuration", p.MinReadyDuration}, {"holdDegradedAfter", p.HoldDegradedAfter},
	} {
		if d.d.Duration < 0 {
			problems = append(problems, fmt.Sprintf("%s %v is negative", d.name, d.d.Duration))
		}
	}
	problems = append(problems, input.Problems(p.InstallerBackoff.Validate(), "installerBackoff: ")...)
	problems = append(problems, input.Problems(p.FallbackBackoff.Validate(), "fallbackBackoff: ")...)
	return input.Invalid("rollout", "policy", problems...)
}

// The backoffs' defaults, library-go's, documented on Policy.InstallerBackoff
// and Policy.FallbackBackoff.
var (
	defaultInstallerBackoff = converge.Backoff{
		Initial:       metav1.Duration{Duration: 15 * time.Second},
		Max:           metav1.Duration{Duration: 10 * time.Minute},
		FactorPercent: 150,
	}
	defaultFallbackBackoff = converge.Backoff{
		Initial:       metav1.Duration{Duration: 20 * time.Minute},
		Max:           metav1.Duration{Duration: 2 * time.Hour},
		FactorPercent: 200,
	}
)

// backoff returns the installer backoff with its unset fields defaulted: the
// one place the defaults apply.
func (p Policy) backoff() converge.Backoff {
	return p.InstallerBackoff.WithDefaults(defaultInstallerBackoff)
}

// retryDelay is how long a node waits before it retries the revision it
// failed, after its failures or fallbacks so far, with jitter in [0, 1). A
// node in fallback whose install of its last good revision failed waits
// for both backoffs: the fallback's, and the installer's for those
// failures.
func (p Policy) retryDelay(n NodeStatus, jitter float64) time.Duration {
	installer := p.backoff().Delay(n.LastFailedCount, jitter)
	if n.LastFailedReason == ReasonOperandFailedFallback {
		return max(p.FallbackBackoff.WithDefaults(defaultFallbackBackoff).Delay(n.LastFallbackCount, jitter), installer)
	}
	return installer
}

// retryAt is the earliest time a node may retry the revision it failed (its
// target, or with no target a revision it has not reached): its RetryTime,
// or, for a status written without one, the last failed time plus the
// backoff without jitter. It is the zero time when the node has no failure
// in its way (see NodeStatus.Failing).
func (p Policy) retryAt(n NodeStatus) time.Time {
	switch {
	case !n.Failing():
		return time.Time{}
	case n.RetryTime != nil:
		return n.RetryTime.Time
	case n.LastFailedTime != nil:
		return n.LastFailedTime.Add(p.retryDelay(n, 0))
	}
	return time.Time{}
}

// maxUnavailable returns the effective MaxUnavailable: at least 1.
func (p Policy) maxUnavailable() int { return max(int(p.MaxUnavailable), 1) }

// holdDegradedAfter returns the effective HoldDegradedAfter.
func (p Policy) holdDegradedAfter() time.Duration {
	if p.HoldDegradedAfter.Duration == 0 {
		return defaultHoldDegradedAfter
	}
	return p.HoldDegradedAfter.Duration
}

// retriesExhausted reports whether a node's failure is still in its way (see
// NodeStatus.Failing) and it failed that revision more often than
// MaxInstallerRetries allows.
func (p Policy) retriesExhausted(n NodeStatus) bool {
	return p.MaxInstallerRetries > 0 && n.Failing() && n.LastFailedCount > p.MaxInstallerRetries
}
