package addon

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Status is everything the engine needs to continue, as plain data for the
// host to persist in its object's status. A new Machine (after a restart)
// continues from Status alone. The zero Status is an add-on never seen before.
type Status struct {
	// Phase is where the lifecycle is.
	Phase Phase `json:"phase,omitempty"`
	// Reason is the event that caused the last transition (or why nothing
	// moves, such as "Suspended"); Message explains it.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// PendingAction is the action to run when NextAttemptTime is reached.
	PendingAction Action `json:"pendingAction,omitempty"`
	// NextAttemptTime is when PendingAction becomes due (nil: now).
	NextAttemptTime *metav1.Time `json:"nextAttemptTime,omitempty"`
	// Verifying is the action whose result PhaseChecking verifies: Install,
	// Upgrade, Rollback, or none when a running add-on broke.
	Verifying Action `json:"verifying,omitempty"`
	// LastFailedAction is the action whose failure the counters count.
	LastFailedAction Action `json:"lastFailedAction,omitempty"`
	// InstallFailures, UpgradeFailures and UninstallFailures count
	// consecutive failures; they reset on success and on a spec change.
	InstallFailures   int `json:"installFailures,omitempty"`
	UpgradeFailures   int `json:"upgradeFailures,omitempty"`
	UninstallFailures int `json:"uninstallFailures,omitempty"`
	// LastTransitionTime is when Phase was last entered, or started over by
	// a spec change, a retry request, a passed deadline or a resume; the
	// phase deadline (Policy.Deadline) counts from it.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// LastAttemptTime is when an action last started.
	LastAttemptTime *metav1.Time `json:"lastAttemptTime,omitempty"`
	// InstalledVersion is the version the last successful install, upgrade
	// or rollback applied ("" after an uninstall).
	InstalledVersion string `json:"installedVersion,omitempty"`
	// LastGoodVersion is the last version seen healthy: the rollback target.
	LastGoodVersion string `json:"lastGoodVersion,omitempty"`
	// FailedVersion is a desired version whose install or upgrade failed; it
	// is not tried again until the spec changes or a retry is requested.
	FailedVersion string `json:"failedVersion,omitempty"`
	// ObservedGeneration is the spec generation this status has taken into account.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastRetryToken is the last Spec.RetryToken handled.
	LastRetryToken string `json:"lastRetryToken,omitempty"`
	// Suspended is true while Spec.Suspended holds the engine still.
	Suspended bool `json:"suspended,omitempty"`
	// Conditions are Ready, Reconciling, Stalled (kstatus) and Degraded.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DeepCopy returns a copy sharing no memory with s (nil for a nil s).
func (s *Status) DeepCopy() *Status {
	if s == nil {
		return nil
	}
	out := new(Status)
	s.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies s into out.
func (s *Status) DeepCopyInto(out *Status) {
	*out = *s
	out.NextAttemptTime = s.NextAttemptTime.DeepCopy()
	out.LastAttemptTime = s.LastAttemptTime.DeepCopy()
	s.LastTransitionTime.DeepCopyInto(&out.LastTransitionTime)
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// Validate reports an unknown phase or action and negative counters. The
// error matches ErrInvalid.
func (s *Status) Validate() error {
	var problems []string
	if s.Phase != "" && !s.Phase.Known() {
		problems = append(problems, "unknown phase "+quote(string(s.Phase)))
	}
	for _, a := range []Action{s.PendingAction, s.Verifying, s.LastFailedAction} {
		if !a.Known() || a == ActionRemediate {
			problems = append(problems, "unknown action "+quote(string(a)))
		}
	}
	if s.InstallFailures < 0 || s.UpgradeFailures < 0 || s.UninstallFailures < 0 {
		problems = append(problems, "negative failure counter")
	}
	if s.ObservedGeneration < 0 {
		problems = append(problems, "negative observedGeneration")
	}
	if len(problems) > 0 {
		return invalid("status", problems...)
	}
	return nil
}

func quote(s string) string { return `"` + s + `"` }
