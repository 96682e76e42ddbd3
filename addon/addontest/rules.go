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
	if e.healthy(*w) && w.cluster == s.spec.Version && !s.spec.Deleting && !s.spec.Suspended &&
		after.PendingAction == addon.ActionNone && after.InFlight == nil {
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
		holds := sameAttempt(after.InFlight, c)
		switch {
		case in.Now.Before(bound) && d.Action != addon.ActionNone:
			return d, fail("%s chosen while %s by %s is in flight", d.Action, c.Action, c.Owner)
		case !in.Now.Before(bound) && holds:
			return d, fail("the claim of %s by %s holds past %s, the latest expiry the engine writes for it", c.Action, c.Owner, bound.UTC().Format(time.RFC3339))
		}
	}
	if after.Phase == addon.PhaseDeleted && before.Phase != addon.PhaseDeleted &&
		(in.Observation.Action != addon.ActionUninstall || in.Observation.Err != nil || after.InFlight != nil || w.cluster != "") {
		return d, fail("Deleted without a successful uninstall (the cluster runs %q)", w.cluster)
	}
	if before.LastGoodVersion != "" && after.LastGoodVersion == "" {
		return d, fail("last good version %s lost", before.LastGoodVersion)
	}
	if after.ObservedGeneration < before.ObservedGeneration {
		return d, fail("observed generation went back from %d to %d", before.ObservedGeneration, after.ObservedGeneration)
	}
	return d, e.bounded(in, d, fail)
}

// bounded checks the waits of d, decided from in: no longer than the
// policy's, and none without an end but for the spec.
func (e *explorer) bounded(in addon.Input, d addon.Decision, fail func(format string, args ...any) error) error {
	after := &d.Status
	if d.RequeueAfter > e.limits.wait {
		return fail("waits %s, longer than any backoff, poll or claim of the policy (%s)", d.RequeueAfter, e.limits.wait)
	}
	if after.Deadline != nil && after.SuspendedTime == nil && after.Deadline.Sub(in.Now) > e.limits.deadline {
		return fail("the deadline lies %s ahead, further than any phase timeout of the policy (%s)", after.Deadline.Sub(in.Now), e.limits.deadline)
	}
	if err := after.Validate(); err != nil {
		return fail("stuck: %v", err)
	}
	waitsForSpec := after.Phase == addon.PhaseFailed || after.Phase == addon.PhaseDeleted || (after.Phase == addon.PhaseDeleting && after.PendingAction == addon.ActionNone) ||
		(after.SuspendedTime != nil && !in.Spec.Deleting)
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
// running succeeds, then every look's action succeeds and reads healthy.
func (e *explorer) liveness(s *exploreState) error {
	k := e.key(s)
	if e.live[k] {
		return nil
	}
	cur := *s
	cur.spec.Suspended = false
	requested := false
	var visited []string
	if c := cur.running; c != nil {
		cur.running = nil
		d, err := addon.Decide(e.input(cur.spec, cur.status, cur.now, addon.Observation{Action: c.Action, Claim: c}))
		if err != nil {
			return e.broken(s.path, "converging", "Decide failed: %v", err)
		}
		cur.status = d.Status
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
		d, err := addon.Decide(e.input(cur.spec, cur.status, cur.now, addon.Observation{}))
		if err != nil {
			return e.broken(s.path, "converging", "Decide failed: %v", err)
		}
		if d.Action != addon.ActionNone {
			obs := addon.Observation{Action: d.Action, Claim: d.Status.InFlight, Health: addon.HealthHealthy}
			if d, err = addon.Decide(e.input(cur.spec, d.Status, cur.now, obs)); err != nil {
				return e.broken(s.path, "converging", "Decide failed: %v", err)
			}
		} else {
			cur.now = cur.now.Add(d.RequeueAfter)
		}
		cur.status = d.Status
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

func (e *explorer) broken(path *step, name, format string, args ...any) error {
	return &ExploreError{Rule: fmt.Sprintf(format, args...), Steps: append(path.names(), name), Path: path.choices()}
}
