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
	gate := func(g uint8) func(s *exploreState) bool {
		return func(s *exploreState) bool {
			s.gate ^= g
			return e.opts.Gates
		}
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
		{name: "pause or resume", move: gate(gatePaused)},
		{name: "windows close or open", move: gate(gateClosed)},
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
// crashed or paused first (a step of its own).
func (e *explorer) advance(s *exploreState, t time.Time) bool {
	if !s.now.Before(t) || s.running != nil && !s.paused && !t.Before(runningUntil(s)) {
		return false
	}
	s.now = t
	return true
}

// runningUntil is when the claim of the action running in s lapses: when
// the Machine wrote it to, or earlier where a look bounded it after the
// clock stepped back (a bound that still lies ActionTimeout and ClaimGrace
// after the look in real time, and so after the action returned).
func runningUntil(s *exploreState) time.Time {
	until := s.running.Expires.Time
	if c := s.status.InFlight; sameAttempt(c, s.running) && c.Expires.Time.Before(until) {
		until = c.Expires.Time
	}
	return until
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

// errExplored is a failure the exploration draws; errFenced the refusal of
// a Driver that fences out a write under an older token.
var (
	errExplored = errors.New("explored failure")
	errFenced   = errors.New("fenced out: a newer claim wrote")
)

// successors tries every step from s, in a fixed order, checking the rules.
func (e *explorer) successors(s *exploreState) ([]exploreState, error) {
	x := &expansion{e: e, s: s, out: make([]exploreState, 0, 24)}
	for _, w := range e.worlds() {
		if err := x.look(w); err != nil {
			return nil, err
		}
	}
	if s.older != nil {
		if err := e.lookStale(s); err != nil {
			return nil, err
		}
	}
	if c := s.running; c != nil {
		done := *s
		done.running, done.paused = nil, false
		prefix := "the running "
		if s.paused {
			prefix = "the paused Machine resumes: "
		}
		if err := x.addRecorded(s.spec, done, e.outcomes(c), prefix); err != nil {
			return nil, err
		}
		if !s.paused {
			for _, n := range e.interrupted(s, c) {
				x.add(n.state, n.name)
			}
		}
	}
	return x.out, nil
}

// expansion collects the successors of one state s.
type expansion struct {
	e   *explorer
	s   *exploreState
	out []exploreState
}

// add adds n, reached from s by the step name.
func (x *expansion) add(n exploreState, name string) {
	n.path = x.s.path.then(name, len(x.out))
	x.out = append(x.out, n)
}

// addRecorded adds from after each of outcomes, decided with spec.
func (x *expansion) addRecorded(spec addon.Spec, from exploreState, outcomes []exploreOutcome, prefix string) error {
	for _, o := range outcomes {
		n, err := x.e.recorded(spec, from, o.obs, prefix+o.name)
		if err != nil {
			return err
		}
		x.add(n, prefix+o.name)
	}
	return nil
}

// look adds what a look after the world moved as w says leads to: its
// decision, the time it waits passing, or the outcomes of what it runs.
func (x *expansion) look(w world) error {
	e, s := x.e, x.s
	moved := *s
	if !w.move(&moved) {
		return nil
	}
	looked := moved.spec
	if w.stale {
		looked = moved.prev
	}
	in := e.input(looked, moved.status, moved.now, addon.Observation{}, moved.gate)
	d, err := e.decide(in, &moved, s.path, w.name)
	if err != nil {
		return err
	}
	base := moved
	base.write(d.Status)
	switch {
	case d.Action == addon.ActionNone:
		x.add(base, w.name)
		if later := base; !w.stale && d.RequeueAfter > addon.RequeueNow && e.advance(&later, later.now.Add(d.RequeueAfter)) {
			x.add(later, w.name+", then "+d.RequeueAfter.String()+" pass")
		}
		return nil
	case d.Action == addon.ActionCheckHealth:
		return x.addRecorded(in.Spec, base, e.healthReads(&base), w.name+": ")
	case d.Action == addon.ActionInspect:
		return x.addRecorded(in.Spec, base, inspections(base.world), w.name+": ")
	}
	c := d.Status.InFlight
	if err := x.addRecorded(in.Spec, base, e.outcomes(c), w.name+": "); err != nil {
		return err
	}
	if base.running == nil {
		n := base
		n.running = c
		x.add(n, w.name+": "+string(c.Action)+" runs on")
	}
	return nil
}

// interruption is a state a Machine running an action left.
type interruption struct {
	state exploreState
	name  string
}

// interrupted is what the Machine running c leaves when it crashes before
// its action ran or after it applied it, or when it pauses past its claim's
// expiry (it resumes later: a step of its own).
func (e *explorer) interrupted(s *exploreState, c *addon.Claim) []interruption {
	var out []interruption
	for _, applied := range [...]bool{false, true} {
		n := *s
		n.running = nil
		if applied {
			n.world = e.applied(n.world, c)
		}
		name := "the Machine running " + string(c.Action) + " crashes before it ran"
		if applied {
			name = "the Machine running " + string(c.Action) + " crashes after it applied"
		}
		out = append(out, interruption{n, name})
	}
	paused := *s
	paused.paused = true
	if until := runningUntil(s); paused.now.Before(until) {
		paused.now = until
	}
	return append(out, interruption{paused, "the Machine running " + string(c.Action) + " pauses past its claim's expiry"})
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
	in := e.input(s.spec, *s.older, s.now, addon.Observation{}, s.gate)
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

// input is what Decide is given for spec, st, now and obs under the gates
// of gate.
func (e *explorer) input(spec addon.Spec, st addon.Status, now time.Time, obs addon.Observation, gate uint8) addon.Input {
	return addon.Input{Spec: spec, Status: st, Observation: obs, Policy: e.policy(gate), Zones: e.zones, Table: e.opts.Table, Now: now, Owner: "explorer", Inspect: true}
}

// recorded is s once the Driver returned obs and Decide, given spec,
// recorded it. A mutating action lands unless the Driver fences it out (its
// claim's token is older than one the cluster took a write under): it then
// returns errFenced. An outcome discarded for a claim no longer held is
// followed, in the same write, by the inspection the engine asks for.
func (e *explorer) recorded(spec addon.Spec, s exploreState, obs addon.Observation, name string) (exploreState, error) {
	if c := obs.Claim; c != nil && obs.Err == nil && c.Fence < s.world.fence {
		obs.Err = errFenced
	}
	s.world = e.observed(s.world, obs)
	d, err := e.decide(e.input(spec, s.status, s.now, obs, s.gate), &s, s.path, name)
	if err == nil && d.Action == addon.ActionInspect {
		read := inspections(s.world)[0].obs
		s.world = e.observed(s.world, read)
		d, err = e.decide(e.input(spec, d.Status, s.now, read, s.gate), &s, s.path, name+", then the inspection")
	}
	s.write(d.Status)
	return s, err
}

type exploreOutcome struct {
	name string
	obs  addon.Observation
}

// healthReads are the health reads of s: healthy, unhealthy or unknown,
// each beside a truthful inspection while a mismatch stands, as the
// Machine asks.
func (e *explorer) healthReads(s *exploreState) []exploreOutcome {
	out := []exploreOutcome{
		{"healthy", addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthHealthy}},
		{"unhealthy", addon.Observation{Action: addon.ActionCheckHealth, Health: addon.HealthUnhealthy}},
		{"health unknown", addon.Observation{Action: addon.ActionCheckHealth, Err: errExplored}},
	}
	if s.status.Mismatch != nil {
		for i := range out {
			out[i].obs.Installed = &addon.Installed{Version: s.world.cluster}
		}
	}
	return out
}

// inspections are what an Inspector reports in world w: what the cluster
// runs, or an error.
func inspections(w exploreWorld) []exploreOutcome {
	return []exploreOutcome{
		{"inspected", addon.Observation{Action: addon.ActionInspect, Installed: &addon.Installed{Version: w.cluster}}},
		{"inspection fails", addon.Observation{Action: addon.ActionInspect, Err: errExplored}},
	}
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
	case a == addon.ActionInspect:
		w.blind = obs.Err != nil
	case obs.Err == errFenced:
	case a == addon.ActionTest:
		w.tested = obs.Err == nil || e.limits.ignored
		if w.tested {
			w.passed |= versionBit(obs.Claim.To)
		}
	case obs.Err != nil:
		if a == addon.ActionInstall || a == addon.ActionUpgrade {
			w.failed, w.failedBy = obs.Claim.To, a
		}
	default:
		w = e.applied(w, obs.Claim)
		w.failed, w.failedBy, w.blind = "", addon.ActionNone, false
	}
	return w
}

// applied is the world once c changed the cluster, the write under its
// fencing token.
func (e *explorer) applied(w exploreWorld, c *addon.Claim) exploreWorld {
	switch c.Action {
	case addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback:
		w.cluster, w.read, w.tested = c.To, false, false
	case addon.ActionUninstall:
		w.cluster, w.read, w.tested = "", false, false
	}
	if c.Action != addon.ActionTest {
		w.fence = max(w.fence, c.Fence)
	}
	return w
}

// healthy reports whether the cluster runs a version that serves: read
// healthy and, when the policy tests it, tested since it changed.
func (e *explorer) healthy(w exploreWorld) bool {
	return w.cluster != "" && w.read && (!e.limits.tests || w.tested)
}
