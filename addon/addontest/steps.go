package addontest

import (
	"errors"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
)

// world is one way the world moves before a look.
type world struct {
	name string
	move func(s *exploreState) bool // false: not applicable
	// stale makes the look see s.prev; the state keeps the spec as it is.
	stale bool
}

func (e *explorer) worlds() []world {
	newGeneration := func(s *exploreState, version string) bool {
		if s.spec.Deleting {
			return false
		}
		s.prev = s.spec
		s.spec.Generation++
		s.spec.Version = version
		return true
	}
	return []world{
		{name: "look", move: func(*exploreState) bool { return true }},
		{name: "new version", move: func(s *exploreState) bool { return newGeneration(s, otherVersion(s.spec.Version)) }},
		{name: "new spec, same version", move: func(s *exploreState) bool { return newGeneration(s, s.spec.Version) }},
		{name: "delete", move: func(s *exploreState) bool {
			if s.spec.Deleting {
				return false
			}
			s.spec.Deleting = true
			return true
		}},
		{name: "suspend or resume", move: func(s *exploreState) bool {
			if s.spec.Deleting {
				return false
			}
			s.spec.Suspended = !s.spec.Suspended
			return true
		}},
		{name: "reset", move: func(s *exploreState) bool {
			s.spec.ResetToken = newToken("r", s.status.LastResetToken)
			return true
		}},
		{name: "force", move: func(s *exploreState) bool {
			s.spec.ForceToken = newToken("f", s.status.LastForceToken)
			return true
		}},
		{name: "stale spec", stale: true, move: func(s *exploreState) bool { return s.prev.Generation > 0 }},
		{name: "time to the deadline", move: func(s *exploreState) bool {
			return s.status.Deadline != nil && e.advance(s, s.status.Deadline.Time)
		}},
		{name: "time to the claim's expiry", move: func(s *exploreState) bool {
			return s.status.InFlight != nil && e.advance(s, s.status.InFlight.Expires.Time)
		}},
		{name: "time to the latest expiry the engine writes", move: func(s *exploreState) bool {
			c := s.status.InFlight
			return c != nil && e.advance(s, c.Started.Add(e.limits.claim))
		}},
		{name: "the clock steps back an hour", move: func(s *exploreState) bool {
			st := &s.status
			if s.once&onceClockBack != 0 || st.NextAttemptTime == nil && st.ReapplyTime == nil && st.InFlight == nil {
				return false
			}
			s.once |= onceClockBack
			s.now = s.now.Add(-time.Hour)
			return true
		}},
		{name: "another writer stretches the claim to year 9999", move: func(s *exploreState) bool {
			if s.status.InFlight == nil || s.running != nil || s.once&onceStretched != 0 {
				return false
			}
			s.once |= onceStretched
			c := *s.status.InFlight
			c.Expires = metav1.NewTime(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
			st := s.status
			st.InFlight = &c
			s.write(st)
			return true
		}},
	}
}

// advance moves s's clock forward to t; false when t is not ahead, or when
// it passes the claim of an action still running: the Driver returns within
// ActionTimeout, before its claim expires, so that action's Machine has
// crashed first (a step of its own).
func (e *explorer) advance(s *exploreState, t time.Time) bool {
	if !s.now.Before(t) || s.running != nil && !t.Before(s.running.Expires.Time) {
		return false
	}
	s.now = t
	return true
}

func newToken(prefix, last string) string {
	if last == prefix+"1" {
		return prefix + "2"
	}
	return prefix + "1"
}

func otherVersion(v string) string {
	if v == exploreVersions[0] {
		return exploreVersions[1]
	}
	return exploreVersions[0]
}

var errExplored = errors.New("explored failure")

// successors tries every step from s, in a fixed order, checking the rules.
func (e *explorer) successors(s *exploreState) ([]exploreState, error) {
	out := make([]exploreState, 0, 24)
	add := func(n exploreState, name string) {
		n.path = s.path.then(name, len(out))
		out = append(out, n)
	}
	// addRecorded adds from after each of outcomes, decided with spec.
	addRecorded := func(spec addon.Spec, from exploreState, outcomes []exploreOutcome, prefix string) error {
		for _, o := range outcomes {
			n, err := e.recorded(spec, from, o.obs, prefix+o.name)
			if err != nil {
				return err
			}
			add(n, prefix+o.name)
		}
		return nil
	}
	for _, w := range e.worlds() {
		moved := *s
		if !w.move(&moved) {
			continue
		}
		looked := moved.spec
		if w.stale {
			looked = moved.prev
		}
		in := e.input(looked, moved.status, moved.now, addon.Observation{})
		d, err := e.decide(in, &moved, s.path, w.name)
		if err != nil {
			return nil, err
		}
		base := moved
		base.write(d.Status)
		switch {
		case d.Action == addon.ActionNone:
			add(base, w.name)
			if later := base; !w.stale && d.RequeueAfter > addon.RequeueNow && e.advance(&later, later.now.Add(d.RequeueAfter)) {
				add(later, w.name+", then "+d.RequeueAfter.String()+" pass")
			}
		case d.Action == addon.ActionCheckHealth:
			if err := addRecorded(in.Spec, base, healthReads, w.name+": "); err != nil {
				return nil, err
			}
		default:
			c := d.Status.InFlight
			if err := addRecorded(in.Spec, base, e.outcomes(c), w.name+": "); err != nil {
				return nil, err
			}
			if base.running == nil {
				n := base
				n.running = c
				add(n, w.name+": "+string(c.Action)+" runs on")
			}
		}
	}
	if s.older != nil {
		if err := e.lookStale(s); err != nil {
			return nil, err
		}
	}
	if c := s.running; c != nil {
		done := *s
		done.running = nil
		if err := addRecorded(s.spec, done, e.outcomes(c), "the running "); err != nil {
			return nil, err
		}
		for _, applied := range [...]bool{false, true} {
			n := *s
			n.running = nil
			n.world = crashed(n.world, c, applied)
			name := "the Machine running " + string(c.Action) + " crashes before it ran"
			if applied {
				name = "the Machine running " + string(c.Action) + " crashes after it applied"
			}
			add(n, name)
		}
	}
	return out, nil
}

// lookStale checks a look at s.older, the status before the latest write,
// with the spec as it is. A decision that writes (a claim, a health read to
// record, a changed status) is refused by the Store, the status it was
// decided from being no longer the persisted one, and changes nothing; one
// that writes nothing reaches the host, which waits as it says and drops
// its finalizer on Deleted.
func (e *explorer) lookStale(s *exploreState) error {
	e.transitions++
	fail := func(format string, args ...any) error {
		return e.broken(s.path, "a look at the status before the latest write", format, args...)
	}
	in := e.input(s.spec, *s.older, s.now, addon.Observation{})
	d, err := addon.Decide(in)
	if err != nil {
		return fail("Decide failed: %v", err)
	}
	e.wrote(d)
	if d.Action != addon.ActionNone || !reflect.DeepEqual(d.Status, in.Status) {
		return nil
	}
	if d.Deleted && (s.world.cluster != "" || s.running != nil) {
		return fail("Deleted from a stale status while the cluster runs %q", s.world.cluster)
	}
	return e.bounded(in, d, fail)
}

func (e *explorer) input(spec addon.Spec, st addon.Status, now time.Time, obs addon.Observation) addon.Input {
	return addon.Input{Spec: spec, Status: st, Observation: obs, Policy: e.opts.Policy, Table: e.opts.Table, Now: now, Owner: "explorer"}
}

// recorded is s once the Driver returned obs and Decide, given spec,
// recorded it.
func (e *explorer) recorded(spec addon.Spec, s exploreState, obs addon.Observation, name string) (exploreState, error) {
	s.world = e.observed(s.world, obs)
	d, err := e.decide(e.input(spec, s.status, s.now, obs), &s, s.path, name)
	s.write(d.Status)
	return s, err
}

type exploreOutcome struct {
	name string
	obs  addon.Observation
}

var healthReads = []exploreOutcome{
	{"healthy", addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy}},
	{"unhealthy", addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthUnhealthy}},
	{"health unknown", addon.Observation{Action: addon.ActionCheckHealth, Err: errExplored}},
}

func (e *explorer) outcomes(c *addon.Claim) []exploreOutcome {
	return []exploreOutcome{
		{string(c.Action) + " succeeds", addon.Observation{Action: c.Action, Claim: c}},
		{string(c.Action) + " fails", addon.Observation{Action: c.Action, Claim: c, Err: errExplored}},
	}
}

// observed is the world after the Driver returned obs: a health read says
// whether the cluster serves, a test whether it passes, a failed install or
// upgrade is the failure to remediate, and a successful action changed the
// cluster (the engine may discard the outcome; the world changed anyway).
func (e *explorer) observed(w exploreWorld, obs addon.Observation) exploreWorld {
	switch a := obs.Action; {
	case a == addon.ActionCheckHealth:
		w.read = obs.Err == nil && obs.Health == addon.HealthHealthy
	case a == addon.ActionTest:
		w.tested = obs.Err == nil || e.limits.ignored
	case obs.Err != nil:
		if a == addon.ActionInstall || a == addon.ActionUpgrade {
			w.failed, w.failedBy = obs.Claim.To, a
		}
	default:
		w = applied(w, obs.Claim)
		w.failed, w.failedBy = "", addon.ActionNone
	}
	return w
}

// crashed is the world after the Machine running c crashed, c applied or
// not: the engine will count it lost, a failure.
func crashed(w exploreWorld, c *addon.Claim, done bool) exploreWorld {
	if done {
		w = applied(w, c)
	}
	if c.Action == addon.ActionInstall || c.Action == addon.ActionUpgrade {
		w.failed, w.failedBy = c.To, c.Action
	}
	return w
}

// applied is the world once c changed the cluster.
func applied(w exploreWorld, c *addon.Claim) exploreWorld {
	switch c.Action {
	case addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback:
		w.cluster, w.read, w.tested = c.To, false, false
	case addon.ActionUninstall:
		w.cluster, w.read, w.tested = "", false, false
	}
	return w
}

// healthy reports whether the cluster runs a version that serves: read
// healthy and, when the policy tests it, tested since it changed.
func (e *explorer) healthy(w exploreWorld) bool {
	return w.cluster != "" && w.read && (!e.limits.tests || w.tested)
}
