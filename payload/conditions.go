package payload

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// failing reports whether s's failure fails the update at now.
func failing(s *Status, p Policy, now time.Time) bool {
	if s.Failure == nil {
		return false
	}
	switch s.Failure.Effect {
	case EffectReport, EffectNone:
		return false
	case EffectFailAfterInterval:
		return s.LastProgressTime == nil || now.Sub(s.LastProgressTime.Time) >= p.Interval.Duration
	}
	return true
}

// setConditions brings s.Conditions up to date with the rest of s: the
// cluster-version operator's conditions (conditions.TypeAvailable, TypeProgressing and
// TypeFailing). Available is True once a release has completed ("Done applying
// 4.15.0"); Progressing is True while the worker initializes or updates ("Working
// towards 4.15.1: 512 of 862 done (59% complete)"); Failing is True while the last
// apply failed with an effect that fails the update (EffectFail, or
// EffectFailAfterInterval without progress for an interval).
//
// A hold (Status.Holds) that keeps a desired release from starting gives
// Progressing its reason and message, unless a failure does; it changes
// neither Available nor Failing.
func setConditions(s *Status, p Policy, now time.Time) {
	if s.Release.IsZero() {
		if len(s.Holds) > 0 {
			_, _ = conditions.Set(&s.Conditions, heldProgressing(metav1.ConditionFalse, s.Holds), now,
				conditions.WithObservedGeneration(s.ObservedGeneration))
		}
		return
	}
	fails := failing(s, p, now)
	var available, progressing, failure metav1.Condition
	switch last := lastCompleted(s.History); {
	case last != nil:
		available = metav1.Condition{Type: conditions.TypeAvailable, Status: metav1.ConditionTrue, Reason: conditions.ReasonAsExpected,
			Message: "Done applying " + releaseName(last.Version, last.Image)}
	default:
		available = metav1.Condition{Type: conditions.TypeAvailable, Status: metav1.ConditionFalse, Reason: string(StateInitializing),
			Message: "Initializing " + s.Release.String()}
	}
	if fails {
		failure = metav1.Condition{Type: conditions.TypeFailing, Status: metav1.ConditionTrue,
			Reason: sanitizeReason(s.Failure.Reason), Message: s.Failure.Message}
	} else {
		failure = metav1.Condition{Type: conditions.TypeFailing, Status: metav1.ConditionFalse, Reason: conditions.ReasonAsExpected}
	}
	switch {
	case s.State == StateReconciling && fails:
		progressing = metav1.Condition{Type: conditions.TypeProgressing, Status: metav1.ConditionFalse,
			Reason:  sanitizeReason(s.Failure.Reason),
			Message: boundMessage("Error while reconciling " + s.Release.String() + ": " + s.Failure.Message)}
	case s.State == StateReconciling:
		progressing = metav1.Condition{Type: conditions.TypeProgressing, Status: metav1.ConditionFalse, Reason: conditions.ReasonAsExpected,
			Message: "Cluster version is " + s.Release.String()}
	case fails:
		progressing = metav1.Condition{Type: conditions.TypeProgressing, Status: metav1.ConditionTrue,
			Reason:  sanitizeReason(s.Failure.Reason),
			Message: boundMessage("Unable to apply " + s.Release.String() + ": " + s.Failure.Message)}
	case s.Failure != nil && s.Failure.Effect != EffectReport:
		progressing = metav1.Condition{Type: conditions.TypeProgressing, Status: metav1.ConditionTrue, Reason: string(s.State),
			Message: boundMessage(s.progressMessage() + ", waiting on: " + s.Failure.Message)}
	default:
		progressing = metav1.Condition{Type: conditions.TypeProgressing, Status: metav1.ConditionTrue, Reason: string(s.State),
			Message: s.progressMessage()}
	}
	if len(s.Holds) > 0 && !fails {
		progressing = heldProgressing(progressing.Status, s.Holds)
	}
	for _, c := range []metav1.Condition{available, progressing, failure} {
		// The conditions are built valid: reasons are sanitized, messages bounded.
		_, _ = conditions.Set(&s.Conditions, c, now, conditions.WithObservedGeneration(s.ObservedGeneration))
	}
}

func lastCompleted(history []UpdateHistory) *UpdateHistory {
	for i := range history {
		if history[i].State == UpdateCompleted {
			return &history[i]
		}
	}
	return nil
}

func releaseName(version, image string) string {
	return Release{Version: version, Image: image}.String()
}

// sanitizeReason makes reason a valid condition reason; a reason with nothing left
// becomes ReasonUpdatePayloadFailed.
func sanitizeReason(reason string) string {
	if r := conditions.SanitizeReason(reason); r != "" {
		return r
	}
	return ReasonUpdatePayloadFailed
}

// heldProgressing is the Progressing condition of a worker whose holds keep a
// desired release from starting: the first hold's reason, and every hold's
// message.
func heldProgressing(status metav1.ConditionStatus, holds []converge.Hold) metav1.Condition {
	messages := make([]string, len(holds))
	for i, h := range holds {
		messages[i] = h.Message
	}
	return metav1.Condition{Type: conditions.TypeProgressing, Status: status, Reason: holds[0].Reason,
		Message: boundMessage(strings.Join(messages, "; "))}
}
