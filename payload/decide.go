package payload

import (
	"fmt"
	"math"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// Decision is what the worker does next. Its Result holds the events to emit and,
// when nothing is applied now, when to decide again (RequeueAfter, 0 while no release
// is desired).
type Decision struct {
	converge.Result
	// Status is the status to publish.
	Status Status
	// Apply is true when Status.Release must be applied now, in Status.State.
	Apply bool
	// CheckPreconditions is true when the apply must first pass the preconditions: an
	// update that has applied nothing yet and is not forced.
	CheckPreconditions bool
}

// Decide is the worker's loop as a pure function: it folds what the host reported of
// the apply that just ended into the status, then decides what to apply next, in which
// state, after which delay, with which events.
//
//   - An interrupted apply (a stop, a replaced release) is not a failure: the status
//     says Interrupted and the next apply starts at once, in the same state.
//   - A failed apply counts a failure and is retried after Policy.Backoff's delay; a
//     completed one makes the worker Reconciling and reconciles every Policy.Interval.
//     Both times are kept in Status.NextApplyTime, to the microsecond a custom
//     resource stores and rounded up to it, so that no apply starts before its
//     interval or backoff has elapsed, whatever their precision, and a worker
//     restarted from the status keeps them.
//   - No wait is longer than its own length: a NextApplyTime further from Now than
//     the interval, or than the backoff at its largest jitter (the clock stepped
//     back, or the status comes from a replica whose clock runs ahead), is pulled
//     back to Now plus that length; a LastProgressTime in the future becomes Now.
//   - A desired release that is not the status's (Release.Same) starts anew:
//     Initializing while no release has completed, Updating after, with an entry in
//     the history. The same release through a mirror starts nothing.
//   - Done never goes backwards within a release, unless the payload shrinks below it.
//
// An invalid Policy, Status or Observation, or a zero Now, is an error matching
// converge.ErrInvalid that names every problem, and no decision.
func Decide(in Input) (Decision, error) {
	if err := in.validate(); err != nil {
		return Decision{}, err
	}
	p := in.Policy.withDefaults()
	at := metav1.NewTime(in.Now.Truncate(time.Second))
	s := *in.Status.DeepCopy()
	var d Decision
	if obs := &in.Observation; !obs.Release.IsZero() && !s.Release.IsZero() && obs.Release.Same(s.Release) {
		d.Events = fold(&s, obs, p, in.Now, in.Jitter)
	}
	boundWaits(&s, p, in.Now)
	s.Holds = nil
	var opens time.Time
	if !in.Desired.IsZero() {
		s.ObservedGeneration = in.Generation
		switch current := s.State != "" && !s.Release.IsZero(); {
		case current && s.Release.Same(in.Desired):
			s.Release = carry(s.Release, in.Desired)
		case in.Policy.Paused || len(in.Policy.Windows) > 0:
			if s.Holds, opens = holds(&in); s.Holds == nil {
				d.Events = append(d.Events, start(&s, in.Desired, p, at))
			}
		default:
			d.Events = append(d.Events, start(&s, in.Desired, p, at))
		}
		if s.State != "" && !s.Release.IsZero() {
			schedule(&d, &s, in.Now, in.Desired.Force)
		}
	}
	if !opens.IsZero() && (d.RequeueAfter == 0 || opens.Sub(in.Now) < d.RequeueAfter) && !d.Apply {
		d.RequeueAfter = opens.Sub(in.Now)
	}
	setConditions(&s, p, in.Now)
	d.Status = s
	return d, nil
}

// schedule decides whether s.Release is applied now or when: at once after an
// interruption or once its NextApplyTime has come.
func schedule(d *Decision, s *Status, now time.Time, force bool) {
	if s.Interrupted || s.NextApplyTime == nil || !now.Before(s.NextApplyTime.Time) {
		d.Apply = true
		d.CheckPreconditions = s.State == StateUpdating && s.Done == 0 && !force
		return
	}
	d.RequeueAfter = s.NextApplyTime.Sub(now)
}

// holds returns what keeps in.Desired from starting, sorted, nil when
// nothing does, and when the windows open if they are closed. in has been
// validated, its windows' zones included.
func holds(in *Input) ([]converge.Hold, time.Time) {
	var hs []converge.Hold
	if in.Policy.Paused {
		hs = append(hs, converge.PausedHold("no update to "+in.Desired.String()+" starts"))
	}
	var opens time.Time
	if open, change, err := converge.WindowsOpen(in.Policy.Windows, in.Zones, in.Now); err == nil && !open {
		hs, opens = append(hs, converge.WindowClosedHold(change)), change
	}
	return converge.SortHolds(hs), opens
}

// validate reports a bad Policy, Status or Observation and a zero Now, all of them.
func (in *Input) validate() error {
	problems := input.Problems(in.Policy.validate(), "policy: ")
	problems = append(problems, input.Problems(in.Status.validate(), "status: ")...)
	o := &in.Observation
	if o.Done < 0 || o.Total < 0 {
		problems = append(problems, fmt.Sprintf("observation: done %d or total %d is negative", o.Done, o.Total))
	}
	if !o.State.known() {
		problems = append(problems, fmt.Sprintf("observation: state %q is unknown", o.State))
	}
	if in.Now.IsZero() {
		problems = append(problems, input.ZeroNow)
	} else if len(problems) == 0 && len(in.Policy.Windows) > 0 {
		_, _, err := converge.WindowsOpen(in.Policy.Windows, in.Zones, in.Now)
		problems = append(problems, input.Problems(err, "policy: windows: ")...)
	}
	return input.Invalid("payload", "input", problems...)
}

// fold records what an apply of s.Release did, and returns the events to emit.
func fold(s *Status, out *Observation, p Policy, now time.Time, jitter float64) []converge.Event {
	var events []converge.Event
	at := metav1.NewTime(now.Truncate(time.Second))
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
		events = append(events, converge.Event{Type: converge.EventTypeNormal, Reason: ReasonManifestsDeleted,
			Message: boundMessage(fmt.Sprintf("Deleted %s of %s: %s", count(len(out.Removed), "object"), s.Release, strings.Join(out.Removed, ", ")))})
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
		s.NextApplyTime = dueAfter(now, p.Backoff.Delay(s.Failures, jitter))
		events = append(events, converge.Event{Type: converge.EventTypeWarning, Reason: sanitizeReason(s.Failure.Reason), Message: s.Failure.Message})
	default:
		s.Interrupted = false
		if s.State != StateReconciling {
			events = append(events, converge.Event{Type: converge.EventTypeNormal, Reason: ReasonPayloadApplied,
				Message: fmt.Sprintf("Applied %s of %s", count(int(s.Total), "manifest"), s.Release)})
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
		s.NextApplyTime = dueAfter(now, p.Interval.Duration)
	}
	return events
}

// dueAfter is now+d rounded up to the microsecond, the precision of a persisted
// converge.MicroTime: never sooner than d.
func dueAfter(now time.Time, d time.Duration) *converge.MicroTime {
	due := now.Add(d)
	up := due.Truncate(time.Microsecond)
	if up.Before(due) {
		up = up.Add(time.Microsecond)
	}
	mt := converge.NewMicroTime(up)
	return &mt
}

// start moves s to the desired release: Initializing while no release has completed,
// Updating after. The release left behind ends its history entry.
func start(s *Status, desired Release, p Policy, at metav1.Time) converge.Event {
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
		return converge.Event{Type: converge.EventTypeNormal, Reason: ReasonInitializingStarted, Message: "Initializing " + desired.String()}
	}
	return converge.Event{Type: converge.EventTypeNormal, Reason: ReasonUpdateStarted, Message: fmt.Sprintf("Updating from %s to %s", from, desired)}
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

// count is n and noun, plural unless n is 1: "1 object", "3 objects".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
