package addon

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/internal/input"
)

// ExploreOptions bounds an exhaustive exploration of a transition table.
type ExploreOptions struct {
	// Table is the table to explore; nil means DefaultTable.
	Table *Table
	// Policy is the policy Decide runs with.
	Policy Policy
	// Depth is how many steps from a new add-on the exploration goes.
	Depth int
	// Converge is the k of the liveness rule: from every reachable state,
	// once the world behaves, Running (healthy: at the desired version, or
	// at the last good one after a failed upgrade) or Deleted is reached
	// within Converge steps (a Failed add-on or a stopped deletion
	// first gets a reset request, as an operator would send, or a new spec
	// where the table has no reset row). 0 means 40.
	Converge int
	// Replay, when not empty, walks only the path an ExploreError names
	// (its Path) and tries the steps after it, checking the same rules,
	// instead of exploring; a path that is not one of this exploration is
	// converge.ErrInvalid.
	Replay string
}

// ExploreReport says how much an exploration covered.
type ExploreReport struct {
	// States counts the distinct states reached (statuses with the status
	// before their latest write, their spec and world, times taken
	// relative to the present).
	States int
	// Transitions counts the decisions tried.
	Transitions int
	// Depth is the depth reached.
	Depth int
}

// ExploreError is a rule an exploration found broken and the path that
// breaks it.
type ExploreError struct {
	// Rule says which rule broke, and how.
	Rule string
	// Steps name the steps from a new add-on to the decision that broke it.
	Steps []string
	// Path is the same steps as ExploreOptions.Replay takes them.
	Path string
}

// Error implements error.
func (e *ExploreError) Error() string {
	return fmt.Sprintf("addon: explore: %s\n  after: %s\n  path: %s", e.Rule, strings.Join(e.Steps, " → "), e.Path)
}

// Explore checks, breadth-first, every state reachable from a new add-on
// within opts.Depth steps. A state is the spec, the persisted status, the
// time, and the world the add-on runs in: the version the cluster runs and
// whether it was last read healthy. A step is one of:
//
//   - a look by Decide after the world moved: a new version, a new spec at
//     the same version, a deletion, a suspension or a resume, a reset or
//     force request, time jumping to a deadline, a claim's expiry or the
//     next requeue, the clock stepping back an hour, another writer
//     stretching a claim's expiry to year 9999;
//   - a look at a stale spec: the one before the latest generation, as an
//     old cache serves it;
//   - a look at a stale status: the one before the latest write, as a
//     lagging cache serves it, with the spec as it is. A Machine writes what
//     it decides from a read over that read's resource version, which is no
//     longer the persisted one, so the Store refuses any write (a claim, a
//     health read, a changed status) and the Machine looks again afresh: the
//     state stays as it is. What reaches the host is only a decision that
//     writes nothing: its wait and its Deleted, which the rules check;
//   - the outcome of the action a look claimed: it succeeds or fails at
//     once, or stays in flight while other steps happen, and then succeeds,
//     fails, or its Machine crashes after its claim was written, with the
//     action applied or not (a crash between any two writes);
//   - a health read: healthy, unhealthy or unknown.
//
// After every decision it checks, against the world and the spec as they
// are rather than against the status:
//
//   - a version the cluster runs and last read healthy is never
//     uninstalled, except on deletion or as the uninstall the policy
//     chooses for a failed install or upgrade of a different version, and
//     never replaced by another version the spec does not ask for, whatever
//     failed before; while it is the version the spec asks for, it stays
//     watched (something is pending: a health check, a re-apply);
//   - no Install is chosen while a version is installed;
//   - a spec generation below the highest one a decision was given is
//     acted on in no way;
//   - nothing runs while a claim holds, and no claim holds past the latest
//     expiry the engine writes (ActionTimeout plus ClaimGrace after it was
//     taken, or after now if that lies in the future);
//   - no wait (RequeueAfter) is longer than the longest backoff, poll
//     interval or claim the policy sets, and no deadline lies further than
//     the longest phase timeout, even after the clock stepped back;
//   - Deleted follows a successful uninstall, the cluster empty and nothing
//     in flight;
//   - the last good version and the observed generation never go back;
//   - nothing is stuck: the status validates, and a decision that asks for
//     no requeue waits for the spec (Failed, Deleted, a stopped deletion, a
//     suspension);
//
// and from every state the liveness rule of ExploreOptions.Converge. The
// error is an *ExploreError.
func Explore(opts ExploreOptions) (ExploreReport, error) {
	if opts.Converge == 0 {
		opts.Converge = 40
	}
	if err := opts.Policy.Validate(); err != nil {
		return ExploreReport{}, err
	}
	if opts.Table == nil {
		opts.Table = defaultTable
	}
	e := &explorer{opts: opts, limits: exploreLimitsOf(opts.Policy), seen: map[string]bool{}, live: map[string]bool{}}
	start := exploreState{spec: Spec{Name: "explore/addon", Generation: 1, Version: exploreVersions[0]}, now: exploreEpoch}
	if opts.Replay != "" {
		return e.replay(start)
	}
	e.seen[e.key(&start)] = true
	frontier := []*exploreState{&start}
	var report ExploreReport
	for depth := 0; depth < opts.Depth && len(frontier) > 0; depth++ {
		var next []*exploreState
		for _, s := range frontier {
			if err := e.liveness(s); err != nil {
				return e.report(depth), err
			}
			succ, err := e.successors(s)
			if err != nil {
				return e.report(depth), err
			}
			for i := range succ {
				if k := e.key(&succ[i]); !e.seen[k] {
					e.seen[k] = true
					next = append(next, &succ[i])
				}
			}
		}
		frontier = next
		report.Depth = depth + 1
	}
	for _, s := range frontier {
		if err := e.liveness(s); err != nil {
			return e.report(report.Depth), err
		}
	}
	return e.report(report.Depth), nil
}

// replay walks opts.Replay from start.
func (e *explorer) replay(start exploreState) (ExploreReport, error) {
	s := &start
	for depth, c := range strings.Split(e.opts.Replay, ".") {
		i, err := strconv.Atoi(c)
		if err != nil {
			return e.report(depth), input.Invalidf("addon", "replay", "%q: step %d is %q, not a number", e.opts.Replay, depth+1, c)
		}
		if err := e.liveness(s); err != nil {
			return e.report(depth), err
		}
		succ, err := e.successors(s)
		if err != nil {
			return e.report(depth), err
		}
		if i < 0 || i >= len(succ) {
			return e.report(depth), input.Invalidf("addon", "replay", "%q: step %d has %d successors, not %d", e.opts.Replay, depth+1, len(succ), i+1)
		}
		s = &succ[i]
	}
	if _, err := e.successors(s); err != nil {
		return e.report(len(s.path.names())), err
	}
	return e.report(len(s.path.names())), e.liveness(s)
}

// exploreEpoch is the explorer's start time; exploreVersions the versions
// its specs ask for.
var (
	exploreEpoch    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exploreVersions = [...]string{"v1", "v2"}
)

// exploreState is one state of the exploration.
type exploreState struct {
	// spec is the spec as it is; prev the one before its latest generation
	// (Generation 0: none), which a stale cache serves.
	spec, prev Spec
	status     Status
	// older is the status before the latest write (nil: none was written
	// yet), which a lagging cache serves.
	older *Status
	now   time.Time
	world exploreWorld
	// running is the claim of an action a Machine runs, its outcome still
	// to come.
	running *Claim
	// once marks what happens at most once a path: onceClockBack,
	// onceStretched.
	once uint8
	path *step
}

const (
	onceClockBack uint8 = 1 << iota
	onceStretched
)

// exploreWorld is what the cluster runs, as the explorer keeps it, apart
// from the status.
type exploreWorld struct {
	// cluster is the version the cluster runs ("" none); read is true when
	// its last health read since it changed was healthy, tested when its
	// tests passed (or failed, ignored) since it changed.
	cluster      string
	read, tested bool
	// failed is the version of the latest install or upgrade that failed
	// (failedBy), until an action next succeeds.
	failed   string
	failedBy Action
	// maxGen is the highest spec generation a decision was given.
	maxGen int64
}

// step is one step of a path, linked to the one before it.
type step struct {
	prev   *step
	name   string
	choice int
}

func (p *step) then(name string, choice int) *step { return &step{prev: p, name: name, choice: choice} }

func (p *step) names() []string {
	var out []string
	for ; p != nil; p = p.prev {
		out = append(out, p.name)
	}
	slices.Reverse(out)
	return out
}

func (p *step) choices() string {
	var out []string
	for ; p != nil; p = p.prev {
		out = append(out, strconv.Itoa(p.choice))
	}
	slices.Reverse(out)
	return strings.Join(out, ".")
}

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

func exploreLimitsOf(p Policy) exploreLimits {
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
		installUninstalls: p.InstallRemediation == RemediationDefault || p.InstallRemediation == RemediationUninstall,
		upgradeUninstalls: p.UpgradeRemediation == RemediationUninstall,
		tests:             p.Test.Enable,
		ignored:           p.Test.IgnoreFailures,
	}
	l.claim = l.actionTimeout + ClaimGrace
	l.wait = max(backoff, or(p.RunningInterval, 5*time.Minute), or(p.CheckInterval, 5*time.Second), l.claim)
	l.deadline = max(or(p.InstallTimeout, 10*time.Minute), or(p.CheckTimeout, 5*time.Minute), or(p.UpgradeTimeout, 10*time.Minute),
		or(p.RemediationTimeout, 10*time.Minute), or(p.DeleteTimeout, 10*time.Minute))
	return l
}

type explorer struct {
	opts        ExploreOptions
	limits      exploreLimits
	seen        map[string]bool
	live        map[string]bool
	transitions int
}

func (e *explorer) report(depth int) ExploreReport {
	return ExploreReport{States: len(e.seen), Transitions: e.transitions, Depth: depth}
}

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
	addRecorded := func(spec Spec, from exploreState, outcomes []exploreOutcome, prefix string) error {
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
		in := e.input(looked, moved.status, moved.now, Observation{})
		d, err := e.decide(in, &moved, s.path, w.name)
		if err != nil {
			return nil, err
		}
		base := moved
		base.write(d.Status)
		switch {
		case d.Action == ActionNone:
			add(base, w.name)
			if later := base; !w.stale && d.RequeueAfter > RequeueNow && e.advance(&later, later.now.Add(d.RequeueAfter)) {
				add(later, w.name+", then "+d.RequeueAfter.String()+" pass")
			}
		case d.Action == ActionCheckHealth:
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

// write persists st as s's status; the status it replaces, when st differs
// from it, is the one a lagging cache serves next.
func (s *exploreState) write(st Status) {
	if reflect.DeepEqual(st, s.status) {
		return
	}
	older := s.status
	s.older, s.status = &older, st
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
	in := e.input(s.spec, *s.older, s.now, Observation{})
	d, err := Decide(in)
	if err != nil {
		return fail("Decide failed: %v", err)
	}
	if d.Action != ActionNone || !reflect.DeepEqual(d.Status, in.Status) {
		return nil
	}
	if d.Deleted && (s.world.cluster != "" || s.running != nil) {
		return fail("Deleted from a stale status while the cluster runs %q", s.world.cluster)
	}
	return e.bounded(in, d, fail)
}

func (e *explorer) input(spec Spec, st Status, now time.Time, obs Observation) Input {
	return Input{Spec: spec, Status: st, Observation: obs, Policy: e.opts.Policy, Table: e.opts.Table, Now: now, Owner: "explorer"}
}

// recorded is s once the Driver returned obs and Decide, given spec,
// recorded it.
func (e *explorer) recorded(spec Spec, s exploreState, obs Observation, name string) (exploreState, error) {
	s.world = e.observed(s.world, obs)
	d, err := e.decide(e.input(spec, s.status, s.now, obs), &s, s.path, name)
	s.write(d.Status)
	return s, err
}

type exploreOutcome struct {
	name string
	obs  Observation
}

var healthReads = []exploreOutcome{
	{"healthy", Observation{Action: ActionCheckHealth, Health: HealthHealthy}},
	{"unhealthy", Observation{Action: ActionCheckHealth, Health: HealthUnhealthy}},
	{"health unknown", Observation{Action: ActionCheckHealth, Err: errExplored}},
}

func (e *explorer) outcomes(c *Claim) []exploreOutcome {
	return []exploreOutcome{
		{string(c.Action) + " succeeds", Observation{Action: c.Action, Claim: c}},
		{string(c.Action) + " fails", Observation{Action: c.Action, Claim: c, Err: errExplored}},
	}
}

// observed is the world after the Driver returned obs: a health read says
// whether the cluster serves, a test whether it passes, a failed install or
// upgrade is the failure to remediate, and a successful action changed the
// cluster (the engine may discard the outcome; the world changed anyway).
func (e *explorer) observed(w exploreWorld, obs Observation) exploreWorld {
	switch a := obs.Action; {
	case a == ActionCheckHealth:
		w.read = obs.Err == nil && obs.Health == HealthHealthy
	case a == ActionTest:
		w.tested = obs.Err == nil || e.limits.ignored
	case obs.Err != nil:
		if a == ActionInstall || a == ActionUpgrade {
			w.failed, w.failedBy = obs.Claim.To, a
		}
	default:
		w = applied(w, obs.Claim)
		w.failed, w.failedBy = "", ActionNone
	}
	return w
}

// crashed is the world after the Machine running c crashed, c applied or
// not: the engine will count it lost, a failure.
func crashed(w exploreWorld, c *Claim, done bool) exploreWorld {
	if done {
		w = applied(w, c)
	}
	if c.Action == ActionInstall || c.Action == ActionUpgrade {
		w.failed, w.failedBy = c.To, c.Action
	}
	return w
}

// applied is the world once c changed the cluster.
func applied(w exploreWorld, c *Claim) exploreWorld {
	switch c.Action {
	case ActionInstall, ActionUpgrade, ActionRollback:
		w.cluster, w.read, w.tested = c.To, false, false
	case ActionUninstall:
		w.cluster, w.read, w.tested = "", false, false
	}
	return w
}

// healthy reports whether the cluster runs a version that serves: read
// healthy and, when the policy tests it, tested since it changed.
func (e *explorer) healthy(w exploreWorld) bool {
	return w.cluster != "" && w.read && (!e.limits.tests || w.tested)
}

// decide runs Decide on in, s being the state it decides for (its spec
// as it is, its world), and checks the rules on the decision.
func (e *explorer) decide(in Input, s *exploreState, path *step, name string) (Decision, error) {
	e.transitions++
	fail := func(format string, args ...any) error { return e.broken(path, name, format, args...) }
	d, err := Decide(in)
	if err != nil {
		return d, fail("Decide failed: %v", err)
	}
	before, after := &in.Status, &d.Status
	look := in.Observation.Action == ActionNone
	w := &s.world
	defer func() { w.maxGen = max(w.maxGen, in.Spec.Generation) }()
	if c := after.InFlight; d.Action.mutates() && e.healthy(*w) {
		switch {
		case c.Action == ActionUninstall && !s.spec.Deleting && !(w.failed != "" && w.failed != w.cluster && e.uninstallsFor(w.failedBy)):
			return d, fail("the healthy %s is uninstalled, neither deleted nor remediating a failure of another version (last failed: %q)", w.cluster, w.failed)
		case (c.Action == ActionUpgrade || c.Action == ActionRollback) && c.To != w.cluster && c.To != s.spec.Version:
			return d, fail("the healthy %s is replaced by %s, which the spec (%s) does not ask for", w.cluster, c.To, s.spec.Version)
		}
	}
	if e.healthy(*w) && w.cluster == s.spec.Version && !s.spec.Deleting && !s.spec.Suspended &&
		after.PendingAction == ActionNone && after.InFlight == nil {
		return d, fail("the healthy %s, the version the spec asks for, is left unwatched in %s", w.cluster, after.Phase)
	}
	if d.Action == ActionInstall && before.InstalledVersion != "" {
		return d, fail("Install chosen while %s is installed", before.InstalledVersion)
	}
	if look && in.Spec.Generation < w.maxGen && (d.Action != ActionNone || !reflect.DeepEqual(*before, *after)) {
		return d, fail("stale generation %d acted on (generation %d was seen)", in.Spec.Generation, w.maxGen)
	}
	if c := before.InFlight; look && c != nil && before.Phase != PhaseDeleted && in.Spec.Generation >= w.maxGen {
		taken := c.Started.Time
		if taken.After(in.Now) {
			taken = in.Now
		}
		bound := taken.Add(e.limits.claim)
		if c.Expires.Time.Before(bound) {
			bound = c.Expires.Time
		}
		holds := after.InFlight != nil && after.InFlight.same(c)
		switch {
		case in.Now.Before(bound) && d.Action != ActionNone:
			return d, fail("%s chosen while %s by %s is in flight", d.Action, c.Action, c.Owner)
		case !in.Now.Before(bound) && holds:
			return d, fail("the claim of %s by %s holds past %s, the latest expiry the engine writes for it", c.Action, c.Owner, bound.UTC().Format(time.RFC3339))
		}
	}
	if after.Phase == PhaseDeleted && before.Phase != PhaseDeleted &&
		(in.Observation.Action != ActionUninstall || in.Observation.Err != nil || after.InFlight != nil || w.cluster != "") {
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
func (e *explorer) bounded(in Input, d Decision, fail func(format string, args ...any) error) error {
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
	waitsForSpec := after.Phase == PhaseFailed || after.Phase == PhaseDeleted || (after.Phase == PhaseDeleting && after.PendingAction == ActionNone) ||
		(after.SuspendedTime != nil && !in.Spec.Deleting)
	if d.Action == ActionNone && d.RequeueAfter == 0 && !waitsForSpec {
		return fail("stuck: %s waits for nothing with %s pending", after.Phase, after.PendingAction)
	}
	return nil
}

// uninstallsFor reports whether the policy remediates a failed a by
// uninstalling.
func (e *explorer) uninstallsFor(a Action) bool {
	switch a {
	case ActionInstall:
		return e.limits.installUninstalls
	case ActionUpgrade:
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
		d, err := Decide(e.input(cur.spec, cur.status, cur.now, Observation{Action: c.Action, Claim: c}))
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
		if st.Phase == PhaseDeleted || (st.Phase == PhaseRunning && st.Health == HealthHealthy && st.InFlight == nil) {
			break
		}
		if !requested && (st.Phase == PhaseFailed || (st.Phase == PhaseDeleting && st.PendingAction == ActionNone && st.InFlight == nil)) {
			if _, ok := e.opts.Table.Next(st.Phase, TriggerResetRequested); ok {
				cur.spec.ResetToken = newToken("r", st.LastResetToken)
			} else {
				cur.spec.Generation = max(cur.spec.Generation, st.ObservedGeneration, st.SeenGeneration) + 1
			}
			requested = true
		}
		d, err := Decide(e.input(cur.spec, cur.status, cur.now, Observation{}))
		if err != nil {
			return e.broken(s.path, "converging", "Decide failed: %v", err)
		}
		if d.Action != ActionNone {
			obs := Observation{Action: d.Action, Claim: d.Status.InFlight, Health: HealthHealthy}
			if d, err = Decide(e.input(cur.spec, d.Status, cur.now, obs)); err != nil {
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

// key identifies a state for the exploration: what Decide and the rules
// can tell apart, with times relative to the present and counters capped
// where more makes no difference.
func (e *explorer) key(s *exploreState) string {
	var b strings.Builder
	st := &s.status
	now := s.now
	rel := func(name string, t *time.Time, floor time.Duration) {
		b.WriteString(name)
		if t == nil {
			b.WriteString("-;")
			return
		}
		d := max(t.Sub(now), floor)
		b.WriteString(strconv.FormatInt(int64(d/time.Second), 10))
		b.WriteByte(';')
	}
	num := func(n int64) {
		b.WriteString(strconv.FormatInt(n, 10))
		b.WriteByte(',')
	}
	flag := func(f bool) {
		if f {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	maxRetries := int64(8)
	if r := e.opts.Policy.MaxRetries; r != nil && *r >= 0 {
		maxRetries = int64(*r) + 1
	}
	w := &s.world
	for _, f := range [...]string{string(st.Phase), string(st.PendingAction), string(st.Verifying), string(st.LastFailedAction),
		st.InstalledVersion, st.LastGoodVersion, st.FailedVersion, string(st.Health), s.spec.Version, s.prev.Version,
		w.cluster, w.failed, string(w.failedBy)} {
		b.WriteString(f)
		b.WriteByte('|')
	}
	num(min(int64(st.InstallFailures), maxRetries))
	num(min(int64(st.UpgradeFailures), maxRetries))
	num(min(int64(st.UninstallFailures), maxRetries))
	num(min(int64(st.Failures), 8))
	num(s.spec.Generation - st.ObservedGeneration)
	num(s.spec.Generation - st.SeenGeneration)
	num(s.spec.Generation - w.maxGen)
	num(s.spec.Generation - s.prev.Generation)
	num(int64(s.once))
	for _, f := range [...]bool{s.spec.Deleting, s.spec.Suspended, s.spec.ResetToken != "" && s.spec.ResetToken != st.LastResetToken,
		s.spec.ForceToken != "" && s.spec.ForceToken != st.LastForceToken, s.prev.Deleting, w.read, w.tested} {
		flag(f)
	}
	// Times in the past are all alike, but for those Decide counts from.
	long := -(e.limits.deadline + e.limits.wait)
	rel("n", timeOf(st.NextAttemptTime), 0)
	rel("r", timeOf(st.ReapplyTime), 0)
	if st.SuspendedTime != nil && st.Deadline != nil {
		b.WriteString("ds" + strconv.FormatInt(int64(max(st.Deadline.Sub(st.SuspendedTime.Time), 0)/time.Second), 10) + ";")
	} else {
		rel("d", timeOf(st.Deadline), 0)
	}
	rel("s", timeOf(st.SuspendedTime), long)
	rel("a", timeOf(st.LastAttemptTime), long)
	rel("h", timeOf(st.HealthUnknownSince), long)
	for _, c := range [...]*Claim{st.InFlight, s.running} {
		if c == nil {
			b.WriteString("c-;")
			continue
		}
		b.WriteString("c" + string(c.Action) + "," + c.Owner + "," + c.From + "," + c.To + ";")
		rel("t", &c.Started.Time, long)
		rel("x", &c.Expires.Time, 0)
	}
	flag(s.running != nil && st.InFlight != nil && s.running.same(st.InFlight))
	if e.condIs(st, TypeDrifted) {
		b.WriteString(TypeDrifted)
	}
	if s.older != nil {
		older := *s
		older.status, older.older = *s.older, nil
		b.WriteString("|older:" + e.key(&older))
	}
	return b.String()
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func (e *explorer) condIs(st *Status, typ string) bool {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}
