package addontest

import (
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

// exploreLimits are the bounds the rules check, computed from the policy's
// fields and the defaults its documentation gives, not by the engine.
type exploreLimits struct {
	wait, deadline, claim time.Duration
	installUninstalls     bool
	upgradeUninstalls     bool
	// tests is true when the policy tests what it applies; ignored when
	// their failures do not count.
	tests, ignored bool
	actionTimeout  time.Duration
	// maxLost is how many lost attempts in a row are retried without
	// counting as failures; backoff the shortest retry wait.
	maxLost int32
	backoff time.Duration
}

func exploreLimitsOf(p addon.Policy) exploreLimits {
	or := func(d metav1.Duration, def time.Duration) time.Duration {
		if d.Duration > 0 {
			return d.Duration
		}
		return def
	}
	jitter := int64(10)
	if p.Backoff.JitterPercent != nil {
		jitter = int64(*p.Backoff.JitterPercent)
	}
	backoff := max(or(p.Backoff.Max, 5*time.Minute), or(p.Backoff.Initial, 10*time.Second))
	backoff += time.Duration(int64(backoff) * jitter / 100)
	l := exploreLimits{
		actionTimeout:     or(p.ActionTimeout, 2*time.Minute),
		installUninstalls: p.InstallRemediation == addon.RemediationDefault || p.InstallRemediation == addon.RemediationUninstall,
		upgradeUninstalls: p.UpgradeRemediation == addon.RemediationUninstall,
		tests:             p.Test.Enable,
		ignored:           p.Test.IgnoreFailures,
	}
	l.claim = l.actionTimeout + addon.ClaimGrace
	l.maxLost = 3
	if p.MaxLostRetries != nil {
		l.maxLost = *p.MaxLostRetries
	}
	l.backoff = or(p.Backoff.Initial, 10*time.Second)
	if p.Backoff.Max.Duration > 0 {
		l.backoff = min(l.backoff, p.Backoff.Max.Duration)
	}
	l.wait = max(backoff, or(p.RunningInterval, 5*time.Minute), or(p.CheckInterval, 5*time.Second), l.claim)
	l.deadline = max(or(p.InstallTimeout, 10*time.Minute), or(p.CheckTimeout, 5*time.Minute), or(p.UpgradeTimeout, 10*time.Minute),
		or(p.RemediationTimeout, 10*time.Minute), or(p.DeleteTimeout, 10*time.Minute))
	return l
}

// decide runs Decide on in, s being the state it decides for (its spec
// as it is, its world), and checks the rules on the decision.
func (e *explorer) decide(in addon.Input, s *exploreState, path *step, name string) (addon.Decision, error) {
	e.transitions++
	fail := func(format string, args ...any) error { return e.broken(path, name, format, args...) }
	d, err := addon.Decide(in)
	if err != nil {
		return d, fail("Decide failed: %v", err)
	}
	e.wrote(d)
	before, after := &in.Status, &d.Status
	look := in.Observation.Action == addon.ActionNone
	w := &s.world
	defer func() { w.maxGen = max(w.maxGen, in.Spec.Generation) }()
	if c := after.InFlight; c != nil && d.Action == c.Action && e.healthy(*w) {
		switch {
		case c.Action == addon.ActionUninstall && !s.spec.Deleting && !(w.failed != "" && w.failed != w.cluster && e.uninstallsFor(w.failedBy)):
			return d, fail("the healthy %s is uninstalled, neither deleted nor remediating a failure of another version (last failed: %q)", w.cluster, w.failed)
		case (c.Action == addon.ActionUpgrade || c.Action == addon.ActionRollback) && c.To != w.cluster && c.To != s.spec.Version:
			return d, fail("the healthy %s is replaced by %s, which the spec (%s) does not ask for", w.cluster, c.To, s.spec.Version)
		}
	}
	if e.healthy(*w) && w.cluster == s.spec.Version && !s.spec.Deleting &&
		after.PendingAction == addon.ActionNone && after.InFlight == nil && d.RequeueAfter != addon.RequeueNow {
		return d, fail("the healthy %s, the version the spec asks for, is left unwatched in %s", w.cluster, after.Phase)
	}
	if d.Action == addon.ActionInstall && before.InstalledVersion != "" {
		return d, fail("Install chosen while %s is installed", before.InstalledVersion)
	}
	if look && in.Spec.Generation < w.maxGen && (d.Action != addon.ActionNone || !reflect.DeepEqual(*before, *after)) {
		return d, fail("stale generation %d acted on (generation %d was seen)", in.Spec.Generation, w.maxGen)
	}
	if c := before.InFlight; look && c != nil && before.Phase != addon.PhaseDeleted && in.Spec.Generation >= w.maxGen {
		taken := c.Started.Time
		if taken.After(in.Now) {
			taken = in.Now
		}
		bound := taken.Add(e.limits.claim)
		if c.Expires.Time.Before(bound) {
			bound = c.Expires.Time
		}
		// A takeover's inspection keeps the claim until it is recorded, in
		// the same write.
		holds := sameAttempt(after.InFlight, c) && d.Action != addon.ActionInspect
		switch {
		case in.Now.Before(bound) && d.Action != addon.ActionNone:
			return d, fail("%s chosen while %s by %s is in flight", d.Action, c.Action, c.Owner)
		case !in.Now.Before(bound) && holds:
			return d, fail("the claim of %s by %s holds past %s, the latest expiry the engine writes for it", c.Action, c.Owner, bound.UTC().Format(time.RFC3339))
		}
	}
	if after.Phase == addon.PhaseDeleted && before.Phase != addon.PhaseDeleted && (!uninstalled(in.Observation) || after.InFlight != nil || w.cluster != "") {
		return d, fail("Deleted without a successful uninstall (the cluster runs %q)", w.cluster)
	}
	if before.LastGoodVersion != "" && after.LastGoodVersion == "" {
		return d, fail("last good version %s lost", before.LastGoodVersion)
	}
	if after.ObservedGeneration < before.ObservedGeneration {
		return d, fail("observed generation went back from %d to %d", before.ObservedGeneration, after.ObservedGeneration)
	}
	if err := e.processRules(in, d, s, fail); err != nil {
		return d, err
	}
	if err := e.gated(in, d, fail); err != nil {
		return d, err
	}
	return d, e.bounded(in, d, fail)
}

// uninstalled reports whether obs says the add-on is uninstalled: an
// uninstall succeeded, or an inspection found nothing installed.
func uninstalled(obs addon.Observation) bool {
	switch obs.Action {
	case addon.ActionUninstall:
		return obs.Err == nil
	case addon.ActionInspect:
		return obs.Err == nil && obs.Installed != nil && obs.Installed.Version == ""
	}
	return false
}

// processRules checks what the process boundary asks of decision d,
// decided from in for state s: fencing tokens that grow, a status that
// agrees with the cluster or says it does not, Running only on a tested
// version, failures counted only when the Driver reported one, and retries
// no sooner than the shortest backoff.
func (e *explorer) processRules(in addon.Input, d addon.Decision, s *exploreState, fail func(format string, args ...any) error) error {
	before, after, obs, w := &in.Status, &d.Status, &in.Observation, &s.world
	if c := after.InFlight; c != nil && !sameAttempt(c, before.InFlight) {
		newest := max(before.Fence, w.fence)
		if s.running != nil {
			newest = max(newest, s.running.Fence)
		}
		if c.Fence <= newest {
			return fail("the claim of %s carries fencing token %d, not above %d, the newest before it", c.Action, c.Fence, newest)
		}
	}
	says := after.InstalledVersion
	if after.Mismatch != nil {
		says = after.Mismatch.Version
	}
	if d.Action != addon.ActionInspect && after.InFlight == nil && !w.blind && says != w.cluster {
		return fail("the status says the cluster runs %q (installed %q) while it runs %q", says, after.InstalledVersion, w.cluster)
	}
	if e.limits.tests && !e.limits.ignored && after.Phase == addon.PhaseRunning && before.Phase != addon.PhaseRunning &&
		w.passed&versionBit(after.InstalledVersion) == 0 {
		return fail("Running on %s, whose tests never passed", after.InstalledVersion)
	}
	failures := func(st *addon.Status) int32 { return st.InstallFailures + st.UpgradeFailures + st.UninstallFailures }
	lostBeyond := after.LostAttempts > e.limits.maxLost && after.LostAttempts > before.LostAttempts
	if failures(after) > failures(before) && obs.Err == nil && obs.Action != addon.ActionCheckHealth && !lostBeyond {
		return fail("a failure counted that the Driver never reported (%d lost attempts in a row, %d retried)", after.LostAttempts, e.limits.maxLost)
	}
	return e.spaced(in, d, fail)
}

// spaced checks that a decision that records a failure or a lost attempt
// retries it no sooner than the shortest backoff of the policy, or the
// phase's deadline when that comes first.
func (e *explorer) spaced(in addon.Input, d addon.Decision, fail func(format string, args ...any) error) error {
	before, after := &in.Status, &d.Status
	if after.Failures <= before.Failures || after.InFlight != nil {
		return nil
	}
	retried := in.Observation.Action
	if c := before.InFlight; c != nil && (retried == addon.ActionNone || retried == addon.ActionInspect) {
		retried = c.Action
	}
	floor := e.limits.backoff
	if after.Deadline != nil {
		floor = min(floor, after.Deadline.Sub(in.Now))
	}
	var wait time.Duration
	switch {
	case after.ReapplyTime != nil && !after.ReapplyTime.Equal(before.ReapplyTime):
		wait = after.ReapplyTime.Sub(in.Now)
	case after.PendingAction != retried:
		return nil
	case after.NextAttemptTime != nil:
		wait = after.NextAttemptTime.Sub(in.Now)
	}
	if wait < floor {
		return fail("the failed %s is due again after %s, sooner than the shortest backoff (%s)", retried, wait, floor)
	}
	return nil
}

// bounded checks the waits of d, decided from in: no longer than the
// policy's, and none without an end but for the spec.
func (e *explorer) bounded(in addon.Input, d addon.Decision, fail func(format string, args ...any) error) error {
	after := &d.Status
	if d.RequeueAfter > e.limits.wait && !e.waitsForOpening(in, d) {
		return fail("waits %s, longer than any backoff, poll or claim of the policy (%s)", d.RequeueAfter, e.limits.wait)
	}
	if after.Deadline != nil && after.HeldSince == nil && after.Deadline.Sub(in.Now) > e.limits.deadline {
		return fail("the deadline lies %s ahead, further than any phase timeout of the policy (%s)", after.Deadline.Sub(in.Now), e.limits.deadline)
	}
	if err := after.Validate(); err != nil {
		return fail("stuck: %v", err)
	}
	waitsForSpec := after.Phase == addon.PhaseFailed || after.Phase == addon.PhaseDeleted || (after.Phase == addon.PhaseDeleting && after.PendingAction == addon.ActionNone) ||
		(len(after.Holds) > 0 && in.Policy.Paused)
	if d.Action == addon.ActionNone && d.RequeueAfter == 0 && !waitsForSpec {
		return fail("stuck: %s waits for nothing with %s pending", after.Phase, after.PendingAction)
	}
	return nil
}

// uninstallsFor reports whether the policy remediates a failed a by
// uninstalling.
func (e *explorer) uninstallsFor(a addon.Action) bool {
	switch a {
	case addon.ActionInstall:
		return e.limits.installUninstalls
	case addon.ActionUpgrade:
		return e.limits.upgradeUninstalls
	}
	return false
}

// liveness checks that s converges once the world behaves: an action
// running succeeds (a paused one lands, unless fenced out), then every
// look's action succeeds, reads healthy and inspects truthfully.
func (e *explorer) liveness(s *exploreState) error {
	k := e.key(s)
	if e.live[k] {
		return nil
	}
	cur := *s
	cur.gate = 0
	requested := false
	var visited []string
	fail := func(err error) error { return e.broken(s.path, "converging", "Decide failed: %v", err) }
	if c := cur.running; c != nil {
		cur.running, cur.paused = nil, false
		if err := e.behave(&cur, addon.Observation{Action: c.Action, Claim: c}); err != nil {
			return fail(err)
		}
	}
	for i := 0; i < e.opts.Converge; i++ {
		ck := e.key(&cur)
		if e.live[ck] {
			break
		}
		visited = append(visited, ck)
		st := &cur.status
		if st.Phase == addon.PhaseDeleted || (st.Phase == addon.PhaseRunning && st.Health == addon.HealthHealthy && st.InFlight == nil) {
			break
		}
		if !requested && (st.Phase == addon.PhaseFailed || (st.Phase == addon.PhaseDeleting && st.PendingAction == addon.ActionNone && st.InFlight == nil)) {
			if _, ok := e.opts.Table.Next(st.Phase, addon.TriggerResetRequested); ok {
				cur.spec.ResetToken = newToken("r", st.LastResetToken)
			} else {
				cur.spec.Generation = max(cur.spec.Generation, st.ObservedGeneration, st.SeenGeneration) + 1
			}
			requested = true
		}
		d, err := addon.Decide(e.input(cur.spec, cur.status, cur.now, addon.Observation{}, cur.gate))
		if err != nil {
			return fail(err)
		}
		cur.status = d.Status
		if d.Action != addon.ActionNone {
			obs := addon.Observation{Action: d.Action, Claim: d.Status.InFlight, Health: addon.HealthHealthy}
			if err := e.behave(&cur, obs); err != nil {
				return fail(err)
			}
		} else {
			cur.now = cur.now.Add(d.RequeueAfter)
		}
		if i == e.opts.Converge-1 {
			return e.broken(s.path, "converging", "neither Running nor Deleted within %d steps once the world behaves: %s (%s)",
				e.opts.Converge, cur.status.Phase, cur.status.Message)
		}
	}
	e.live[k] = true
	for _, v := range visited {
		e.live[v] = true
	}
	return nil
}

// behave records in s what a well-behaved world returns for obs: a
// mutating action lands (unless fenced out), a read inspects truthfully,
// and an inspection the decision asks for follows.
func (e *explorer) behave(s *exploreState, obs addon.Observation) error {
	for {
		if obs.Action == addon.ActionInspect || (obs.Action == addon.ActionCheckHealth && s.status.Mismatch != nil) {
			obs.Installed = &addon.Installed{Version: s.world.cluster}
		}
		if c := obs.Claim; c != nil && c.Fence < s.world.fence {
			obs.Err = errFenced
		}
		s.world = e.observed(s.world, obs)
		d, err := addon.Decide(e.input(s.spec, s.status, s.now, obs, s.gate))
		if err != nil {
			return err
		}
		s.status = d.Status
		if d.Action != addon.ActionInspect {
			return nil
		}
		obs = addon.Observation{Action: addon.ActionInspect}
	}
}

func (e *explorer) broken(path *step, name, format string, args ...any) error {
	return &ExploreError{Rule: fmt.Sprintf(format, args...), Steps: append(path.names(), name), Path: path.choices()}
}
