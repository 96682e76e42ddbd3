package addon

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

// boundWaits keeps every wait the status holds within what the engine
// itself could have written for it from now, so that neither a clock
// stepped back nor a status written by someone else makes a wait longer
// than its backoff, poll interval, deadline or claim: a retry is due
// within its backoff, a health check within its interval and no later than
// a re-apply owed, a re-apply within its backoff, a phase's deadline within
// its timeout (unless held), and a claim lapses ActionTimeout plus
// ClaimGrace after it was taken (or after now, if it claims to be taken
// later). Times in the future that count from the past (the last attempt,
// unreadable health, a hold) become now.
func (d *decider) boundWaits() {
	st := &d.st
	now := d.now.Time
	st.NextAttemptTime = notAfter(st.NextAttemptTime, now, d.longestWait(st.PendingAction))
	if st.ReapplyTime != nil {
		st.ReapplyTime = notAfter(st.ReapplyTime, now, d.rules.backoff.Delay(max(st.Failures, 1), 1))
		if st.NextAttemptTime != nil && st.ReapplyTime != nil && st.NextAttemptTime.After(st.ReapplyTime.Time) {
			st.NextAttemptTime = st.ReapplyTime
		}
	}
	if st.Deadline != nil && st.HeldSince == nil {
		d.setDeadline(st.Deadline.Time)
	}
	for _, t := range [...]**metav1.Time{&st.LastAttemptTime, &st.HealthUnknownSince, &st.HeldSince} {
		if *t != nil && (*t).After(now) {
			*t = d.at(0)
		}
	}
	if c := st.InFlight; c != nil {
		taken := c.Started.Time
		if taken.After(now) {
			taken = now
		}
		if latest := taken.Add(d.rules.actionTimeout + ClaimGrace); c.Expires.After(latest) {
			d.event(converge.EventTypeWarning, ReasonClaimExpiryBounded, fmt.Sprintf(
				"claim of %s by %s, taken at %s, expires at %s: later than the engine writes (ActionTimeout %s and ClaimGrace %s after it was taken); it expires at %s",
				c.Action, c.Owner, stamp(c.Started.Time), stamp(c.Expires.Time), d.rules.actionTimeout, ClaimGrace, stamp(latest)))
			bounded := *c
			bounded.Expires = metav1.NewTime(latest)
			st.InFlight = &bounded
		}
	}
}

// longestWait is the longest wait the engine schedules for action a from
// now: a health check's poll interval, a mutating action's backoff at the
// largest jitter, and nothing for the rest.
func (d *decider) longestWait(a Action) time.Duration {
	switch {
	case a == ActionCheckHealth && d.st.Phase == PhaseChecking:
		return d.rules.checkInterval
	case a == ActionCheckHealth:
		return d.rules.runningInterval
	case a.mutates():
		return d.rules.backoff.Delay(d.st.Failures, 1)
	}
	return 0
}

// setDeadline sets the phase's deadline to t, or to the phase's timeout
// from now when t lies later: the latest deadline the engine writes. A
// deadline already at that time is left as it is.
func (d *decider) setDeadline(t time.Time) {
	if latest := d.now.Add(d.rules.timeout(d.st.Phase)); t.After(latest) {
		t = latest
	}
	if !t.Equal(d.st.Deadline.Time) {
		d.st.Deadline = &metav1.Time{Time: t}
	}
}

// notAfter returns t, or now plus wait when t is later (nil when that is
// not after now).
func notAfter(t *metav1.Time, now time.Time, wait time.Duration) *metav1.Time {
	if t == nil || !t.After(now.Add(wait)) {
		return t
	}
	if wait <= 0 {
		return nil
	}
	bounded := metav1.NewTime(now.Add(wait))
	return &bounded
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
