package payload

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Defaults of Policy.
const (
	// defaultInterval is the time between two reconciles, and the longest wait between
	// two attempts of a failing apply.
	defaultInterval = 3 * time.Minute
	// defaultWorkers is the pool that updates, run level by run level.
	defaultWorkers = 8
	// defaultInitializingWorkers is the pool that initializes: wider, as every
	// component starts at once, but bounded whatever the payload's size.
	defaultInitializingWorkers = 16
	// defaultReconcileWorkers is the pool that reconciles, small to spare the apiserver.
	defaultReconcileWorkers = 2
	// defaultManifestAttempts is how many times one apply tries a manifest.
	defaultManifestAttempts = 3
	// defaultReadinessTimeout bounds the wait for one manifest to be ready.
	defaultReadinessTimeout = 10 * time.Minute
	// defaultReadinessPoll is the time between two readiness checks of a manifest.
	defaultReadinessPoll = 5 * time.Second
	// defaultMaxHistory is how many releases Status.History keeps.
	defaultMaxHistory = 10
)

// Policy is how a Worker paces its work. The zero value means every default; it can be
// embedded in a custom resource.
// +kubebuilder:object:generate=true
type Policy struct {
	// Interval is the time between two reconciles (default 3m).
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`
	// Backoff spaces the attempts of a failing apply. Each unset field has its
	// default: Initial Interval/8, Max Interval (or Initial when that is
	// longer), FactorPercent 200 and JitterPercent 20, so that a failing apply
	// waits Interval/8, /4, /2 and then Interval, plus up to 20 %, as the
	// cluster-version operator waits. JitterPercent 0 turns the jitter off.
	// +optional
	Backoff converge.Backoff `json:"backoff,omitempty"`
	// ApplyTimeout bounds one apply (default 2×Interval).
	// +optional
	ApplyTimeout metav1.Duration `json:"applyTimeout,omitempty"`
	// ManifestAttempts is how many times one apply tries a manifest before it gives up
	// on it (default 3).
	// +optional
	ManifestAttempts int32 `json:"manifestAttempts,omitempty"`
	// ManifestBackoff spaces those attempts. Each unset field has its default:
	// Initial 10s, Max 30s (or Initial when that is longer), FactorPercent 130
	// and JitterPercent 0, so that a manifest waits 10s, 13s, 16.9s, … up to
	// 30s with no jitter, as the cluster-version operator's task backoff does.
	// +optional
	ManifestBackoff converge.Backoff `json:"manifestBackoff,omitempty"`
	// Workers is the pool that updates (default 8).
	// +optional
	Workers int32 `json:"workers,omitempty"`
	// InitializingWorkers is the pool that initializes (default 16: every component starts at once,
	// but the pool stays bounded whatever the payload's size).
	// +optional
	InitializingWorkers int32 `json:"initializingWorkers,omitempty"`
	// ReconcileWorkers is the pool that reconciles (default 2, to spare the apiserver).
	// +optional
	ReconcileWorkers int32 `json:"reconcileWorkers,omitempty"`
	// ReadinessTimeout bounds the wait for one manifest to be ready (default
	// 10m); see Config.Readiness.
	// +optional
	ReadinessTimeout metav1.Duration `json:"readinessTimeout,omitempty"`
	// ReadinessPoll is the time between two readiness checks (default 5s).
	// +optional
	ReadinessPoll metav1.Duration `json:"readinessPoll,omitempty"`
	// ReadinessEffect is the effect of a manifest that is not ready in time (default
	// EffectFailAfterInterval).
	// +optional
	ReadinessEffect Effect `json:"readinessEffect,omitempty"`
	// MaxHistory is how many releases Status.History keeps (default 10).
	// +optional
	MaxHistory int32 `json:"maxHistory,omitempty"`
	// Paused keeps a desired release that is not Status.Release from
	// starting, the first one included: the worker holds
	// (converge.HoldPaused in Status.Holds, Progressing's reason Paused)
	// and goes on with the release it has. An apply in flight finishes, an
	// update already started goes on to its end (its retries included), and
	// the reconcile passes that restore the current release continue: they
	// are not new work. Lifting the pause starts the desired release.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Windows are the maintenance windows (converge.Window): while they
	// are closed a desired release that is not Status.Release does not
	// start, as with Paused, and the worker holds with
	// converge.HoldWindowClosed, naming when they open, and decides again
	// then. Reconcile passes of the current release, and an update already
	// started, continue. No window is always open.
	// +optional
	// +listType=atomic
	Windows []converge.Window `json:"windows,omitempty"`
}

// validate reports negative or out-of-range fields, all of them, as one error matching
// ErrInvalid.
func (p Policy) validate() error {
	var problems []string
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"interval", p.Interval.Duration}, {"applyTimeout", p.ApplyTimeout.Duration},
		{"readinessTimeout", p.ReadinessTimeout.Duration}, {"readinessPoll", p.ReadinessPoll.Duration},
	} {
		if d.d < 0 {
			problems = append(problems, fmt.Sprintf("%s %s is negative", d.name, d.d))
		}
	}
	for _, n := range []struct {
		name string
		n    int32
	}{
		{"manifestAttempts", p.ManifestAttempts}, {"workers", p.Workers}, {"initializingWorkers", p.InitializingWorkers},
		{"reconcileWorkers", p.ReconcileWorkers}, {"maxHistory", p.MaxHistory},
	} {
		if n.n < 0 {
			problems = append(problems, fmt.Sprintf("%s %d is negative", n.name, n.n))
		}
	}
	if p.ReadinessEffect != "" && p.ReadinessEffect.rank() == EffectFail.rank() && p.ReadinessEffect != EffectFail {
		problems = append(problems, fmt.Sprintf("readinessEffect %q is unknown", p.ReadinessEffect))
	}
	problems = append(problems, input.Problems(p.Backoff.Validate(), "backoff: ")...)
	problems = append(problems, input.Problems(p.ManifestBackoff.Validate(), "manifestBackoff: ")...)
	problems = append(problems, input.Problems(converge.ValidateWindows(p.Windows), "windows: ")...)
	return input.Invalid("payload", "policy", problems...)
}

// withDefaults returns p with every zero field set to its default.
func (p Policy) withDefaults() Policy {
	p.Interval.Duration = orDefault(p.Interval.Duration, defaultInterval)
	interval := p.Interval.Duration
	p.Backoff = backoffWithDefaults(p.Backoff, converge.Backoff{
		Initial: metav1.Duration{Duration: interval / 8}, Max: metav1.Duration{Duration: interval},
		FactorPercent: 200, JitterPercent: ptr.To[int32](20),
	})
	p.ApplyTimeout.Duration = orDefault(p.ApplyTimeout.Duration, 2*interval)
	p.ManifestAttempts = orDefault(p.ManifestAttempts, defaultManifestAttempts)
	p.ManifestBackoff = backoffWithDefaults(p.ManifestBackoff, converge.Backoff{
		Initial: metav1.Duration{Duration: 10 * time.Second}, Max: metav1.Duration{Duration: 30 * time.Second},
		FactorPercent: 130, JitterPercent: ptr.To[int32](0),
	})
	p.Workers = orDefault(p.Workers, defaultWorkers)
	p.InitializingWorkers = orDefault(p.InitializingWorkers, defaultInitializingWorkers)
	p.ReconcileWorkers = orDefault(p.ReconcileWorkers, defaultReconcileWorkers)
	p.ReadinessTimeout.Duration = orDefault(p.ReadinessTimeout.Duration, defaultReadinessTimeout)
	p.ReadinessPoll.Duration = orDefault(p.ReadinessPoll.Duration, defaultReadinessPoll)
	p.ReadinessEffect = orDefault(p.ReadinessEffect, EffectFailAfterInterval)
	p.MaxHistory = orDefault(p.MaxHistory, defaultMaxHistory)
	return p
}

// backoffWithDefaults fills the unset fields of b from defaults; a Max left unset is at
// least Initial, so that a long Initial alone is not cut short by the default Max.
func backoffWithDefaults(b, defaults converge.Backoff) converge.Backoff {
	maxUnset := b.Max.Duration == 0
	b = b.WithDefaults(defaults)
	if maxUnset {
		b.Max.Duration = max(b.Max.Duration, b.Initial.Duration)
	}
	return b
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// workersFor is the pool of state.
func (p Policy) workersFor(state State) int {
	switch state {
	case StateInitializing:
		return int(p.InitializingWorkers)
	case StateReconciling:
		return int(p.ReconcileWorkers)
	}
	return int(p.Workers)
}
