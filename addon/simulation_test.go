package addon_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestSimAddon drives two Machines on one add-on through seeded schedules of
// spec changes, deletions, suspensions, reset and force requests, driver
// failures and panics, hangs past the action timeout, unhealthy and
// unreadable health, drift, status conflicts, reconciles from stale cache
// reads of the spec, of the status or of both, crashes between a claim and
// its outcome, a second Machine reconciling while the first one's action
// runs, another writer stretching a claim to year 9999, and clock steps,
// backwards too. After every step it checks the invariants (see
// simulation.check and simDriver.mutate) against the world the driver
// runs; once faults stop, the add-on must end Running or Deleted within
// simConverge reconciles. A failing schedule prints the command that
// replays it.
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
	policy   addon.Policy
	limits   simLimits
	log      []simLog
	faults   bool
	steps    int
	// injected counts the faults injected, by kind.
	injected map[string]int

	// running is which Machine's reconcile is on; cancel ends its context
	// (a crash).
	running int
	cancel  context.CancelFunc
	// inFlight counts mutating driver calls running now.
	inFlight int
	// The world: cluster is the version the cluster runs ("" when
	// uninstalled); uninstalled is true when the last mutating call was a
	// successful uninstall; read is true when its last health read decided
	// from the current status was healthy since it changed, and
	// tested when its tests passed (or failed, ignored) since; failed is
	// the version of the
	// latest failed install or upgrade (failedBy), until an action
	// succeeds.
	cluster      string
	uninstalled  bool
	read, tested bool
	// seen is true once a health read decided from the current status said
	// healthy since the cluster last changed.
	seen     bool
	failed   string
	failedBy addon.Action
	// carried names the version each revision the driver returned applied,
	// as Helm numbers a release's revisions: one per install, upgrade or
	// rollback.
	carried   []string
	violation error
	prev      addon.Status
	tokens    int
	clockBack int
}

var simPolicies = []addon.Policy{
	{},
	{Drift: addon.DriftCorrect, Test: addon.TestPolicy{Enable: true}},
	{MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall},
	{InstallRemediation: addon.RemediationNone, UpgradeRemediation: addon.RemediationNone, Drift: addon.DriftWarn},
	{MaxRetries: ptr.To[int32](-1), RemediateLastFailure: ptr.To(false), Test: addon.TestPolicy{Enable: true, IgnoreFailures: true}},
	{Drift: addon.DriftCorrect, UpgradeRemediation: addon.RemediationUninstall, Backoff: converge.Backoff{JitterPercent: ptr.To[int32](0)}},
}

// simLimits are the bounds the invariants check, from the policy's fields
// and the defaults its documentation gives, not from the engine.
type simLimits struct {
	wait                                 time.Duration
	installUninstalls, upgradeUninstalls bool
	// tests is true when the policy tests what it applies; ignored when
	// their failures do not count.
	tests, ignored bool
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
	backoff := max(or(p.Backoff.Max, 5*time.Minute), or(p.Backoff.Initial, 10*time.Second))
	backoff += time.Duration(int64(backoff) * jitter / 100)
	return simLimits{
		wait: max(backoff, or(p.RunningInterval, 5*time.Minute), or(p.CheckInterval, 5*time.Second),
			or(p.ActionTimeout, 2*time.Minute)+addon.ClaimGrace),
		installUninstalls: p.InstallRemediation == addon.RemediationDefault || p.InstallRemediation == addon.RemediationUninstall,
		upgradeUninstalls: p.UpgradeRemediation == addon.RemediationUninstall,
		tests:             p.Test.Enable,
		ignored:           p.Test.IgnoreFailures,
	}
}

func newSimulation(seed uint64) *simulation {
	s := &simulation{
		rng:    rand.New(rand.NewPCG(seed, seed^0x5eed)),
		clock:  clocktesting.NewFakeClock(t0),
		store:  newSimStore(meshSpec),
		faults: true, injected: map[string]int{},
	}
	s.policy = simPolicies[s.rng.IntN(len(simPolicies))]
	s.limits = simLimitsOf(s.policy)
	s.store.written = func(prev, next addon.Status) {
		if next.LastGoodVersion != prev.LastGoodVersion && (next.LastGoodVersion != s.cluster || !s.seen) {
			s.violate("the last good version became %s, which the world does not run or was not read healthy (it runs %q)", next.LastGoodVersion, s.cluster)
		}
	}
	drv := &simDriver{s: s}
	for i := range s.machines {
		m, err := addon.NewMachine(addon.Config{Driver: drv, Store: s.store, Owner: s.id(i), Policy: s.policy, Clock: s.clock,
			Jitter: func() float64 { return 0.5 }})
		if err != nil {
			panic(err)
		}
		s.machines[i] = m
	}
	return s
}

// simStore is an addon.Store that keeps the spec and the status apart, as a
// host does that reads the spec from its informer's cache and keeps the
// status on a resource of its own: the status has its own resource version,
// so a status written over a stale spec does not conflict, and the engine
// alone must refuse to act on a generation older than one it has seen. It
// keeps every spec and status it held, for reconciles from a stale cache.
type simStore struct {
	mu        sync.Mutex
	specs     []addon.Spec
	statuses  []addon.Status // statuses[i] is at resource version i+1
	conflicts int
	// written, when set, checks each status the engine writes against the
	// one before it, as the world is at the time of the write.
	written func(prev, next addon.Status)
}

var _ addon.Store = (*simStore)(nil)

func newSimStore(spec addon.Spec) *simStore {
	return &simStore{specs: []addon.Spec{spec}, statuses: []addon.Status{{}}}
}

// object is the add-on with the spec and status at those indexes; its Host,
// which the Machine hands to the driver, names the status's version.
func (s *simStore) object(spec, status int) addon.Object {
	rv := strconv.Itoa(status + 1)
	return addon.Object{Spec: s.specs[spec], Status: *s.statuses[status].DeepCopy(), ResourceVersion: rv, Host: simHost(rv)}
}

// simHost is the version of the status a Machine decided from.
type simHost string

// currentStatus reports whether req was decided from the current status.
func (s *simStore) currentStatus(req addon.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return req.Host == simHost(strconv.Itoa(len(s.statuses)))
}

// current is the add-on as it is.
func (s *simStore) current() addon.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.object(len(s.specs)-1, len(s.statuses)-1)
}

// cached is the add-on as a cache read it: a spec and a status it held,
// drawn by pick from the last n of each (0: the current one).
func (s *simStore) cached(pickSpec, pickStatus func(n int) int) addon.Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.object(len(s.specs)-1-pickSpec(len(s.specs)), len(s.statuses)-1-pickStatus(len(s.statuses)))
}

func (s *simStore) updateSpec(f func(*addon.Spec)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spec := s.specs[len(s.specs)-1]
	f(&spec)
	s.specs = append(s.specs, spec)
}

// writeStatus writes st as another writer would, over any version.
func (s *simStore) writeStatus(st addon.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses = append(s.statuses, *st.DeepCopy())
}

func (s *simStore) Get(context.Context, string) (addon.Object, error) { return s.current(), nil }

func (s *simStore) UpdateStatus(_ context.Context, obj addon.Object, st addon.Status) (addon.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.conflicts > 0:
		s.conflicts--
		return addon.Object{}, converge.Conflict(errors.New("sim: injected conflict"))
	case obj.ResourceVersion != strconv.Itoa(len(s.statuses)):
		return addon.Object{}, converge.Conflict(fmt.Errorf("sim: status at version %s, written over %s", strconv.Itoa(len(s.statuses)), obj.ResourceVersion))
	}
	if s.written != nil {
		s.written(s.statuses[len(s.statuses)-1], st)
	}
	s.statuses = append(s.statuses, *st.DeepCopy())
	return s.object(len(s.specs)-1, len(s.statuses)-1), nil
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

// healthy reports whether the world runs a version that serves (read
// healthy and, when the policy tests it, tested since it changed) and that
// the engine knows serves: st's last good version, which check holds to
// the world. (A read the engine dropped, its write lost to another's,
// tells the world but not the engine.)
func (s *simulation) healthy(st addon.Status) bool {
	return s.cluster != "" && s.read && (!s.limits.tests || s.tested) && st.LastGoodVersion == s.cluster
}

// run plays the faulty steps, then lets the world behave.
func (s *simulation) run() error {
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

// step draws one thing that happens.
func (s *simulation) step() {
	switch r := s.rng.IntN(100); {
	case r < 36:
		s.reconcile(s.rng.IntN(2), s.store.current(), false)
	case r < 44:
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
	case r < 54:
		d := []time.Duration{time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, 11 * time.Minute}[s.rng.IntN(5)]
		s.logf("clock +%s", d)
		s.clock.Step(d)
	case r < 56 && s.clockBack < 2:
		s.clockBack++
		s.injected["clock steps back an hour"]++
		s.logf("clock -1h")
		s.clock.SetTime(s.clock.Now().Add(-time.Hour))
	case r < 80:
		s.changeSpec()
	case r < 88:
		n := 1 + s.rng.IntN(2)
		s.injected["status conflict"]++
		s.logf("the next %d status writes conflict", n)
		s.store.mu.Lock()
		s.store.conflicts = n
		s.store.mu.Unlock()
	case r < 91:
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
		what, f = "suspend or resume", func(sp *addon.Spec) { sp.Suspended = !sp.Suspended }
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
// escaping Reconcile is a violation: the operator would crash.
func (s *simulation) reconcile(i int, obj addon.Object, stale bool) {
	s.steps++
	ctx, cancel := context.WithCancel(quiet)
	defer cancel()
	outer, outerCancel := s.running, s.cancel
	s.running, s.cancel = i, cancel
	defer func() { s.running, s.cancel = outer, outerCancel }()
	before := s.store.current().Status.InFlight
	var res addon.Result
	var err error
	func() {
		defer func() {
			if p := recover(); p != nil {
				s.violate("m%d's Reconcile panicked: %v", i+1, p)
			}
		}()
		res, err = s.machines[i].Reconcile(ctx, obj)
	}()
	if after := s.store.current().Status.InFlight; err == nil && after != nil && after.Owner == s.id(i) && (before == nil || !sameClaim(after, before)) {
		s.violate("m%d returned without error but left its claim on %s: the outcome was lost", i+1, after.Action)
	}
	for _, e := range res.Events {
		if strings.Contains(e.Message, simSecret) {
			s.violate("a secret reached an event: %s", e.Message)
		}
	}
	if cur := s.store.current(); err == nil && !stale && cur.Spec == obj.Spec && s.healthy(cur.Status) && s.cluster == cur.Spec.Version &&
		!cur.Spec.Deleting && !cur.Spec.Suspended && cur.Status.PendingAction == "" && cur.Status.InFlight == nil {
		s.violate("the healthy %s, the version the spec asks for, is left unwatched in %s", s.cluster, cur.Status.Phase)
	}
	if res.RequeueAfter > s.limits.wait {
		s.violate("m%d asks to wait %s, longer than any backoff, poll or claim of the policy (%s)", i+1, res.RequeueAfter, s.limits.wait)
	}
	s.logf("m%d reconciled: after %s, events %v, err %v", i+1, res.RequeueAfter, res.Events, err)
	if err != nil && !errors.Is(err, converge.ErrConflict) && !errors.Is(err, context.Canceled) {
		s.violate("reconcile failed: %v", err)
	}
}

func sameClaim(a, b *addon.Claim) bool {
	return a.Action == b.Action && a.Owner == b.Owner && a.Started.Equal(&b.Started)
}

// check verifies the invariants after a step.
func (s *simulation) check() error {
	if s.violation != nil {
		return s.violation
	}
	cur := s.store.current()
	st, prev := cur.Status, s.prev
	s.prev = st
	switch {
	case st.Validate() != nil:
		return fmt.Errorf("a waiting phase without a deadline, or another invalid status: %v", st.Validate())
	case s.inFlight != 0:
		return fmt.Errorf("%d actions still in flight between steps", s.inFlight)
	case prev.LastGoodVersion != "" && st.LastGoodVersion == "":
		return fmt.Errorf("the last good version %s was lost", prev.LastGoodVersion)
	case st.ObservedGeneration < prev.ObservedGeneration || st.SeenGeneration < prev.SeenGeneration:
		return fmt.Errorf("a generation went back: observed %d to %d, seen %d to %d", prev.ObservedGeneration, st.ObservedGeneration, prev.SeenGeneration, st.SeenGeneration)
	case st.Phase == addon.PhaseDeleted && prev.Phase != addon.PhaseDeleted && (!s.uninstalled || st.InFlight != nil || s.cluster != ""):
		return fmt.Errorf("Deleted without a successful uninstall (cluster runs %q, in flight %v)", s.cluster, st.InFlight)
	case strings.Contains(st.Message, simSecret):
		return fmt.Errorf("a secret reached the status: %s", st.Message)
	}
	for _, c := range st.Conditions {
		if strings.Contains(c.Message, simSecret) {
			return fmt.Errorf("a secret reached condition %s: %s", c.Type, c.Message)
		}
	}
	return nil
}

// converge lets the world behave: every action succeeds and reads healthy;
// a suspension is lifted; a Failed add-on or a stopped deletion gets one
// reset, as an operator would send.
func (s *simulation) converge() error {
	if s.store.current().Spec.Suspended {
		s.store.updateSpec(func(sp *addon.Spec) { sp.Suspended = false })
	}
	s.store.mu.Lock()
	s.store.conflicts = 0
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
		s.clock.Step(res.RequeueAfter)
	}
	st := s.store.current().Status
	return fmt.Errorf("neither Running nor Deleted within %d reconciles once faults stopped: %s (%s)", simConverge, st.Phase, st.Message)
}

// simDriver acts on the simulation's world with outcomes the schedule draws.
type simDriver struct{ s *simulation }

// mutate checks the invariants of an action about to change the world,
// runs it with the outcome the schedule draws, and changes the world.
func (d *simDriver) mutate(ctx context.Context, a addon.Action, req addon.Request) (revision string, err error) {
	s := d.s
	cur := s.store.current()
	st, spec := cur.Status, cur.Spec
	s.inFlight++
	defer func() { s.inFlight-- }()
	if s.inFlight > 1 {
		s.violate("%s started while another action is in flight", a)
	}
	if a == addon.ActionInstall && st.InstalledVersion != "" {
		s.violate("a fresh install while %s is installed", st.InstalledVersion)
	}
	if s.healthy(st) {
		switch {
		case a == addon.ActionUninstall && !spec.Deleting && !(s.failed != "" && s.failed != s.cluster && s.uninstallsFor(s.failedBy)):
			s.violate("the healthy %s is uninstalled, neither deleted nor remediating a failure of another version (last failed: %q)", s.cluster, s.failed)
		case (a == addon.ActionUpgrade || a == addon.ActionRollback) && req.To != s.cluster && req.To != spec.Version:
			s.violate("the healthy %s is replaced by %s, which the spec (%s) does not ask for", s.cluster, req.To, spec.Version)
		}
	}
	if a == addon.ActionRollback && !s.carries(req.Revision, req.To) {
		s.violate("rollback to %s at revision %q, which carried %v", req.To, req.Revision, s.carried)
	}
	failed := func() {
		s.uninstalled = false
		switch a {
		case addon.ActionInstall, addon.ActionUpgrade:
			s.failed, s.failedBy = req.To, a
		case addon.ActionTest:
			s.tested = s.limits.ignored
		}
	}
	defer func() {
		if p := recover(); p != nil {
			failed()
			panic(p)
		}
	}()
	if err := d.fault(ctx, a); err != nil {
		failed()
		return "", err
	}
	switch a {
	case addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback:
		s.cluster, s.read, s.tested, s.seen = req.To, false, false, false
		s.carried = append(s.carried, req.To)
		revision = strconv.Itoa(len(s.carried))
	case addon.ActionUninstall:
		s.cluster, s.read, s.tested, s.seen = "", false, false, false
	case addon.ActionTest:
		s.tested = true
	}
	if a != addon.ActionTest {
		s.failed, s.failedBy = "", ""
	}
	s.uninstalled = a == addon.ActionUninstall
	return revision, nil
}

// carries reports whether the driver's revision carried version.
func (s *simulation) carries(revision, version string) bool {
	n, err := strconv.Atoi(revision)
	return err == nil && n >= 1 && n <= len(s.carried) && s.carried[n-1] == version
}

func (s *simulation) uninstallsFor(a addon.Action) bool {
	switch a {
	case addon.ActionInstall:
		return s.limits.installUninstalls
	case addon.ActionUpgrade:
		return s.limits.upgradeUninstalls
	}
	return false
}

// fault draws what goes wrong with a mutating call, if faults are on.
func (d *simDriver) fault(ctx context.Context, a addon.Action) error {
	s := d.s
	if !s.faults {
		return nil
	}
	switch r := s.rng.IntN(100); {
	case r < 10:
		s.injected[simTwoAtOnce]++
		other := 1 - s.running
		s.logf("  m%d reconciles while m%d's %s runs", other+1, s.running+1, a)
		s.reconcile(other, s.store.current(), false)
	case r < 15:
		s.injected["spec change during an action"]++
		s.logf("  spec changes while %s runs", a)
		s.changeSpec()
	case r < 20:
		s.injected["crash between claim and outcome"]++
		s.logf("  crash while %s runs", a)
		s.cancel()
		return ctx.Err()
	case r < 25:
		s.injected["hang past the action timeout"]++
		s.logf("  %s hangs past the action timeout", a)
		s.clock.Step(defaultActionTimeout)
		return context.DeadlineExceeded
	case r < 28:
		s.injected["driver panic"]++
		s.logf("  %s panics", a)
		panic(fmt.Sprintf("sim: %s dereferenced a nil map, password=%s", a, simSecret))
	case r < 45:
		s.injected["action failed"]++
		if s.rng.IntN(20) == 0 {
			s.injected["action failed with a huge error"]++
			return fmt.Errorf("sim: %s failed: password=%s %s", a, simSecret, simHugeError)
		}
		return fmt.Errorf("sim: %s failed: registry login password=%s rejected", a, simSecret)
	}
	return nil
}

func (d *simDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	return d.mutate(ctx, addon.ActionInstall, req)
}

func (d *simDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	if req.Rollback {
		return d.mutate(ctx, addon.ActionRollback, req)
	}
	return d.mutate(ctx, addon.ActionUpgrade, req)
}

func (d *simDriver) Uninstall(ctx context.Context, req addon.Request) error {
	_, err := d.mutate(ctx, addon.ActionUninstall, req)
	return err
}

func (d *simDriver) Test(ctx context.Context, req addon.Request) error {
	_, err := d.mutate(ctx, addon.ActionTest, req)
	return err
}

// Health reads the world: nothing installed is unhealthy; with faults on a
// read may panic, be unhealthy or unreadable, or last while another
// Machine's action runs to its end. A read decided from the current status
// is what the world's health is; it is taken before whatever happens while
// it lasts.
func (d *simDriver) Health(_ context.Context, req addon.Request) (addon.Health, error) {
	s := d.s
	h, err := addon.HealthHealthy, error(nil)
	r := s.rng.IntN(100)
	switch {
	case s.cluster == "":
		h = addon.HealthUnhealthy
	case !s.faults:
	case r < 3:
		s.injected["health panic"]++
		panic("sim: health probe crashed")
	case r < 18:
		h = addon.HealthUnhealthy
	case r < 28:
		h, err = addon.HealthUnknown, fmt.Errorf("sim: metrics token=%s expired", simSecret)
	}
	if s.store.currentStatus(req) {
		s.read = err == nil && h == addon.HealthHealthy
		s.seen = s.seen || s.read
	}
	if s.faults && r >= 90 {
		s.injected["an action runs to its end during a health read"]++
		other := 1 - s.running
		s.logf("  the spec changes and m%d reconciles while m%d reads the health", other+1, s.running+1)
		s.changeSpec()
		s.reconcile(other, s.store.current(), false)
	}
	return h, err
}

func (d *simDriver) Drift(context.Context, addon.Request) (bool, string, error) {
	s := d.s
	if !s.faults {
		return false, "", nil
	}
	return s.rng.IntN(10) == 0, "Deployment replicas changed by hand", nil
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
