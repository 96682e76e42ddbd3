package addon

import (
	"fmt"
	"math"

	"github.com/converge-dev/converge"
)

// claim claims action a, now due: the claim names its owner, the versions
// it moves between, when it started and expires, and the next fencing
// token (Status.Fence plus one), which no claim before it carried.
func (d *decider) claim(a Action) {
	st := &d.st
	if st.Fence < math.MaxInt64 {
		st.Fence++
	}
	st.InFlight = &Claim{
		Action: a, Owner: d.owner(), From: st.InstalledVersion, To: d.target(a),
		Started: d.now, Expires: *d.at(d.rules.actionTimeout + ClaimGrace), Fence: st.Fence,
	}
}

func (d *decider) owner() string {
	if d.in.Owner == "" {
		return defaultOwner
	}
	return d.in.Owner
}

// claimHolds reports whether the claim of an attempt holds: the look waits
// for its outcome or its expiry. A claim that expired is taken over: with
// an Inspector (Input.Inspect) the look asks what the cluster runs first,
// and the inspection records the attempt (recordInspection); without one
// the attempt is lost.
func (d *decider) claimHolds() bool {
	c := d.st.InFlight
	if c == nil {
		return false
	}
	if d.in.Now.Before(c.Expires.Time) {
		d.waitUntil = &c.Expires
		return true
	}
	if d.in.Inspect {
		d.action = ActionInspect
		return true
	}
	d.lost(c, "")
	return false
}

// expired reports whether claim c has expired: its attempt can be taken
// over.
func (d *decider) expired(c *Claim) bool {
	return c != nil && !d.in.Now.Before(c.Expires.Time)
}

// lost records that the claim c expired before its owner recorded an
// outcome (a crash, a shutdown, lost writes, a replica paused past its
// claim): nothing says the attempt failed. Up to Policy.MaxLostRetries lost
// attempts in a row are retried after the backoff (no later than a
// deadline still ahead), counted apart (Status.LostAttempts) and never as
// a failure of what they applied, so no version is failed or remediated
// for a crash, nor by a deadline that passes while the retry is pending
// (see lostRetryPending); beyond that bound a lost attempt is a failure
// like any other, so a crash loop ends in the failure path instead of
// retrying forever. note says what an inspection found.
func (d *decider) lost(c *Claim, note string) {
	st := &d.st
	st.LostAttempts = satInc(st.LostAttempts)
	why := fmt.Errorf("claim by %s (fence %d) expired at %s before its outcome was recorded%s", c.Owner, c.Fence, stamp(c.Expires.Time), note)
	if !d.rules.lostRetried(st.LostAttempts) {
		d.outcome(c, why, OutcomeLost, "", "")
		return
	}
	st.InFlight = nil
	d.remember(c, OutcomeLost, "")
	st.Failures = satInc(st.Failures)
	msg := fmt.Sprintf("%s lost: %v; retrying it after the backoff (lost attempt %d, at most %d retried)",
		d.describe(c.Action, c.From, c.To), why, st.LostAttempts, d.rules.maxLostRetries)
	d.stay(c.Action, msg)
	wait := d.rules.backoff.Delay(st.Failures, d.in.Jitter)
	if st.Deadline != nil && st.Deadline.After(d.now.Time) {
		wait = min(wait, st.Deadline.Sub(d.now.Time))
	}
	st.NextAttemptTime = d.at(wait)
	st.Reason = ReasonClaimLost
	d.event(converge.EventTypeWarning, ReasonClaimLost, st.Message)
}

// lostRetryPending reports whether the pending action retries a lost
// attempt within Policy.MaxLostRetries: a deadline that passed does not
// end the phase before that retry ran.
func (d *decider) lostRetryPending() bool {
	return d.st.LostAttempts > 0 && d.rules.lostRetried(d.st.LostAttempts)
}
