package addon

import (
	"fmt"
	"time"
)

// Remediation is what the engine does after an install or upgrade failed.
type Remediation string

// The remediations.
const (
	// RemediationDefault is the zero value: Uninstall after a failed install
	// (as the seed did), Rollback after a failed upgrade.
	RemediationDefault Remediation = ""
	// RemediationNone leaves the add-on as it is and retries the failed
	// action after the backoff.
	RemediationNone Remediation = "None"
	// RemediationUninstall removes the add-on, then installs it again.
	RemediationUninstall Remediation = "Uninstall"
	// RemediationRollback moves back to the last good version (upgrades only)
	// and stays there: the failed version is not retried until the spec
	// changes or a retry is requested.
	RemediationRollback Remediation = "Rollback"
)

// Defaults used for zero Policy fields.
const (
	DefaultMaxRetries      = 5
	DefaultBackoffBase     = 10 * time.Second
	DefaultBackoffCap      = 5 * time.Minute
	DefaultBackoffJitter   = 0.1
	DefaultCheckInterval   = 5 * time.Second
	DefaultRunningInterval = 5 * time.Minute
	DefaultCheckTimeout    = 5 * time.Minute
	DefaultActionTimeout   = 2 * time.Minute
	// DefaultInstallTimeout bounds Initializing and Reinitializing: long
	// enough for the default five retries at the default backoff.
	DefaultInstallTimeout     = 10 * time.Minute
	DefaultUpgradeTimeout     = 10 * time.Minute
	DefaultRemediationTimeout = 10 * time.Minute
	DefaultDeleteTimeout      = 10 * time.Minute
)

// Policy holds the retry, remediation, deadline and polling rules. The zero
// value is the conservative default; every zero field takes the Default…
// constant above.
//
// Every phase that waits for something has a deadline, counted from the
// status's LastTransitionTime (when the phase was entered, or restarted by
// a spec change, a retry request or a resume) with the injected time:
//
//	phase           deadline            when it passes (default table)
//	Initializing    InstallTimeout      DeadlinePassed: remediate, retry in Reinitializing
//	Reinitializing  InstallTimeout      DeadlinePassed: remediate, Failed
//	Checking        CheckTimeout        the checked install, upgrade or rollback failed
//	Upgrading       UpgradeTimeout      DeadlinePassed: the upgrade failed, remediate
//	Remediating     RemediationTimeout  DeadlinePassed: Failed
//	Deleting        DeleteTimeout       DeadlinePassed: uninstalls stop, Stalled, the
//	                                    finalizer stays; a retry request starts again
//
// Running, Failed and Deleted wait for nothing and have no deadline. A
// retry is never scheduled past the deadline: the engine looks again at the
// deadline. Past it, a look fires DeadlinePassed instead of running the
// pending action (Checking checks once more), and a failed action fires
// DeadlinePassed instead of its failure event. MaxRetries bounds how many
// times, the deadline how long: whichever comes first ends the phase.
type Policy struct {
	// MaxRetries is how many times a failed install (and, separately, a
	// failed upgrade) is retried before RetriesExhausted: 0 means
	// DefaultMaxRetries, -1 means unlimited.
	MaxRetries int `json:"maxRetries,omitempty"`
	// Backoff spaces retries.
	Backoff Backoff `json:"backoff,omitempty"`
	// InstallRemediation is RemediationDefault (Uninstall), None or Uninstall.
	InstallRemediation Remediation `json:"installRemediation,omitempty"`
	// UpgradeRemediation is RemediationDefault (Rollback), None, Uninstall or Rollback.
	UpgradeRemediation Remediation `json:"upgradeRemediation,omitempty"`
	// CheckInterval is the poll interval in PhaseChecking.
	CheckInterval time.Duration `json:"checkInterval,omitempty"`
	// RunningInterval is the poll interval in PhaseRunning.
	RunningInterval time.Duration `json:"runningInterval,omitempty"`
	// CheckTimeout is how long PhaseChecking waits for a healthy add-on,
	// counted from the phase's LastTransitionTime.
	CheckTimeout time.Duration `json:"checkTimeout,omitempty"`
	// ActionTimeout bounds each Driver call the Machine makes.
	ActionTimeout time.Duration `json:"actionTimeout,omitempty"`
	// InstallTimeout is how long PhaseInitializing and PhaseReinitializing
	// may take, retries included.
	InstallTimeout time.Duration `json:"installTimeout,omitempty"`
	// UpgradeTimeout is how long PhaseUpgrading may take.
	UpgradeTimeout time.Duration `json:"upgradeTimeout,omitempty"`
	// RemediationTimeout is how long PhaseRemediating may take, retries
	// included.
	RemediationTimeout time.Duration `json:"remediationTimeout,omitempty"`
	// DeleteTimeout is how long PhaseDeleting retries the uninstall.
	DeleteTimeout time.Duration `json:"deleteTimeout,omitempty"`
}

// Validate reports negative durations, MaxRetries below -1 and remediations
// that do not apply. The error matches ErrInvalid.
func (p Policy) Validate() error {
	var problems []string
	if p.MaxRetries < -1 {
		problems = append(problems, fmt.Sprintf("maxRetries %d is below -1", p.MaxRetries))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"backoff.base", p.Backoff.Base}, {"backoff.cap", p.Backoff.Cap},
		{"checkInterval", p.CheckInterval}, {"runningInterval", p.RunningInterval},
		{"checkTimeout", p.CheckTimeout}, {"actionTimeout", p.ActionTimeout},
		{"installTimeout", p.InstallTimeout}, {"upgradeTimeout", p.UpgradeTimeout},
		{"remediationTimeout", p.RemediationTimeout}, {"deleteTimeout", p.DeleteTimeout},
	} {
		if d.v < 0 {
			problems = append(problems, fmt.Sprintf("%s %s is negative", d.name, d.v))
		}
	}
	if p.Backoff.Jitter < 0 || p.Backoff.Jitter > 1 {
		problems = append(problems, fmt.Sprintf("backoff.jitter %v is outside [0, 1]", p.Backoff.Jitter))
	}
	switch p.InstallRemediation {
	case RemediationDefault, RemediationNone, RemediationUninstall:
	default:
		problems = append(problems, fmt.Sprintf("installRemediation %q is not Default, None or Uninstall", p.InstallRemediation))
	}
	switch p.UpgradeRemediation {
	case RemediationDefault, RemediationNone, RemediationUninstall, RemediationRollback:
	default:
		problems = append(problems, fmt.Sprintf("upgradeRemediation %q is not Default, None, Uninstall or Rollback", p.UpgradeRemediation))
	}
	if len(problems) > 0 {
		return invalid("policy", problems...)
	}
	return nil
}

// withDefaults returns p with every zero field replaced by its default.
func (p Policy) withDefaults() Policy {
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	p.Backoff = p.Backoff.withDefaults()
	if p.InstallRemediation == RemediationDefault {
		p.InstallRemediation = RemediationUninstall
	}
	if p.UpgradeRemediation == RemediationDefault {
		p.UpgradeRemediation = RemediationRollback
	}
	p.CheckInterval = orDefault(p.CheckInterval, DefaultCheckInterval)
	p.RunningInterval = orDefault(p.RunningInterval, DefaultRunningInterval)
	p.CheckTimeout = orDefault(p.CheckTimeout, DefaultCheckTimeout)
	p.ActionTimeout = orDefault(p.ActionTimeout, DefaultActionTimeout)
	p.InstallTimeout = orDefault(p.InstallTimeout, DefaultInstallTimeout)
	p.UpgradeTimeout = orDefault(p.UpgradeTimeout, DefaultUpgradeTimeout)
	p.RemediationTimeout = orDefault(p.RemediationTimeout, DefaultRemediationTimeout)
	p.DeleteTimeout = orDefault(p.DeleteTimeout, DefaultDeleteTimeout)
	return p
}

// Timeout returns how long phase p may last (defaults applied), and 0 for
// the phases that wait for nothing: Running, Failed and Deleted.
func (p Policy) Timeout(phase Phase) time.Duration {
	p = p.withDefaults()
	switch phase {
	case PhaseInitializing, PhaseReinitializing:
		return p.InstallTimeout
	case PhaseChecking:
		return p.CheckTimeout
	case PhaseUpgrading:
		return p.UpgradeTimeout
	case PhaseRemediating:
		return p.RemediationTimeout
	case PhaseDeleting:
		return p.DeleteTimeout
	}
	return 0
}

// Deadline returns when the phase of st passes its deadline: its
// LastTransitionTime plus Timeout(st.Phase). It is false for a phase without
// a deadline.
func (p Policy) Deadline(st Status) (time.Time, bool) {
	d := p.Timeout(st.Phase)
	if d == 0 {
		return time.Time{}, false
	}
	return st.LastTransitionTime.Add(d), true
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Exhausted reports whether failures (the count including the one just
// recorded) exceed the retries the policy allows.
func (p Policy) Exhausted(failures int) bool {
	max := p.withDefaults().MaxRetries
	return max >= 0 && failures > max
}

// remediation resolves ActionRemediate for the action that failed, entering
// phase to.
func (p Policy) remediation(failed Action, to Phase) Action {
	p = p.withDefaults()
	var r Remediation
	switch failed {
	case ActionInstall:
		r = p.InstallRemediation
	case ActionUpgrade:
		r = p.UpgradeRemediation
	default:
		return ActionNone
	}
	switch r {
	case RemediationUninstall:
		return ActionUninstall
	case RemediationRollback:
		return ActionRollback
	}
	if to == PhaseFailed {
		return ActionNone
	}
	return failed
}
