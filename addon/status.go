package addon

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Status is everything the engine needs to continue, as plain data for the
// host to persist in its object's status (embed it in a CRD). A new Machine
// (after a restart) continues from Status alone. The zero Status is an
// add-on never seen before.
// +kubebuilder:object:generate=true
type Status struct {
	// Phase is where the lifecycle is.
	// +optional
	Phase Phase `json:"phase,omitempty"`
	// Reason is the trigger that caused the last transition (or why nothing
	// moves, such as "ClaimLost"); Message explains it.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// PendingAction is the action to run when NextAttemptTime is reached.
	// +optional
	PendingAction Action `json:"pendingAction,omitempty"`
	// NextAttemptTime is when PendingAction becomes due (nil: now).
	// +optional
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`
	// Deadline is when the phase gives up waiting (Policy.Timeout after it
	// was entered, moved on by the time spent held: see HeldSince). Every phase that
	// waits has one; Running, Failed and Deleted have none.
	// +optional
	Deadline *metav1.Time `json:"deadline,omitempty"`
	// InFlight is the claim of the action running now: only its owner may
	// record the outcome, and nothing else runs until it is recorded or the
	// claim expires (a lost attempt: see LostAttempts).
	// +optional
	InFlight *Claim `json:"inFlight,omitempty"`
	// Fence is the fencing token of the newest claim taken on this add-on.
	// Each claim takes Fence plus one (Claim.Fence), written with optimistic
	// concurrency before its action runs, so every claim carries a larger
	// token than all claims before it, whichever Machine took it; the Driver
	// gets it in Request.Fence.
	// +optional
	Fence int64 `json:"fence,omitempty"`
	// Verifying is the action whose result PhaseChecking verifies: Install,
	// Upgrade or Rollback.
	// +optional
	Verifying Action `json:"verifying,omitempty"`
	// LastFailedAction is the action whose failure the counters count.
	// +optional
	LastFailedAction Action `json:"lastFailedAction,omitempty"`
	// InstallFailures, UpgradeFailures and UninstallFailures count
	// consecutive failures against Policy.MaxRetries; they reset on success,
	// on a spec change and on a reset request.
	// +optional
	InstallFailures int32 `json:"installFailures,omitempty"`
	// +optional
	UpgradeFailures int32 `json:"upgradeFailures,omitempty"`
	// +optional
	UninstallFailures int32 `json:"uninstallFailures,omitempty"`
	// Failures counts consecutive failed or lost attempts of any action
	// since the add-on was last healthy or its spec changed: the backoff
	// step. Reset and force requests do not clear it, so requests are
	// rate-limited too.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// LostAttempts counts the attempts in a row whose claim expired before
	// their owner recorded an outcome (History outcome Lost). Up to
	// Policy.MaxLostRetries of them are retried after the backoff without
	// counting as failures of what they applied; beyond that a lost attempt
	// is a failure. An outcome its owner recorded (or an attempt found
	// applied), a request, a spec change and a deletion clear it.
	// +optional
	LostAttempts int32 `json:"lostAttempts,omitempty"`
	// LastTransitionTime is when Phase was last entered, or started over by
	// a request, a deletion or a passed deadline.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// LastAttemptTime is when an action last started.
	// +optional
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// InstalledVersion is the version the last successful install, upgrade
	// or rollback applied ("" after an uninstall, and before any install).
	// +optional
	InstalledVersion string `json:"installedVersion,omitempty"`
	// InstalledRevision is the driver's revision that carries
	// InstalledVersion (Driver.Install and Upgrade return it; "" when the
	// driver has none).
	// +optional
	InstalledRevision string `json:"installedRevision,omitempty"`
	// Mismatch is what the Driver's Inspector last reported the cluster
	// runs, while that is not InstalledVersion (nil while they agree or when
	// nothing was asked). It stands until an install, upgrade, rollback or
	// uninstall succeeds or an inspection agrees; meanwhile Degraded (and,
	// in Running, Ready) say so with reason InstalledVersionMismatch, and
	// under Policy.Drift Correct a Running add-on restores InstalledVersion.
	// +optional
	Mismatch *Installed `json:"mismatch,omitempty"`
	// LastGoodVersion is the last version seen healthy: the rollback target.
	// +optional
	LastGoodVersion string `json:"lastGoodVersion,omitempty"`
	// LastGoodRevision is the driver's revision that carried LastGoodVersion
	// when it was seen healthy: what a rollback rolls back to.
	// +optional
	LastGoodRevision string `json:"lastGoodRevision,omitempty"`
	// FailedVersion is a desired version whose install or upgrade failed, or
	// the installed version once the retries of its re-apply ran out; it is
	// not tried again until the spec changes or a request arrives.
	// +optional
	FailedVersion string `json:"failedVersion,omitempty"`
	// RestoreVersion is the version the pending upgrade applies when it
	// restores what is installed (a drift correction, the retry of a failed
	// re-apply) rather than the spec's version: InstalledVersion when it
	// began, so that a correction never applies a version that failed. Empty
	// while no restore is pending.
	// +optional
	RestoreVersion string `json:"restoreVersion,omitempty"`
	// ReapplyTime is when the installed version, last seen healthy, is
	// applied again after a re-apply of it failed (nil while none is owed).
	// The add-on waits for it in Running, its health watched.
	// +optional
	ReapplyTime *metav1.Time `json:"reapplyTime,omitempty"`
	// ObservedGeneration is the spec generation this status has taken into
	// account (kstatus's observedGeneration); it only goes forward.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// SeenGeneration is the highest spec generation any decision has seen,
	// acted on or not: one seen while a claim held counts too. It is at
	// least ObservedGeneration, and a spec below it is
	// stale (an old cache) and ignored, so the engine never acts on a
	// generation older than one it has seen.
	// +optional
	SeenGeneration int64 `json:"seenGeneration,omitempty"`
	// LastResetToken and LastForceToken are the last Spec.ResetToken and
	// Spec.ForceToken handled.
	// +optional
	LastResetToken string `json:"lastResetToken,omitempty"`
	// +optional
	LastForceToken string `json:"lastForceToken,omitempty"`
	// HeldSince is when a pause or closed maintenance windows (Holds) began
	// keeping the pending action from starting (nil while nothing holds it).
	// The phase's deadline does not run while it is held: when the hold
	// lifts, the deadline moves on by the time held.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`
	// Holds are what keeps the pending action from starting
	// (converge.SortHolds): HoldPaused and HoldWindowClosed, Object "";
	// nil while nothing does.
	// +optional
	// +listType=atomic
	Holds []converge.Hold `json:"holds,omitempty"`
	// Health is the last health read.
	// +optional
	Health Health `json:"health,omitempty"`
	// HealthUnknownSince is when the health became unreadable in Running
	// (nil while it reads); after Policy.HealthUnknownTimeout Ready turns
	// Unknown.
	// +optional
	HealthUnknownSince *metav1.Time `json:"healthUnknownSince,omitempty"`
	// History holds the last Policy.HistoryLimit attempts, oldest first.
	// +optional
	// +listType=atomic
	History []Attempt `json:"history,omitempty"`
	// Conditions are Ready, Reconciling, Stalled (kstatus) and Degraded,
	// with Released, Remediated, TestSuccess and Drifted as Flux reports them.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Claim marks the action in flight: who runs it, on what, and until when.
// +kubebuilder:object:generate=true
type Claim struct {
	// Action is the claimed action.
	Action Action `json:"action"`
	// Owner identifies the Machine that runs it (Config.Owner).
	Owner string `json:"owner"`
	// From is the installed version when the action started; To is the
	// version it applies (empty for an uninstall).
	// +optional
	From string `json:"from,omitempty"`
	// +optional
	To string `json:"to,omitempty"`
	// Started is when the action started; with Owner, Action and Fence it
	// names the attempt.
	Started metav1.Time `json:"started"`
	// Expires is when the claim lapses: Policy.ActionTimeout after Started,
	// plus a grace for the outcome's write.
	Expires metav1.Time `json:"expires"`
	// Fence is the claim's fencing token (Status.Fence when it was taken):
	// larger than the token of every claim before it. Zero in a claim taken
	// before fencing tokens existed.
	// +optional
	Fence int64 `json:"fence,omitempty"`
}

// same reports whether c and o name the same attempt.
func (c *Claim) same(o *Claim) bool {
	return c != nil && o != nil && c.Action == o.Action && c.Owner == o.Owner && c.Fence == o.Fence && c.Started.Equal(&o.Started)
}

// Attempt is one entry of Status.History.
// +kubebuilder:object:generate=true
type Attempt struct {
	// Action is what ran.
	Action Action `json:"action"`
	// Version is the version it applied (empty for an uninstall), cut to
	// 63 bytes.
	// +optional
	Version string `json:"version,omitempty"`
	// Revision is the driver's revision the attempt returned (a failed one
	// too, when the driver named what it left).
	// +optional
	Revision string `json:"revision,omitempty"`
	// Outcome is how it ended.
	Outcome Outcome `json:"outcome"`
	// Started and Finished bound the attempt.
	Started  metav1.Time `json:"started"`
	Finished metav1.Time `json:"finished"`
	// Fence is the fencing token it ran under (Claim.Fence), as a Driver
	// may record it beside what it wrote (helmconverge labels each Helm
	// revision with it).
	// +optional
	Fence int64 `json:"fence,omitempty"`
}

// Validate reports what a Decide could not continue from: an unknown phase,
// action or health, negative counters or fences, a claim that is not of the pending
// action, tests pending outside Checking, a Checking phase without the
// action it verifies, a phase that waits without a deadline, and one that waits
// with nothing to do (nothing pending and nothing in flight). A Deleting
// phase may wait with nothing pending: a deletion stopped at its deadline.
// The error matches converge.ErrInvalid.
func (s *Status) Validate() error {
	if s.valid() {
		return nil
	}
	var problems []string
	if s.Phase != "" && !s.Phase.known() {
		problems = append(problems, "unknown phase "+quote(string(s.Phase)))
	}
	for _, a := range [...]Action{s.PendingAction, s.Verifying, s.LastFailedAction} {
		if !a.pendable() {
			problems = append(problems, "unknown action "+quote(string(a)))
		}
	}
	if c := s.InFlight; c != nil && (!c.Action.mutates() || c.Owner == "" || c.Action != s.PendingAction) {
		problems = append(problems, fmt.Sprintf("inFlight: action %q by owner %q, pending %q", c.Action, c.Owner, s.PendingAction))
	}
	if s.PendingAction == ActionTest && s.Phase != PhaseChecking {
		problems = append(problems, fmt.Sprintf("phase %s runs tests", s.Phase))
	}
	switch s.Health {
	case "", HealthUnknown, HealthHealthy, HealthUnhealthy:
	default:
		problems = append(problems, "unknown health "+quote(string(s.Health)))
	}
	if s.InstallFailures < 0 || s.UpgradeFailures < 0 || s.UninstallFailures < 0 || s.Failures < 0 || s.LostAttempts < 0 {
		problems = append(problems, "negative failure counter")
	}
	if s.Fence < 0 || s.InFlight != nil && s.InFlight.Fence < 0 {
		problems = append(problems, "negative fence")
	}
	if s.ObservedGeneration < 0 || s.SeenGeneration < 0 {
		problems = append(problems, "negative generation")
	}
	if s.Phase == PhaseChecking && s.Verifying != ActionInstall && s.Verifying != ActionUpgrade && s.Verifying != ActionRollback {
		problems = append(problems, fmt.Sprintf("phase Checking verifies %q, not Install, Upgrade or Rollback", s.Verifying))
	}
	if s.Phase.waits() && s.Deadline == nil {
		problems = append(problems, fmt.Sprintf("phase %s waits without a deadline", s.Phase))
	}
	if s.idle() {
		problems = append(problems, fmt.Sprintf("phase %s waits with nothing pending and nothing in flight", s.Phase))
	}
	return input.Invalid("addon", "status", problems...)
}

// valid is the allocation-free fast path of Validate.
func (s *Status) valid() bool {
	ok := (s.Phase == "" || s.Phase.known()) &&
		s.PendingAction.pendable() && s.Verifying.pendable() && s.LastFailedAction.pendable() &&
		(s.InFlight == nil || (s.InFlight.Action.mutates() && s.InFlight.Owner != "" && s.InFlight.Action == s.PendingAction)) &&
		(s.PendingAction != ActionTest || s.Phase == PhaseChecking) &&
		(s.Health == "" || s.Health == HealthUnknown || s.Health == HealthHealthy || s.Health == HealthUnhealthy) &&
		s.InstallFailures >= 0 && s.UpgradeFailures >= 0 && s.UninstallFailures >= 0 && s.Failures >= 0 && s.LostAttempts >= 0 &&
		s.Fence >= 0 && (s.InFlight == nil || s.InFlight.Fence >= 0) &&
		s.ObservedGeneration >= 0 && s.SeenGeneration >= 0 &&
		(s.Phase != PhaseChecking || s.Verifying == ActionInstall || s.Verifying == ActionUpgrade || s.Verifying == ActionRollback) &&
		(!s.Phase.waits() || s.Deadline != nil)
	return ok && !s.idle()
}

// idle reports a phase that would wait forever: not Failed, Deleting or
// Deleted, with nothing pending and nothing in flight.
func (s *Status) idle() bool {
	switch s.Phase {
	case "", PhaseFailed, PhaseDeleting, PhaseDeleted:
		return false
	}
	return s.PendingAction == ActionNone && s.InFlight == nil
}

func quote(s string) string { return `"` + s + `"` }
