package payload

import (
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decision is what the worker does next.
type Decision struct {
	// Status is the status to publish.
	Status Status
	// Apply is true when Status.Release must be applied now, in Status.State.
	Apply bool
	// CheckPreconditions is true when the apply must first pass the preconditions: an
	// update that has applied nothing yet and is not forced.
	CheckPreconditions bool
	// Result holds the events to emit and, when nothing is applied now, when to
	// decide again (0 while no release is desired).
	Result Result
}

// Decide is the worker's loop as a pure function: it folds the outcome of the apply
// that just ended into the status, then decides what to apply next, in which state,
// after which delay, with which events.
//
//   - An outcome of an interrupted apply (a stop, a replaced release) is not a failure:
//     the status says Interrupted and the next apply starts at once, in the same state.
//   - A failed apply counts a failure and is retried after p.Backoff's delay; a
//     completed one makes the worker Reconciling and reconciles every p.Interval. Both
//     times are kept in Status.NextApplyTime, so a worker restarted from the status
//     keeps them.
//   - A desired release that is not the status's (Release.Same) starts anew:
//     Initializing while no release has completed, Updating after, with an entry in
//     the history. The same release through a mirror starts nothing.
//   - Done never goes backwards within a release, unless the payload shrinks below it.
func Decide(o Observation, p Policy) Decision {
	p = p.withDefaults()
	at := metav1.NewTime(o.Now.Truncate(time.Second))
	s := *o.Status.DeepCopy()
	var d Decision
	if o.Outcome != nil && !s.Release.IsZero() && o.Outcome.Release.Same(s.Release) {
		d.Result.Events = fold(&s, o.Outcome, p, at, o.Jitter)
	}
	if !o.Desired.IsZero() {
		s.ObservedGeneration = o.Generation
		if s.State == "" || s.Release.IsZero() || !s.Release.Same(o.Desired) {
			d.Result.Events = append(d.Result.Events, start(&s, o.Desired, p, at))
		} else {
			s.Release = carry(s.Release, o.Desired)
		}
		if s.Interrupted || s.NextApplyTime == nil || !o.Now.Before(s.NextApplyTime.Time) {
			d.Apply = true
			d.CheckPreconditions = s.State == StateUpdating && s.Done == 0 && !o.Desired.Force
		} else {
			d.Result.RequeueAfter = s.NextApplyTime.Sub(o.Now)
		}
	}
	setConditions(&s, p, o.Now)
	d.Status = s
	return d
}

// fold records what an apply of s.Release did.
func fold(s *Status, out *Outcome, p Policy, at metav1.Time, jitter float64) []Event {
	var events []Event
	if s.Release.Version == "" && out.Release.Version != "" {
		s.Release.Version = out.Release.Version
		if len(s.History) > 0 && s.History[0].Version == "" {
			s.History[0].Version = out.Release.Version
		}
	}
	if out.Total > 0 {
		// A payload that lost manifests (the inclusion changed) has done at most all of them.
		s.Total, s.Done = out.Total, min(s.Done, out.Total)
	}
	if done := min(out.Done, s.Total); done > s.Done {
		s.Done = done
		s.LastProgressTime = &at
	}
	if len(out.Removed) > 0 {
		events = append(events, Event{Type: EventTypeNormal, Reason: "ManifestsDeleted",
			Message: boundMessage(fmt.Sprintf("Deleted %d objects of %s: %s", len(out.Removed), s.Release, strings.Join(out.Removed, ", ")))})
	}
	switch {
	case out.Interrupted:
		s.Interrupted = true
	case out.Err != nil && effectOf(out.Err) != EffectReport:
		s.Interrupted = false
		if s.Failures < math.MaxInt32 {
			s.Failures++
		}
		s.Completed = 0
		s.Failure = failureOf(out.Err)
		next := metav1.NewTime(at.Add(p.Backoff.Delay(s.Failures, jitter)).Truncate(time.Second))
		s.NextApplyTime = &next
		events = append(events, Event{Type: EventTypeWarning, Reason: sanitizeReason(s.Failure.Reason), Message: s.Failure.Message})
	default:
		s.Interrupted = false
		if s.State != StateReconciling {
			events = append(events, Event{Type: EventTypeNormal, Reason: "PayloadApplied",
				Message: fmt.Sprintf("Applied %d manifests of %s", s.Total, s.Release)})
			if len(s.History) > 0 && s.History[0].State == UpdatePartial {
				s.History[0].State, s.History[0].CompletionTime = UpdateCompleted, &at
			}
		}
		s.State = StateReconciling
		s.Done = s.Total
		if s.Completed < math.MaxInt32 {
			s.Completed++
		}
		s.Failures = 0
		s.Failure = failureOf(out.Err)
		s.LastProgressTime = &at
		next := metav1.NewTime(at.Add(p.Interval.Duration))
		s.NextApplyTime = &next
	}
	return events
}

// start moves s to the desired release: Initializing while no release has completed,
// Updating after. The release left behind ends its history entry.
func start(s *Status, desired Release, p Policy, at metav1.Time) Event {
	from := s.Release
	state := StateUpdating
	if s.State == "" || s.State == StateInitializing {
		state = StateInitializing
	}
	history := s.History
	if len(history) > 0 && history[0].State == UpdatePartial && history[0].CompletionTime == nil {
		history[0].CompletionTime = &at
	}
	history = append([]UpdateHistory{{State: UpdatePartial, StartedTime: at, Version: desired.Version, Image: desired.Image}}, history...)
	if len(history) > int(p.MaxHistory) {
		history = history[:p.MaxHistory]
	}
	*s = Status{
		ObservedGeneration: s.ObservedGeneration,
		Release:            desired,
		State:              state,
		LastProgressTime:   &at,
		History:            history,
		Conditions:         s.Conditions,
	}
	if state == StateInitializing {
		return Event{Type: EventTypeNormal, Reason: "InitializingStarted", Message: "Initializing " + desired.String()}
	}
	return Event{Type: EventTypeNormal, Reason: "UpdateStarted", Message: fmt.Sprintf("Updating from %s to %s", from, desired)}
}

// carry takes what may change of a release that stays the same: where it is pulled
// from, and the force flag.
func carry(current, desired Release) Release {
	if desired.Version != "" {
		current.Version = desired.Version
	}
	current.Image = desired.Image
	current.Force = desired.Force
	return current
}
