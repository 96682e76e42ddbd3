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
}

// ExploreReport says how much an exploration covered.
type ExploreReport struct {
	// States counts the distinct states reached (statuses with their spec,
	// times taken relative to the present).
	States int
	// Transitions counts the steps tried.
	Transitions int
	// Depth is the depth reached.
	Depth int
}

// Explore checks, breadth-first, every state reachable from a new add-on
// within opts.Depth steps, where a step is one look by Decide after the
// world moved, and the outcome of the action it chose. The world moves by a
// new version, a new spec at the same version, a deletion, a suspension or
// a resume, a reset or force request, a stale spec from an old cache, time
// jumping to the next due time, the deadline or a claim's expiry; an action
// succeeds, fails, or is lost by a crash (its claim stays); a health check
// reads healthy, unhealthy or unknown. In every step it checks:
//
//   - no Install is chosen while a version is installed;
//   - no version known good is uninstalled, except in Deleting or when the
//     policy uninstalls for a failure of that very version;
//   - a stale spec generation is acted on in no way;
//   - nothing runs while another action's claim holds;
//   - Deleted follows a successful uninstall, with nothing in flight;
//   - the last good version and the observed generation never go back;
//   - nothing is stuck: the status validates, and a decision that asks
//     for no requeue waits for the spec (Failed, Deleted, a stopped
//     deletion, a suspension);
//
// and from every state the liveness rule of ExploreOptions.Converge. The
// error describes the first rule broken, with the steps that lead to it.
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
	e := &explorer{opts: opts, rules: opts.Policy.rules(), seen: map[string]bool{}, live: map[string]bool{}}
	start := exploreState{spec: Spec{Name: "explore/addon", Generation: 1, Version: exploreVersions[0]}, now: exploreEpoch}
	e.seen[e.key(start)] = true
	frontier := []exploreState{start}
	var report ExploreReport
	for depth := 0; depth < opts.Depth && len(frontier) > 0; depth++ {
		var next []exploreState
		for _, s := range frontier {
			if err := e.liveness(s); err != nil {
				return e.report(depth), err
			}
			succ, err := e.successors(s)
			if err != nil {
				return e.report(depth), err
			}
			for _, n := range succ {
				k := e.key(n)
				if !e.seen[k] {
					e.seen[k] = true
					next = append(next, n)
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

// exploreEpoch is the explorer's start time; exploreVersions the versions
// its specs ask for.
var (
	exploreEpoch    = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	exploreVersions = [...]string{"v1", "v2"}
)

type exploreState struct {
	spec   Spec
	status Status
	now    time.Time
	path   *step
}

// step is one step of a path, linked to the one before it.
type step struct {
	prev *step
	name string
}

func (p *step) then(name string) *step { return &step{prev: p, name: name} }

func (p *step) names() []string {
	var out []string
	for ; p != nil; p = p.prev {
		out = append(out, p.name)
	}
	slices.Reverse(out)
	return out
}

type explorer struct {
	opts        ExploreOptions
	rules       rules
	seen        map[string]bool
	live        map[string]bool
	transitions int
}

func (e *explorer) report(depth int) ExploreReport {
	return ExploreReport{States: len(e.seen), Transitions: e.transitions, Depth: depth}
}

// world is one way the world moves before a look.
type world struct {
	name  string
	move  func(s *exploreState) bool // false: not applicable
	stale bool                       // the look sees an old spec; the state keeps the real one
}

func (e *explorer) worlds() []world {
	return []world{
		{name: "look", move: func(*exploreState) bool { return true }},
		{name: "new version", move: func(s *exploreState) bool {
			if s.spec.Deleting {
				return false
			}
			s.spec.Generation++
			s.spec.Version = otherVersion(s.spec.Version)
			return true
		}},
		{name: "new spec, same version", move: func(s *exploreState) bool {
			if s.spec.Deleting {
				return false
			}
			s.spec.Generation++
			return true
		}},
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
			s.spec.ResetToken = e.newToken("r", s.status.LastResetToken)
			return true
		}},
		{name: "force", move: func(s *exploreState) bool {
			s.spec.ForceToken = e.newToken("f", s.status.LastForceToken)
			return true
		}},
		{name: "stale spec", stale: true, move: func(s *exploreState) bool {
			if s.status.ObservedGeneration < 2 {
				return false
			}
			s.spec.Generation = s.status.ObservedGeneration - 1
			s.spec.Version = otherVersion(s.spec.Version)
			return true
		}},
		{name: "time to the deadline", move: func(s *exploreState) bool {
			if s.status.Deadline == nil || !s.now.Before(s.status.Deadline.Time) {
				return false
			}
			s.now = s.status.Deadline.Time
			return true
		}},
		{name: "time to the claim's expiry", move: func(s *exploreState) bool {
			if s.status.InFlight == nil || !s.now.Before(s.status.InFlight.Expires.Time) {
				return false
			}
			s.now = s.status.InFlight.Expires.Time
			return true
		}},
	}
}

func (e *explorer) newToken(prefix, last string) string {
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

// successors tries every world and outcome from s, checking the rules.
func (e *explorer) successors(s exploreState) ([]exploreState, error) {
	var out []exploreState
	for _, w := range e.worlds() {
		moved := s
		moved.path = nil
		if !w.move(&moved) {
			continue
		}
		looked := moved.spec
		if w.stale {
			moved.spec = s.spec
		}
		in := Input{Spec: looked, Status: moved.status, Policy: e.opts.Policy, Table: e.opts.Table, Now: moved.now, Owner: "explorer"}
		d, err := e.decide(in, s.path, w.name)
		if err != nil {
			return nil, err
		}
		base := exploreState{spec: moved.spec, status: d.Status, now: moved.now, path: s.path.then(w.name)}
		if d.Action == ActionNone {
			out = append(out, base)
			if d.RequeueAfter > RequeueNow {
				later := base
				later.now = later.now.Add(d.RequeueAfter)
				later.path = base.path.then("time passes " + d.RequeueAfter.String())
				out = append(out, later)
			}
			continue
		}
		for _, o := range e.outcomes(d) {
			in.Status, in.Observation = d.Status, o.obs
			after, err := e.decide(in, base.path, o.name)
			if err != nil {
				return nil, err
			}
			out = append(out, exploreState{spec: moved.spec, status: after.Status, now: moved.now, path: base.path.then(o.name)})
		}
		if d.Action.mutates() {
			out = append(out, exploreState{spec: moved.spec, status: d.Status, now: moved.now, path: base.path.then("crash before the outcome")})
		}
	}
	return out, nil
}

type exploreOutcome struct {
	name string
	obs  Observation
}

var errExplored = errors.New("explored failure")

func (e *explorer) outcomes(d Decision) []exploreOutcome {
	a := d.Action
	if a == ActionCheckHealth {
		return []exploreOutcome{
			{"healthy", Observation{Action: a, Health: HealthHealthy}},
			{"unhealthy", Observation{Action: a, Health: HealthUnhealthy}},
			{"health unknown", Observation{Action: a, Err: errExplored}},
		}
	}
	return []exploreOutcome{
		{string(a) + " succeeds", Observation{Action: a, Claim: d.Status.InFlight}},
		{string(a) + " fails", Observation{Action: a, Claim: d.Status.InFlight, Err: errExplored}},
	}
}

// decide runs Decide and checks the rules on its decision.
func (e *explorer) decide(in Input, path *step, name string) (Decision, error) {
	e.transitions++
	d, err := Decide(in)
	if err != nil {
		return d, e.broken(path, name, "Decide failed: %v", err)
	}
	before, after := &in.Status, &d.Status
	fail := func(format string, args ...any) error { return e.broken(path, name, format, args...) }
	if d.Action == ActionInstall && before.InstalledVersion != "" {
		return d, fail("Install chosen while %s is installed", before.InstalledVersion)
	}
	if d.Action == ActionUninstall && before.Phase != PhaseDeleting && after.Phase != PhaseDeleting &&
		before.InstalledVersion != "" && before.InstalledVersion == before.LastGoodVersion && after.FailedVersion != before.InstalledVersion &&
		!(after.LastFailedAction == ActionUpgrade && e.rules.upgrade == RemediationUninstall) {
		return d, fail("good version %s uninstalled outside deletion", before.InstalledVersion)
	}
	if in.Observation.Action == ActionNone && in.Spec.Generation < before.ObservedGeneration {
		if d.Action != ActionNone || !reflect.DeepEqual(*before, *after) {
			return d, fail("stale generation %d acted on (observed %d)", in.Spec.Generation, before.ObservedGeneration)
		}
	}
	if in.Observation.Action == ActionNone && before.InFlight != nil && in.Now.Before(before.InFlight.Expires.Time) && d.Action != ActionNone {
		return d, fail("%s chosen while %s by %s is in flight", d.Action, before.InFlight.Action, before.InFlight.Owner)
	}
	if after.Phase == PhaseDeleted && before.Phase != PhaseDeleted &&
		(in.Observation.Action != ActionUninstall || in.Observation.Err != nil || after.InFlight != nil) {
		return d, fail("Deleted without a successful uninstall")
	}
	if before.LastGoodVersion != "" && after.LastGoodVersion == "" {
		return d, fail("last good version %s lost", before.LastGoodVersion)
	}
	if after.ObservedGeneration < before.ObservedGeneration {
		return d, fail("observed generation went back from %d to %d", before.ObservedGeneration, after.ObservedGeneration)
	}
	if err := after.Validate(); err != nil {
		return d, fail("stuck: %v", err)
	}
	waitsForSpec := after.Phase == PhaseFailed || after.Phase == PhaseDeleted || (after.Phase == PhaseDeleting && after.PendingAction == ActionNone) ||
		(after.SuspendedTime != nil && !in.Spec.Deleting)
	if d.Action == ActionNone && d.RequeueAfter == 0 && !waitsForSpec {
		return d, fail("stuck: %s waits for nothing with %s pending", after.Phase, after.PendingAction)
	}
	return d, nil
}

// liveness checks that s converges once the world behaves.
func (e *explorer) liveness(s exploreState) error {
	k := e.key(s)
	if e.live[k] {
		return nil
	}
	cur := s
	cur.spec.Suspended = false
	requested := false
	var visited []string
	for i := 0; i < e.opts.Converge; i++ {
		ck := e.key(cur)
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
				cur.spec.ResetToken = e.newToken("r", st.LastResetToken)
			} else {
				cur.spec.Generation = max(cur.spec.Generation, st.ObservedGeneration) + 1
			}
			requested = true
		}
		in := Input{Spec: cur.spec, Status: cur.status, Policy: e.opts.Policy, Table: e.opts.Table, Now: cur.now, Owner: "explorer"}
		d, err := Decide(in)
		if err != nil {
			return e.broken(s.path, "converging", "Decide failed: %v", err)
		}
		if d.Action != ActionNone {
			in.Status, in.Observation = d.Status, Observation{Action: d.Action, Claim: d.Status.InFlight, Health: HealthHealthy}
			if d, err = Decide(in); err != nil {
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
	steps := append(path.names(), name)
	return fmt.Errorf("addon: explore: %s\n  after: %s", fmt.Sprintf(format, args...), strings.Join(steps, " → "))
}

// key identifies a state for the exploration: what Decide can tell apart,
// with times relative to the present and counters capped where more makes
// no difference.
func (e *explorer) key(s exploreState) string {
	var b strings.Builder
	st := &s.status
	now := s.now
	rel := func(name string, t *time.Time, floor time.Duration) {
		b.WriteString(name)
		if t == nil {
			b.WriteString("-;")
			return
		}
		d := t.Sub(now)
		if d < floor {
			d = floor
		}
		b.WriteString(strconv.FormatInt(int64(d/time.Second), 10))
		b.WriteByte(';')
	}
	num := func(n int64) {
		b.WriteString(strconv.FormatInt(n, 10))
		b.WriteByte(',')
	}
	maxRetries := int64(e.rules.maxRetries) + 1
	if maxRetries <= 0 {
		maxRetries = 8
	}
	for _, f := range [...]string{string(st.Phase), string(st.PendingAction), string(st.Verifying), string(st.LastFailedAction),
		st.InstalledVersion, st.LastGoodVersion, st.FailedVersion, string(st.Health), s.spec.Version} {
		b.WriteString(f)
		b.WriteByte('|')
	}
	num(min(int64(st.InstallFailures), maxRetries))
	num(min(int64(st.UpgradeFailures), maxRetries))
	num(min(int64(st.UninstallFailures), maxRetries))
	num(min(int64(st.Failures), 8))
	num(s.spec.Generation - st.ObservedGeneration)
	for _, f := range [...]bool{s.spec.Deleting, s.spec.Suspended, s.spec.ResetToken != "" && s.spec.ResetToken != st.LastResetToken,
		s.spec.ForceToken != "" && s.spec.ForceToken != st.LastForceToken} {
		if f {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	rel("n", timeOf(st.NextAttemptTime), 0)
	if st.SuspendedTime != nil && st.Deadline != nil {
		b.WriteString("ds" + strconv.FormatInt(int64(max(st.Deadline.Sub(st.SuspendedTime.Time), 0)/time.Second), 10) + ";")
	} else {
		rel("d", timeOf(st.Deadline), 0)
	}
	rel("s", timeOf(st.SuspendedTime), -e.rules.upgradeTimeout-e.rules.installTimeout)
	rel("a", timeOf(st.LastAttemptTime), -2*e.rules.backoff.Max.Duration)
	rel("h", timeOf(st.HealthUnknownSince), -e.rules.healthUnknownTimeout)
	if c := st.InFlight; c != nil {
		b.WriteString("c" + string(c.Action) + "," + c.Owner + "," + c.From + "," + c.To + ";")
		rel("x", &c.Expires.Time, 0)
	}
	for _, typ := range [...]string{TypeDrifted} {
		if e.condIs(st, typ) {
			b.WriteString(typ)
		}
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
			return c.Status == "True"
		}
	}
	return false
}
