package addon_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

var (
	simSeed      = flag.Uint64("seed", 0, "TestSimAddon: replay only the schedule with this seed")
	simSchedules = flag.Int("schedules", 5000, "TestSimAddon: how many schedules to run")
)

// Bounds of one schedule.
const (
	simSteps    = 30 // faulty steps
	simConverge = 60 // reconciles to Running or Deleted once faults stop
)

// simTwoAtOnce names the fault of a second Machine reconciling while the
// first one's action runs.
const simTwoAtOnce = "two Machines at once"

// simHugeError is the tail of an error far beyond every message bound.
var simHugeError = strings.Repeat("manifest rejected; ", 3000)

// simSecret is a credential the simulated driver puts in its errors; it must
// never reach the status.
const simSecret = "hunter2"

// simSkew is how far the second Machine's clock may lie from the first's.
const simSkew = 5 * time.Minute

// TestSimAddon drives two Machines on one add-on through seeded schedules of
// spec changes, deletions, pauses, maintenance windows (drawn per
// schedule), reset and force requests, driver
// failures and panics, hangs past the action timeout, unhealthy and
// unreadable health, drift, status conflicts, reconciles from stale cache
// reads of the spec, of the status or of both, crashes at every point
// between two host calls (before or after a status write lands, before or
// after the action applied), a second Machine reconciling while the first
// one's action runs, a replica that pauses past its claim and lands its
// action late, another writer stretching a claim to year 9999, clock steps,
// an hour backwards too, and a second Machine whose clock lies up to
// simSkew from the first's. Its store persists the status through
// encoding/json; its driver fences (in most schedules) and inspects. After
// every step it checks the invariants (see simulation.check, written and
// simDriver.mutate) against the world the driver runs and the ledger of
// what each driver call did; once faults stop, the add-on must end Running
// or Deleted within simConverge reconciles. A failing schedule prints the
// command that replays it.
func TestSimAddon(t *testing.T) {
	seeds := make([]uint64, 0, *simSchedules)
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for i := range *simSchedules {
			seeds = append(seeds, uint64(i)+1)
		}
	}
	start := time.Now()
	steps, twoAtOnce := 0, 0
	faults := map[string]int{}
	for _, seed := range seeds {
		s := newSimulation(seed)
		if err := s.run(); err != nil {
			t.Fatalf("schedule %d: %v\nreplay: go test ./addon -run '^TestSimAddon$' -args -seed %d\nsteps:%s", seed, err, seed, s.trace())
		}
		steps += s.steps
		if s.injected[simTwoAtOnce] > 0 {
			twoAtOnce++
		}
		for k, n := range s.injected {
			faults[k] += n
		}
	}
	t.Logf("%d schedules (%d with two Machines at once), %d reconciles, in %s; faults: %v", len(seeds), twoAtOnce, steps, time.Since(start).Round(time.Millisecond), faults)
}

// simulation is one schedule: a world (what the cluster runs), a store, two
// Machines and a driver whose outcomes the schedule draws.
type simulation struct {
	rng      *rand.Rand
	clock    *clocktesting.FakeClock
	store    *simStore
	machines [2]*addon.Machine
	// skew is how far each Machine's clock lies from the world's.
	skew   [2]time.Duration
	policy addon.Policy
	limits simLimits
	log    []simLog
	faults bool
	// fencing is true when the driver refuses a write under a fencing
	// token older than one the world took.
	fencing bool
	steps   int
	// injected counts the faults injected, by kind.
	injected map[string]int
	// elapsed is the time that passed: the clock's steps forward, not
	// those back.
	elapsed time.Duration

	// running is which Machine's reconcile is on; cancel ends its context
	// (a crash).
	running int
	cancel  context.CancelFunc
	// runPaused is whether the policy of the Machine whose reconcile is on
	// was paused when it began.
	runPaused bool
	world     simWorld
	// ledger is what every mutating driver call did, by fencing token;
	// abandoned holds the tokens of the claims whose Machine crashed.
	ledger    map[int64]simCall
	abandoned map[int64]bool
	// attempts counts, by action and version, the consecutive failed calls
	// since a success, a new spec or a request; lostInARow the attempts
	// the status recorded lost since one it recorded otherwise.
	attempts   map[string]simAttempts
	lostInARow int32
	violation  error
	prev       addon.Status
	tokens     int
	clockBack  int
}

// skewedClock is a Machine's clock: the world's, off by skew.
type skewedClock struct {
	world *clocktesting.FakeClock
	skew  time.Duration
}

var _ clock.PassiveClock = skewedClock{}

func (c skewedClock) Now() time.Time                  { return c.world.Now().Add(c.skew) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

var simPolicies = []addon.Policy{
	{},
	{Drift: addon.DriftCorrect, Test: addon.TestPolicy{Enable: true}},
	{MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall},
	{InstallRemediation: addon.RemediationNone, UpgradeRemediation: addon.RemediationNone, Drift: addon.DriftWarn},
	{MaxRetries: ptr.To[int32](-1), RemediateLastFailure: ptr.To(false), Test: addon.TestPolicy{Enable: true, IgnoreFailures: true}},
	{Drift: addon.DriftCorrect, UpgradeRemediation: addon.RemediationUninstall, Backoff: converge.Backoff{JitterPercent: ptr.To[int32](0)}},
	{MaxRetries: ptr.To[int32](1), MaxLostRetries: ptr.To[int32](0), Drift: addon.DriftCorrect},
	{MaxLostRetries: ptr.To[int32](1), UpgradeRemediation: addon.RemediationNone, Test: addon.TestPolicy{Enable: true}},
}

// simLimits are the bounds the invariants check, from the policy's fields
// and the defaults its documentation gives, not from the engine.
type simLimits struct {
	wait                                 time.Duration
	installUninstalls, upgradeUninstalls bool
	// tests is true when the policy tests what it applies; ignored when
	// their failures do not count.
	tests, ignored bool
	// maxRetries and maxLost are the policy's MaxRetries and
	// MaxLostRetries; initial, factor and most its backoff without jitter.
	maxRetries, maxLost int32
	initial, most       time.Duration
	factor              int64
	claim               time.Duration
}

func simLimitsOf(p addon.Policy) simLimits {
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
	l := simLimits{
		installUninstalls: p.InstallRemediation == addon.RemediationDefault || p.InstallRemediation == addon.RemediationUninstall,
		upgradeUninstalls: p.UpgradeRemediation == addon.RemediationUninstall,
		tests:             p.Test.Enable,
		ignored:           p.Test.IgnoreFailures,
		maxRetries:        5, maxLost: 3, factor: 200,
		initial: or(p.Backoff.Initial, 10*time.Second),
		claim:   or(p.ActionTimeout, 2*time.Minute) + addon.ClaimGrace,
	}
	l.most = max(or(p.Backoff.Max, 5*time.Minute), l.initial)
	backoff := l.most + time.Duration(int64(l.most)*jitter/100)
	l.wait = max(backoff, or(p.RunningInterval, 5*time.Minute), or(p.CheckInterval, 5*time.Second), l.claim)
	if p.MaxRetries != nil {
		l.maxRetries = *p.MaxRetries
	}
	if p.MaxLostRetries != nil {
		l.maxLost = *p.MaxLostRetries
	}
	if p.Backoff.FactorPercent > 0 {
		l.factor = int64(p.Backoff.FactorPercent)
	}
	return l
}

// backoff is the shortest wait after failures failed attempts in a row:
// Backoff.Initial, times the factor for each failure after the first, at
// most Backoff.Max.
func (l simLimits) backoff(failures int) time.Duration {
	d := l.initial
	for range failures - 1 {
		if d >= l.most {
			break
		}
		d = time.Duration(int64(d) * l.factor / 100)
	}
	return min(d, l.most)
}

func newSimulation(seed uint64) *simulation {
	s := &simulation{
		rng:    rand.New(rand.NewPCG(seed, seed^0x5eed)),
		clock:  clocktesting.NewFakeClock(t0),
		store:  newSimStore(meshSpec),
		faults: true, injected: map[string]int{},
		ledger: map[int64]simCall{}, abandoned: map[int64]bool{}, attempts: map[string]simAttempts{},
	}
	s.world.passed = map[string]bool{}
	s.policy = simPolicies[s.rng.IntN(len(simPolicies))]
	s.policy.Windows = simWindows[s.rng.IntN(len(simWindows))]
	s.limits = simLimitsOf(s.policy)
	s.fencing = s.rng.IntN(3) > 0
	s.skew[1] = []time.Duration{0, simSkew, -simSkew}[s.rng.IntN(3)]
	s.store.written = s.written
	s.store.crashed = s.crashed
	s.newMachines()
	return s
}

// newMachines builds the two Machines on the schedule's policy.
func (s *simulation) newMachines() {
	drv := &simDriver{s: s}
	for i := range s.machines {
		m, err := addon.NewMachine(addon.Config{Driver: drv, Store: s.store, Owner: s.id(i), Policy: s.policy,
			Clock: skewedClock{world: s.clock, skew: s.skew[i]}, Jitter: func() float64 { return 0.5 }})
		if err != nil {
			panic(err)
		}
		s.machines[i] = m
	}
}

// advance moves the world's clock forward by d: time passes.
func (s *simulation) advance(d time.Duration) {
	s.clock.Step(d)
	s.elapsed += d
}

// simLog is a step of the log, formatted only when a schedule fails.
type simLog struct {
	at     time.Duration
	format string
	args   []any
}

func (s *simulation) logf(format string, args ...any) {
	s.log = append(s.log, simLog{at: s.clock.Since(t0), format: format, args: args})
}

func (s *simulation) trace() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  policy %+v, fencing %v, m2's clock off by %s", s.policy, s.fencing, s.skew[1])
	for _, l := range s.log {
		fmt.Fprintf(&b, "\n  %6s ", l.at.Round(time.Second))
		fmt.Fprintf(&b, l.format, l.args...)
	}
	return b.String()
}

func (s *simulation) violate(format string, args ...any) {
	if s.violation == nil {
		s.violation = fmt.Errorf(format, args...)
	}
}

func (s *simulation) id(i int) string { return [...]string{"m1", "m2"}[i] }

// run plays the faulty steps, then lets the world behave.
func (s *simulation) run() error {
	if s.rng.IntN(4) == 0 {
		if err := s.rolledBack(); err != nil {
			return err
		}
	}
	s.prev = s.store.current().Status
	for range simSteps {
		s.step()
		if err := s.check(); err != nil {
			return err
		}
	}
	s.faults = false
	s.logf("faults stop")
	return s.converge()
}

// rolledBack is the prologue of a quarter of the schedules, played without
// faults: v1 runs, the upgrade to v2 fails and is remediated as the policy
// says (rolled back, by default), so that the faults start where a failed
// version is still asked for.
func (s *simulation) rolledBack() error {
	s.faults = false
	defer func() { s.faults = true }()
	s.logf("prologue: v1 runs, the upgrade to v2 fails")
	if err := s.settle(); err != nil {
		return err
	}
	s.store.updateSpec(func(sp *addon.Spec) { sp.Generation++; sp.Version = "v2" })
	s.world.failNext = true
	s.reconcile(0, s.store.current(), false)
	if err := s.check(); err != nil {
		return err
	}
	return s.settle()
}

// settle reconciles m1 until nothing is due at once, or the add-on is
// Running, healthy, with nothing in flight.
func (s *simulation) settle() error {
	for range simConverge {
		st := s.store.current().Status
		if st.Phase == addon.PhaseRunning && st.Health == addon.HealthHealthy && st.InFlight == nil || st.Phase == addon.PhaseFailed {
			return nil
		}
		s.reconcile(0, s.store.current(), false)
		if err := s.check(); err != nil {
			return err
		}
		st = s.store.current().Status
		if st.NextAttemptTime != nil {
			s.advance(st.NextAttemptTime.Sub(s.clock.Now()))
		}
	}
	return nil
}

// step draws one thing that happens.
func (s *simulation) step() {
	switch r := s.rng.IntN(100); {
	case r < 36:
		s.reconcile(s.rng.IntN(2), s.store.current(), false)
	case r < 44:
		s.staleReconcile()
	case r < 54:
		d := []time.Duration{time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, 11 * time.Minute}[s.rng.IntN(5)]
		s.logf("clock +%s", d)
		s.advance(d)
	case r < 56 && s.clockBack < 2:
		s.clockBack++
		s.injected["clock steps back an hour"]++
		s.logf("clock -1h")
		s.clock.SetTime(s.clock.Now().Add(-time.Hour))
	case r < 78:
		s.changeSpec()
	case r < 86:
		n := 1 + s.rng.IntN(2)
		s.injected["status conflict"]++
		s.logf("the next %d status writes conflict", n)
		s.store.mu.Lock()
		s.store.conflicts = n
		s.store.mu.Unlock()
	case r < 91:
		after := s.rng.IntN(2) == 0
		s.injected[fmt.Sprintf("crash at a status write (landed: %v)", after)]++
		s.logf("the next status write crashes its Machine (landed: %v)", after)
		s.store.mu.Lock()
		s.store.crash, s.store.crashAfter = true, after
		s.store.mu.Unlock()
	case r < 94:
		s.stretchClaim()
	}
}

// staleReconcile reconciles from a stale cache of the spec, the status or
// both.
func (s *simulation) staleReconcile() {
	older := func(n int) int { return s.rng.IntN(min(n, 4)) }
	now := func(int) int { return 0 }
	spec, status, what := older, older, "spec and status"
	switch s.rng.IntN(3) {
	case 0:
		status, what = now, "spec"
	case 1:
		spec, what = now, "status"
	}
	obj := s.store.cached(spec, status)
	s.injected["stale cache read of the "+what]++
	s.logf("reconcile from a stale cache of the %s (generation %d, status version %s)", what, obj.Spec.Generation, obj.ResourceVersion)
	s.reconcile(s.rng.IntN(2), obj, true)
}

// stretchClaim writes the claim in flight, if any, as another writer
// stretching it to year 9999.
func (s *simulation) stretchClaim() {
	st := s.store.current().Status
	if c := st.InFlight; c != nil {
		s.injected["claim stretched to year 9999"]++
		s.logf("another writer stretches the claim of %s by %s to year 9999", c.Action, c.Owner)
		stretched := *c
		stretched.Expires = metav1.NewTime(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
		st.InFlight = &stretched
		s.store.writeStatus(st)
	}
}

func (s *simulation) changeSpec() {
	spec := s.store.current().Spec
	var what string
	var f func(*addon.Spec)
	switch r := s.rng.IntN(7); {
	case r == 0 && !spec.Deleting:
		v := []string{"v1", "v2", "v3"}[s.rng.IntN(3)]
		what, f = "version "+v, func(sp *addon.Spec) { sp.Generation++; sp.Version = v }
	case r == 1 && !spec.Deleting:
		what, f = "new spec, same version", func(sp *addon.Spec) { sp.Generation++ }
	case r == 2:
		what, f = "deletion", func(sp *addon.Spec) { sp.Deleting = true }
	case r == 3:
		s.logf("policy: paused %v", !s.policy.Paused)
		s.setPaused(!s.policy.Paused)
		return
	case r == 4:
		s.tokens++
		tok := fmt.Sprintf("r%d", s.tokens)
		what, f = "reset "+tok, func(sp *addon.Spec) { sp.ResetToken = tok }
	case r == 5:
		s.tokens++
		tok := fmt.Sprintf("f%d", s.tokens)
		what, f = "force "+tok, func(sp *addon.Spec) { sp.ForceToken = tok }
	default:
		return
	}
	s.logf("spec: %s", what)
	s.store.updateSpec(f)
}

// reconcile runs Machine i on obj (stale: from a stale cache). A panic
// escaping Reconcile is a violation (the operator would crash), but for the
// crashes the schedule injects.
func (s *simulation) reconcile(i int, obj addon.Object, stale bool) {
	s.steps++
	ctx, cancel := context.WithCancel(quiet)
	defer cancel()
	outer, outerCancel, outerPaused := s.running, s.cancel, s.runPaused
	s.running, s.cancel, s.runPaused = i, cancel, s.policy.Paused
	defer func() { s.running, s.cancel, s.runPaused = outer, outerCancel, outerPaused }()
	before := s.store.current().Status.InFlight
	var res addon.Result
	var err error
	crashed := false
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(simCrash); ok {
					crashed = true
					return
				}
				s.violate("m%d's Reconcile panicked: %v", i+1, p)
			}
		}()
		res, err = s.machines[i].Reconcile(ctx, obj)
	}()
	if crashed {
		s.logf("m%d crashed at a status write", i+1)
		return
	}
	s.world.late[i] = false
	s.reconciled(i, obj, stale, before, res, err)
}

// reconciled checks what Machine i's reconcile of obj returned.
func (s *simulation) reconciled(i int, obj addon.Object, stale bool, before *addon.Claim, res addon.Result, err error) {
	if after := s.store.current().Status.InFlight; err == nil && after != nil && after.Owner == s.id(i) && (before == nil || !sameClaim(after, before)) &&
		!s.abandoned[after.Fence] {
		s.violate("m%d returned without error but left its claim on %s: the outcome was lost", i+1, after.Action)
	}
	for _, e := range res.Events {
		if strings.Contains(e.Message, simSecret) {
			s.violate("a secret reached an event: %s", e.Message)
		}
	}
	w := &s.world
	if cur := s.store.current(); err == nil && !stale && cur.Spec == obj.Spec && s.healthy(cur.Status) && w.cluster == cur.Spec.Version &&
		!cur.Spec.Deleting && cur.Status.PendingAction == "" && cur.Status.InFlight == nil {
		s.violate("the healthy %s, the version the spec asks for, is left unwatched in %s", w.cluster, cur.Status.Phase)
	}
	if cur := s.store.current(); err == nil && !stale && cur.Spec == obj.Spec {
		s.holdsHonest(cur.Status, cur.Spec.Deleting, res.RequeueAfter)
	}
	if closed, opens := s.closedAt(s.machineNow()); res.RequeueAfter > s.limits.wait && !(closed && res.RequeueAfter <= opens.Sub(s.machineNow())) {
		s.violate("m%d asks to wait %s, longer than any backoff, poll or claim of the policy (%s)", i+1, res.RequeueAfter, s.limits.wait)
	}
	s.logf("m%d reconciled: after %s, events %v, err %v", i+1, res.RequeueAfter, res.Events, err)
	if err != nil && !errors.Is(err, converge.ErrConflict) && !errors.Is(err, context.Canceled) {
		s.violate("reconcile failed: %v", err)
	}
}

func sameClaim(a, b *addon.Claim) bool {
	return a.Action == b.Action && a.Owner == b.Owner && a.Fence == b.Fence && a.Started.Equal(&b.Started)
}

// check verifies the invariants after a step.
func (s *simulation) check() error {
	if s.violation != nil {
		return s.violation
	}
	cur := s.store.current()
	st, prev := cur.Status, s.prev
	s.prev = st
	w := &s.world
	switch {
	case st.Validate() != nil:
		return fmt.Errorf("a waiting phase without a deadline, or another invalid status: %v", st.Validate())
	case len(w.calls) != 0:
		return fmt.Errorf("%d actions still in flight between steps", len(w.calls))
	case prev.LastGoodVersion != "" && st.LastGoodVersion == "":
		return fmt.Errorf("the last good version %s was lost", prev.LastGoodVersion)
	case st.ObservedGeneration < prev.ObservedGeneration || st.SeenGeneration < prev.SeenGeneration:
		return fmt.Errorf("a generation went back: observed %d to %d, seen %d to %d", prev.ObservedGeneration, st.ObservedGeneration, prev.SeenGeneration, st.SeenGeneration)
	case strings.Contains(st.Message, simSecret):
		return fmt.Errorf("a secret reached the status: %s", st.Message)
	}
	for _, c := range st.Conditions {
		if strings.Contains(c.Message, simSecret) {
			return fmt.Errorf("a secret reached condition %s: %s", c.Type, c.Message)
		}
	}
	return s.honest(st)
}

// honest checks that what the status says the cluster runs (Mismatch when
// one stands, else InstalledVersion) is what it runs, whenever no claim is
// in flight: within the
// reconcile that took over a claim or received a late outcome. Only an
// inspection that failed, or a replica that landed a late action and
// crashed before it recorded it, leaves the status blind meanwhile; a
// Deleted add-on says nothing more.
func (s *simulation) honest(st addon.Status) error {
	w := &s.world
	says := st.InstalledVersion
	if st.Mismatch != nil {
		says = st.Mismatch.Version
	}
	agrees := says == w.cluster
	switch {
	case agrees:
		w.blind = false
	case st.InFlight == nil && !w.blind && st.Phase != addon.PhaseDeleted:
		return fmt.Errorf("the status says the cluster runs %q (installed %q) while it runs %q", says, st.InstalledVersion, w.cluster)
	}
	return nil
}

// converge lets the world behave: every action succeeds and reads healthy;
// a pause is lifted and closed windows are waited out; a Failed add-on or a stopped deletion gets one
// reset, as an operator would send.
func (s *simulation) converge() error {
	if s.policy.Paused {
		s.logf("policy: paused false")
		s.setPaused(false)
	}
	s.store.mu.Lock()
	s.store.conflicts, s.store.crash = 0, false
	s.store.mu.Unlock()
	requested := false
	for range simConverge {
		st := s.store.current().Status
		if st.Phase == addon.PhaseDeleted || (st.Phase == addon.PhaseRunning && st.Health == addon.HealthHealthy && st.InFlight == nil) {
			return s.check()
		}
		if !requested && (st.Phase == addon.PhaseFailed || (st.Phase == addon.PhaseDeleting && st.PendingAction == "" && st.InFlight == nil)) {
			s.logf("spec: reset after the faults")
			s.store.updateSpec(func(sp *addon.Spec) { sp.ResetToken = "converge" })
			requested = true
		}
		res, err := s.machines[0].Reconcile(quiet, s.store.current())
		s.steps++
		st = s.store.current().Status
		s.logf("m1 reconciled: %s pending %q, after %s, err %v", st.Phase, st.PendingAction, res.RequeueAfter, err)
		if err != nil {
			return fmt.Errorf("reconcile failed once faults stopped: %w", err)
		}
		if err := s.check(); err != nil {
			return err
		}
		if res.RequeueAfter == 0 && st.Phase != addon.PhaseFailed && st.Phase != addon.PhaseDeleted && !(st.Phase == addon.PhaseDeleting && st.PendingAction == "") {
			return fmt.Errorf("idle in %s with nothing to wait for", st.Phase)
		}
		s.advance(res.RequeueAfter)
	}
	st := s.store.current().Status
	return fmt.Errorf("neither Running nor Deleted within %d reconciles once faults stopped: %s (%s)", simConverge, st.Phase, st.Message)
}

// TestSimAddonReplaysExactly: a seed names one schedule, step for step.
func TestSimAddonReplaysExactly(t *testing.T) {
	for _, seed := range []uint64{7, 42, 4242} {
		a, b := newSimulation(seed), newSimulation(seed)
		errA, errB := a.run(), b.run()
		if errA != nil || errB != nil {
			t.Fatalf("schedule %d: %v, %v", seed, errA, errB)
		}
		if a.trace() != b.trace() {
			t.Fatalf("schedule %d played twice differs:%s\nthen:%s", seed, a.trace(), b.trace())
		}
	}
}
