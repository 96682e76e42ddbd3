package addon_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
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
// failures, hangs past the action timeout, unhealthy and unreadable health,
// drift, status conflicts, stale snapshots, crashes between a claim and its
// outcome, a second Machine reconciling while the first one's action runs,
// and clock steps. After every step it checks the invariants (see
// simulation.check); once faults stop, the add-on must end Running or
// Deleted within simConverge reconciles. Replay a schedule with
// go test ./addon/ -run TestSimAddon -args -seed N.
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
			t.Fatalf("schedule %d: %v\nreplay: go test ./addon/ -run TestSimAddon -args -seed %d\nsteps:%s", seed, err, seed, s.trace())
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
	store    *fake.AddonStore
	machines [2]*addon.Machine
	policy   addon.Policy
	log      []simLog
	faults   bool
	steps    int
	// injected counts the faults injected, by kind.
	injected map[string]int

	// running is which Machine's reconcile is on; cancel ends its context
	// (a crash).
	running int
	cancel  context.CancelFunc
	// inFlight counts mutating driver calls running now; cluster is the
	// version the world runs ("" when uninstalled); uninstalled is true
	// when the last mutating call was a successful uninstall.
	inFlight    int
	cluster     string
	uninstalled bool
	// carried names the version each revision the driver returned applied,
	// as Helm numbers a release's revisions: one per install, upgrade or
	// rollback.
	carried   []string
	stale     addon.Object
	violation error
	prev      addon.Status
	tokens    int
}

var simPolicies = []addon.Policy{
	{},
	{Drift: addon.DriftCorrect, Test: addon.TestPolicy{Enable: true}},
	{MaxRetries: ptr.To[int32](0), UpgradeRemediation: addon.RemediationUninstall},
	{InstallRemediation: addon.RemediationNone, UpgradeRemediation: addon.RemediationNone, Drift: addon.DriftWarn},
	{MaxRetries: ptr.To[int32](-1), RemediateLastFailure: ptr.To(false), Test: addon.TestPolicy{Enable: true, IgnoreFailures: true}},
}

func newSimulation(seed uint64) *simulation {
	s := &simulation{
		rng:    rand.New(rand.NewPCG(seed, seed^0x5eed)),
		clock:  clocktesting.NewFakeClock(t0),
		store:  &fake.AddonStore{},
		faults: true, injected: map[string]int{},
	}
	s.policy = simPolicies[s.rng.IntN(len(simPolicies))]
	s.store.Put(addon.Object{Spec: meshSpec})
	drv := &simDriver{s: s}
	for i := range s.machines {
		m, err := addon.NewMachine(addon.Config{Driver: drv, Store: s.store, Identity: s.id(i), Policy: s.policy, Clock: s.clock,
			Jitter: func() float64 { return 0.5 }})
		if err != nil {
			panic(err)
		}
		s.machines[i] = m
	}
	s.stale = s.obj()
	return s
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

func (s *simulation) obj() addon.Object {
	obj, err := s.store.Get(context.Background(), meshSpec.Name)
	if err != nil {
		panic(err)
	}
	return obj
}

// run plays the faulty steps, then lets the world behave.
func (s *simulation) run() error {
	s.prev = s.obj().Status
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
	case r < 40:
		s.reconcile(s.rng.IntN(2), s.obj())
	case r < 44:
		s.injected["stale snapshot"]++
		s.logf("reconcile from a stale snapshot (version %s)", s.stale.ResourceVersion)
		s.reconcile(s.rng.IntN(2), s.stale)
	case r < 56:
		d := []time.Duration{time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, 11 * time.Minute}[s.rng.IntN(5)]
		s.logf("clock +%s", d)
		s.clock.Step(d)
	case r < 84:
		s.changeSpec()
	case r < 92:
		n := 1 + s.rng.IntN(2)
		s.injected["status conflict"]++
		s.logf("the next %d status writes conflict", n)
		s.store.Conflicts = n
	default:
		s.logf("snapshot kept (version %s)", s.obj().ResourceVersion)
		s.stale = s.obj()
	}
}

func (s *simulation) changeSpec() {
	obj := s.obj()
	var what string
	var f func(*addon.Spec)
	switch r := s.rng.IntN(7); {
	case r == 0 && !obj.Spec.Deleting:
		v := []string{"v1", "v2", "v3"}[s.rng.IntN(3)]
		what, f = "version "+v, func(sp *addon.Spec) { sp.Generation++; sp.Version = v }
	case r == 1 && !obj.Spec.Deleting:
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
	s.store.Update(meshSpec.Name, f)
}

// reconcile runs Machine i on obj.
func (s *simulation) reconcile(i int, obj addon.Object) {
	s.steps++
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	outer, outerCancel := s.running, s.cancel
	s.running, s.cancel = i, cancel
	defer func() { s.running, s.cancel = outer, outerCancel }()
	before := s.obj().Status.InFlight
	res, err := s.machines[i].Reconcile(ctx, obj)
	if after := s.obj().Status.InFlight; err == nil && after != nil && after.Owner == s.id(i) && (before == nil || *after != *before) {
		s.violate("m%d returned without error but left its claim on %s: the outcome was lost", i+1, after.Action)
	}
	for _, e := range res.Events {
		if strings.Contains(e.Message, simSecret) {
			s.violate("a secret reached an event: %s", e.Message)
		}
	}
	s.logf("m%d reconciled: after %s, events %v, err %v", i+1, res.RequeueAfter, res.Events, err)
	if err != nil && !errors.Is(err, converge.ErrConflict) && !errors.Is(err, context.Canceled) {
		s.violate("reconcile failed: %v", err)
	}
}

// check verifies the invariants after a step.
func (s *simulation) check() error {
	if s.violation != nil {
		return s.violation
	}
	cur := s.obj().Status
	prev := s.prev
	s.prev = cur
	switch {
	case cur.Validate() != nil:
		return fmt.Errorf("a waiting phase without a deadline, or another invalid status: %v", cur.Validate())
	case s.inFlight != 0:
		return fmt.Errorf("%d actions still in flight between steps", s.inFlight)
	case prev.LastGoodVersion != "" && cur.LastGoodVersion == "":
		return fmt.Errorf("the last good version %s was lost", prev.LastGoodVersion)
	case cur.ObservedGeneration < prev.ObservedGeneration:
		return fmt.Errorf("observed generation went back from %d to %d", prev.ObservedGeneration, cur.ObservedGeneration)
	case cur.Phase == addon.PhaseDeleted && prev.Phase != addon.PhaseDeleted && (!s.uninstalled || cur.InFlight != nil || s.cluster != ""):
		return fmt.Errorf("Deleted without a successful uninstall (cluster runs %q, in flight %v)", s.cluster, cur.InFlight)
	case strings.Contains(cur.Message, simSecret):
		return fmt.Errorf("a secret reached the status: %s", cur.Message)
	}
	for _, c := range cur.Conditions {
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
	if s.obj().Spec.Suspended {
		s.store.Update(meshSpec.Name, func(sp *addon.Spec) { sp.Suspended = false })
	}
	s.store.Conflicts = 0
	requested := false
	for range simConverge {
		st := s.obj().Status
		if st.Phase == addon.PhaseDeleted || (st.Phase == addon.PhaseRunning && st.Health == addon.HealthHealthy && st.InFlight == nil) {
			return s.check()
		}
		if !requested && (st.Phase == addon.PhaseFailed || (st.Phase == addon.PhaseDeleting && st.PendingAction == "" && st.InFlight == nil)) {
			s.logf("spec: reset after the faults")
			s.store.Update(meshSpec.Name, func(sp *addon.Spec) { sp.ResetToken = "converge" })
			requested = true
		}
		res, err := s.machines[0].Reconcile(context.Background(), s.obj())
		s.steps++
		st = s.obj().Status
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
	st := s.obj().Status
	return fmt.Errorf("neither Running nor Deleted within %d reconciles once faults stopped: %s (%s)", simConverge, st.Phase, st.Message)
}

// simDriver acts on the simulation's world with outcomes the schedule draws.
type simDriver struct{ s *simulation }

func (d *simDriver) mutate(ctx context.Context, a addon.Action, req addon.Request) (string, error) {
	s := d.s
	st := s.obj().Status
	s.inFlight++
	defer func() { s.inFlight-- }()
	if s.inFlight > 1 {
		s.violate("%s started while another action is in flight", a)
	}
	if a == addon.ActionInstall && st.InstalledVersion != "" {
		s.violate("a fresh install while %s is installed", st.InstalledVersion)
	}
	if a == addon.ActionUninstall && st.Phase != addon.PhaseDeleting && st.InstalledVersion != "" && st.InstalledVersion == st.LastGoodVersion &&
		st.FailedVersion != st.InstalledVersion && !(st.LastFailedAction == addon.ActionUpgrade && s.policy.UpgradeRemediation == addon.RemediationUninstall) {
		s.violate("good version %s uninstalled outside deletion", st.InstalledVersion)
	}
	if a == addon.ActionRollback && !s.carries(req.Revision, req.To) {
		s.violate("rollback to %s at revision %q, which carried %v", req.To, req.Revision, s.carried)
	}
	if err := d.fault(ctx, a); err != nil {
		s.uninstalled = false
		return "", err
	}
	revision := ""
	switch a {
	case addon.ActionInstall, addon.ActionUpgrade, addon.ActionRollback:
		s.cluster = req.To
		s.carried = append(s.carried, req.To)
		revision = strconv.Itoa(len(s.carried))
	case addon.ActionUninstall:
		s.cluster = ""
	}
	s.uninstalled = a == addon.ActionUninstall
	return revision, nil
}

// carries reports whether the driver's revision carried version.
func (s *simulation) carries(revision, version string) bool {
	n, err := strconv.Atoi(revision)
	return err == nil && n >= 1 && n <= len(s.carried) && s.carried[n-1] == version
}

// fault draws what goes wrong with a call, if faults are on.
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
		s.reconcile(other, s.obj())
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

func (d *simDriver) Health(context.Context, addon.Request) (addon.Health, error) {
	s := d.s
	if !s.faults {
		return addon.HealthHealthy, nil
	}
	switch r := s.rng.IntN(100); {
	case r < 15:
		return addon.HealthUnhealthy, nil
	case r < 25:
		return addon.HealthUnknown, fmt.Errorf("sim: metrics token=%s expired", simSecret)
	}
	return addon.HealthHealthy, nil
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
