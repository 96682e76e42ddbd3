package addon

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Remediation is what the engine does after an install or upgrade failed.
type Remediation string

// The remediations.
const (
	// RemediationDefault is the zero value: Uninstall after a failed install
	// (as the seed did), Rollback after a failed upgrade (as Flux does).
	RemediationDefault Remediation = ""
	// RemediationNone leaves the add-on as it is and retries the failed
	// action after the backoff.
	RemediationNone Remediation = "None"
	// RemediationUninstall removes the add-on, then installs it again.
	RemediationUninstall Remediation = "Uninstall"
	// RemediationRollback moves back to the last good version (upgrades only)
	// and stays there: the failed version is not retried until the spec
	// changes or a request arrives. A rollback target that is missing (no
	// version was ever healthy) or unusable (it is the version that just
	// failed) is never rolled back to blindly: the add-on stops in Failed,
	// Stalled with reason RollbackTargetMissing or RollbackTargetUnusable.
	RemediationRollback Remediation = "Rollback"
)

// DriftPolicy is what the engine does when the Driver reports drift.
type DriftPolicy string

// The drift policies.
const (
	// DriftIgnore (the zero value, as Flux's default) does not look for drift.
	DriftIgnore DriftPolicy = ""
	// DriftWarn reports drift (the Drifted condition, a Warning event) and
	// changes nothing.
	DriftWarn DriftPolicy = "Warn"
	// DriftCorrect reports drift and restores what is installed: an
	// upgrade that re-applies Status.InstalledVersion (never the spec's
	// version, which may be the one that failed). Its failure is a failed
	// re-apply, retried and never remediated.
	DriftCorrect DriftPolicy = "Correct"
)

// TestPolicy configures the optional test step after an install or upgrade
// (the Driver must implement Tester).
// +kubebuilder:object:generate=true
type TestPolicy struct {
	// Enable runs the tests once the installed or upgraded version is
	// healthy, before Running.
	// +optional
	Enable bool `json:"enable,omitempty"`
	// IgnoreFailures records a failed test (TestSuccess=False) without
	// remediating it.
	// +optional
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`
}

// The defaults of zero Policy fields, as their documentation gives them.
const (
	defaultMaxRetries           = 5
	defaultMaxLostRetries       = 3
	defaultCheckInterval        = 5 * time.Second
	defaultRunningInterval      = 5 * time.Minute
	defaultCheckTimeout         = 5 * time.Minute
	defaultActionTimeout        = 2 * time.Minute
	defaultHealthUnknownTimeout = 5 * time.Minute
	// defaultInstallTimeout bounds Initializing and Reinitializing: long
	// enough for the default five retries at the default backoff.
	defaultInstallTimeout     = 10 * time.Minute
	defaultUpgradeTimeout     = 10 * time.Minute
	defaultRemediationTimeout = 10 * time.Minute
	defaultDeleteTimeout      = 10 * time.Minute
	defaultHistoryLimit       = 5
	// maxHistoryLimit bounds Policy.HistoryLimit, so the history stays
	// within 2 KiB.
	maxHistoryLimit = 10
)

// defaultBackoff is what an unset field of Policy.Backoff means.
var defaultBackoff = converge.Backoff{
	Initial:       metav1.Duration{Duration: 10 * time.Second},
	Max:           metav1.Duration{Duration: 5 * time.Minute},
	FactorPercent: 200,
	JitterPercent: ptr.To[int32](10),
}

// Policy holds the retry, remediation, deadline, drift, test and polling
// rules; embed it in a CRD's spec. The zero value is the conservative
// default: every zero field takes the default its documentation gives.
//
// Every phase that waits for something has a deadline (Status.Deadline),
// set when the phase is entered (or restarted by a request, a deletion or a
// passed deadline) and moved on by the time spent held (Paused, Windows):
//
//	phase           deadline            when it passes (default table)
//	Initializing    InstallTimeout      DeadlinePassed: remediate, retry in Reinitializing
//	Reinitializing  InstallTimeout      DeadlinePassed: remediate, Failed
//	Checking        CheckTimeout        the checked install, upgrade or rollback failed
//	Upgrading       UpgradeTimeout      DeadlinePassed: the upgrade failed, remediate
//	Remediating     RemediationTimeout  DeadlinePassed: Failed
//	Deleting        DeleteTimeout       DeadlinePassed: uninstalls stop, Stalled, the
//	                                    finalizer stays; a reset or force starts again
//
// Running, Failed and Deleted wait for nothing and have no deadline. A
// retry is never scheduled past the deadline. MaxRetries bounds how many
// times, the deadline how long: whichever comes first ends the phase.
// +kubebuilder:object:generate=true
type Policy struct {
	// MaxRetries is how many times a failed install (and, separately, a
	// failed upgrade) is retried before RetriesExhausted: nil means 5, 0 no
	// retries, -1 unlimited.
	// +optional
	MaxRetries *int32 `json:"maxRetries,omitempty"`
	// MaxLostRetries is how many lost attempts in a row (claims that
	// expired before their owner recorded an outcome: a crash, a shutdown,
	// a replica paused past its claim) are retried after the backoff without
	// counting as failures of what they applied: nil means 3, 0 none (every
	// lost attempt is a failure). Beyond it a lost attempt is a failure like
	// any other, so that a crash loop ends in the retries and remediation of
	// MaxRetries rather than retrying forever.
	// +optional
	MaxLostRetries *int32 `json:"maxLostRetries,omitempty"`
	// RemediateLastFailure remediates the failure that exhausts the retries
	// (uninstall or roll back on entering Failed); nil means true. False
	// leaves the failed release in place to be inspected.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
	// Backoff spaces the retries of a failing action: unset fields mean an
	// Initial wait of 10 s, doubled (FactorPercent 200) after each further
	// failure up to a Max of 5 min, plus up to 10 % of it at random
	// (JitterPercent 10, drawn from Config.Jitter or Input.Jitter).
	// JitterPercent 0 (jitterPercent: 0 in a CRD) turns the jitter off. An
	// unset Max below a set Initial is Initial.
	// +optional
	Backoff converge.Backoff `json:"backoff,omitempty"`
	// InstallRemediation is RemediationDefault (Uninstall), None or Uninstall.
	// +optional
	InstallRemediation Remediation `json:"installRemediation,omitempty"`
	// UpgradeRemediation is RemediationDefault (Rollback), None, Uninstall or Rollback.
	// +optional
	UpgradeRemediation Remediation `json:"upgradeRemediation,omitempty"`
	// Drift is what to do in Running when the Driver (a DriftDetector)
	// reports drift, or its Inspector reports that the cluster runs another
	// version than the one installed (Status.Mismatch, reported under every
	// policy, corrected under DriftCorrect).
	// +optional
	Drift DriftPolicy `json:"drift,omitempty"`
	// Test configures the test step.
	// +optional
	Test TestPolicy `json:"test,omitempty"`
	// HistoryLimit is how many attempts Status.History keeps: 0 means 5; at
	// most 10.
	// +optional
	HistoryLimit int32 `json:"historyLimit,omitempty"`
	// CheckInterval is the poll interval in PhaseChecking; 0 means 5 s.
	// +optional
	CheckInterval metav1.Duration `json:"checkInterval,omitempty"`
	// RunningInterval is the poll interval in PhaseRunning; 0 means 5 min.
	// +optional
	RunningInterval metav1.Duration `json:"runningInterval,omitempty"`
	// CheckTimeout is how long PhaseChecking waits for a healthy add-on; 0
	// means 5 min.
	// +optional
	CheckTimeout metav1.Duration `json:"checkTimeout,omitempty"`
	// ActionTimeout bounds each Driver call the Machine makes; 0 means
	// 2 min. A claim expires ActionTimeout plus ClaimGrace after the action
	// started.
	// +optional
	ActionTimeout metav1.Duration `json:"actionTimeout,omitempty"`
	// HealthUnknownTimeout is how long the health may stay unreadable in
	// Running before Ready turns Unknown and Degraded True; 0 means 5 min.
	// +optional
	HealthUnknownTimeout metav1.Duration `json:"healthUnknownTimeout,omitempty"`
	// InstallTimeout is how long PhaseInitializing and PhaseReinitializing
	// may take, retries included; 0 means 10 min, long enough for the
	// default five retries at the default backoff.
	// +optional
	InstallTimeout metav1.Duration `json:"installTimeout,omitempty"`
	// UpgradeTimeout is how long PhaseUpgrading may take; 0 means 10 min.
	// +optional
	UpgradeTimeout metav1.Duration `json:"upgradeTimeout,omitempty"`
	// RemediationTimeout is how long PhaseRemediating may take, retries
	// included; 0 means 10 min.
	// +optional
	RemediationTimeout metav1.Duration `json:"remediationTimeout,omitempty"`
	// DeleteTimeout is how long PhaseDeleting retries the uninstall; 0
	// means 10 min.
	// +optional
	DeleteTimeout metav1.Duration `json:"deleteTimeout,omitempty"`
	// Paused keeps the add-on from starting an install, an upgrade (a new
	// version, a forced or re-apply, a drift correction) or a test; it
	// holds with HoldPaused (Status.Holds, Reconciling's reason). What
	// already runs finishes and its outcome is recorded; health checks and
	// inspections go on; a remediation (the rollback or uninstall after a
	// failed install or upgrade) and a deletion still run. The phase's
	// deadline does not run while held (Status.HeldSince), so a pause never
	// fails the add-on by itself.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Windows are the maintenance windows (converge.Window): while they
	// are closed the add-on starts what Paused keeps from starting, and
	// nothing else, holding with HoldWindowClosed until they open, when it
	// looks again. None means always open.
	// +optional
	// +listType=atomic
	Windows []converge.Window `json:"windows,omitempty"`
}

// Validate reports negative durations, MaxRetries below -1, a negative
// MaxLostRetries, an invalid Backoff (converge.Backoff.Validate), a history
// limit outside 0..10, windows converge.ValidateWindows refuses and values
// that do not apply. The error matches converge.ErrInvalid.
func (p Policy) Validate() error {
	var problems []string
	if p.MaxRetries != nil && *p.MaxRetries < -1 {
		problems = append(problems, fmt.Sprintf("maxRetries %d is below -1", *p.MaxRetries))
	}
	if p.MaxLostRetries != nil && *p.MaxLostRetries < 0 {
		problems = append(problems, fmt.Sprintf("maxLostRetries %d is negative", *p.MaxLostRetries))
	}
	for _, d := range [...]struct {
		name string
		v    time.Duration
	}{
		{"checkInterval", p.CheckInterval.Duration}, {"runningInterval", p.RunningInterval.Duration},
		{"checkTimeout", p.CheckTimeout.Duration}, {"actionTimeout", p.ActionTimeout.Duration},
		{"healthUnknownTimeout", p.HealthUnknownTimeout.Duration},
		{"installTimeout", p.InstallTimeout.Duration}, {"upgradeTimeout", p.UpgradeTimeout.Duration},
		{"remediationTimeout", p.RemediationTimeout.Duration}, {"deleteTimeout", p.DeleteTimeout.Duration},
	} {
		if d.v < 0 {
			problems = append(problems, fmt.Sprintf("%s %s is negative", d.name, d.v))
		}
	}
	problems = append(problems, input.Problems(p.Backoff.Validate(), "backoff.")...)
	if p.HistoryLimit < 0 || p.HistoryLimit > maxHistoryLimit {
		problems = append(problems, fmt.Sprintf("historyLimit %d is outside 0..%d", p.HistoryLimit, maxHistoryLimit))
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
	switch p.Drift {
	case DriftIgnore, DriftWarn, DriftCorrect:
	default:
		problems = append(problems, fmt.Sprintf("drift %q is not Ignore (empty), Warn or Correct", p.Drift))
	}
	problems = append(problems, input.Problems(converge.ValidateWindows(p.Windows), "")...)
	return input.Invalid("addon", "policy", problems...)
}

// rules is a Policy with every default applied, in the units Decide uses.
type rules struct {
	maxRetries           int32
	maxLostRetries       int32
	remediateLastFailure bool
	backoff              converge.Backoff
	install, upgrade     Remediation
	drift                DriftPolicy
	test                 TestPolicy
	historyLimit         int
	checkInterval        time.Duration
	runningInterval      time.Duration
	checkTimeout         time.Duration
	actionTimeout        time.Duration
	healthUnknownTimeout time.Duration
	installTimeout       time.Duration
	upgradeTimeout       time.Duration
	remediationTimeout   time.Duration
	deleteTimeout        time.Duration
}

// rules applies the defaults, the one place they are applied.
func (p *Policy) rules() rules {
	backoff := p.Backoff
	if backoff.JitterPercent == nil {
		// Shared, never written: WithDefaults would copy it, an allocation
		// on every decision.
		backoff.JitterPercent = defaultBackoff.JitterPercent
	}
	r := rules{
		maxRetries: defaultMaxRetries, maxLostRetries: defaultMaxLostRetries, remediateLastFailure: true, backoff: backoff.WithDefaults(defaultBackoff),
		install: p.InstallRemediation, upgrade: p.UpgradeRemediation, drift: p.Drift, test: p.Test,
		historyLimit:         int(p.HistoryLimit),
		checkInterval:        orDefault(p.CheckInterval, defaultCheckInterval),
		runningInterval:      orDefault(p.RunningInterval, defaultRunningInterval),
		checkTimeout:         orDefault(p.CheckTimeout, defaultCheckTimeout),
		actionTimeout:        orDefault(p.ActionTimeout, defaultActionTimeout),
		healthUnknownTimeout: orDefault(p.HealthUnknownTimeout, defaultHealthUnknownTimeout),
		installTimeout:       orDefault(p.InstallTimeout, defaultInstallTimeout),
		upgradeTimeout:       orDefault(p.UpgradeTimeout, defaultUpgradeTimeout),
		remediationTimeout:   orDefault(p.RemediationTimeout, defaultRemediationTimeout),
		deleteTimeout:        orDefault(p.DeleteTimeout, defaultDeleteTimeout),
	}
	if p.Backoff.Max.Duration == 0 {
		r.backoff.Max.Duration = max(r.backoff.Max.Duration, r.backoff.Initial.Duration)
	}
	if p.MaxRetries != nil {
		r.maxRetries = *p.MaxRetries
	}
	if p.MaxLostRetries != nil {
		r.maxLostRetries = *p.MaxLostRetries
	}
	if p.RemediateLastFailure != nil {
		r.remediateLastFailure = *p.RemediateLastFailure
	}
	if r.install == RemediationDefault {
		r.install = RemediationUninstall
	}
	if r.upgrade == RemediationDefault {
		r.upgrade = RemediationRollback
	}
	if r.historyLimit == 0 {
		r.historyLimit = defaultHistoryLimit
	}
	return r
}

func orDefault(d metav1.Duration, def time.Duration) time.Duration {
	if d.Duration <= 0 {
		return def
	}
	return d.Duration
}

// timeout returns how long phase may last, and 0 for the phases that wait
// for nothing: Running, Failed and Deleted.
func (r *rules) timeout(phase Phase) time.Duration {
	switch phase {
	case PhaseInitializing, PhaseReinitializing:
		return r.installTimeout
	case PhaseChecking:
		return r.checkTimeout
	case PhaseUpgrading:
		return r.upgradeTimeout
	case PhaseRemediating:
		return r.remediationTimeout
	case PhaseDeleting:
		return r.deleteTimeout
	}
	return 0
}

// exhausted reports whether failures (the count including the one just
// recorded) exceed the retries the policy allows.
func (r *rules) exhausted(failures int32) bool {
	return r.maxRetries >= 0 && failures > r.maxRetries
}

// lostRetried reports whether lost (the lost attempts in a row, the one
// just recorded included) is within the lost attempts the policy retries
// without counting them as failures.
func (r *rules) lostRetried(lost int32) bool {
	return lost <= r.maxLostRetries
}

// remediation resolves ActionRemediate for the action that failed, entering
// phase to.
func (r *rules) remediation(failed Action, to Phase, exhausted bool) Action {
	var rem Remediation
	switch failed {
	case ActionInstall:
		rem = r.install
	case ActionUpgrade:
		rem = r.upgrade
	default:
		return ActionNone
	}
	if exhausted && !r.remediateLastFailure {
		return ActionNone
	}
	switch rem {
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
