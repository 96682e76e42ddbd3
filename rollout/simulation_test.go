package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

var (
	simSeed      = flag.Uint64("seed", 0, "TestSimRollout: replay this one schedule (0: run -schedules schedules)")
	simSchedules = flag.Int("schedules", 5000, "TestSimRollout: how many seeded schedules to run")
)

// Simulation bounds. A schedule injects faults for simFaultSteps steps, then
// stops them; it must then converge within simQuietSteps steps, each a sync
// followed by a kubelet tick and the clock moved by the requeue the sync
// asked for (at most 10 minutes).
const (
	simFaultSteps = 25
	simQuietSteps = 80
	simMaxLatest  = 6
)

// errCrash is what every host call returns once the simulated process died.
var errCrash = errors.New("simulated crash")

// simHost wraps the fakes: after crashAfter more successful status writes
// the process dies, and every host call fails until the next restart.
type simHost struct {
	*fake.RolloutCluster
	store      *fake.RolloutStatusStore
	crashAfter int // -1: no crash pending
	dead       bool
}

func (h *simHost) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	if h.dead {
		return rollout.Status{}, "", errCrash
	}
	return h.store.GetStatus(ctx)
}

func (h *simHost) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	if h.dead {
		return "", errCrash
	}
	newRV, err := h.store.UpdateStatus(ctx, st, rv)
	if err == nil && h.crashAfter >= 0 {
		if h.crashAfter == 0 {
			h.dead = true
		}
		h.crashAfter--
	}
	return newRV, err
}

func (h *simHost) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	if h.dead {
		return errCrash
	}
	return h.RolloutCluster.EnsureInstaller(ctx, inst)
}

func (h *simHost) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	if h.dead {
		return errCrash
	}
	return h.RolloutCluster.DeleteInstaller(ctx, inst)
}

// simRun is one seeded schedule.
type simRun struct {
	seed    uint64
	rng     *rand.Rand
	clk     *clocktesting.FakeClock
	host    *simHost
	policy  rollout.Policy
	ctrl    *rollout.Controller
	verbose bool // keep a step log (a failing seed is replayed with it)
	log     []string
	events  []converge.Event
	written int              // store writes already checked
	prev    rollout.Status   // the status persisted before the current step
	maxCur  map[string]int32 // highest current revision seen per node
	nodeSeq int
	syncs   int
}

func (r *simRun) logf(format string, args ...any) {
	if !r.verbose {
		return
	}
	r.log = append(r.log, fmt.Sprintf("[%s] ", r.clk.Now().Sub(t0))+fmt.Sprintf(format, args...))
}

func (r *simRun) restart() error {
	c, err := rollout.NewController(rollout.Config{Status: r.host, Installers: r.host, Operands: r.host, Nodes: r.host,
		Clock: r.clk, Policy: r.policy, Jitter: r.rng.Float64})
	r.ctrl = c
	return err
}

func newSimRun(seed uint64, verbose bool) (*simRun, error) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	clk := clocktesting.NewFakeClock(t0)
	n := 3 + rng.IntN(2)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
	}
	cluster := fake.NewRolloutCluster(clk, 1, names...)
	store := fake.NewRolloutStatusStore(2, 1, names...)
	r := &simRun{seed: seed, rng: rng, clk: clk, host: &simHost{RolloutCluster: cluster, store: store, crashAfter: -1},
		maxCur: map[string]int32{}, nodeSeq: n, verbose: verbose}
	r.policy = rollout.Policy{MaxUnavailable: int32(1 + rng.IntN(2))}
	if rng.IntN(2) == 0 {
		r.policy.InstallerPendingTimeout = metav1.Duration{Duration: 2 * time.Minute}
	}
	if rng.IntN(2) == 0 {
		r.policy.OperandReadyTimeout = metav1.Duration{Duration: 3 * time.Minute}
	}
	if rng.IntN(3) == 0 {
		r.policy.MinReadyDuration = metav1.Duration{Duration: 10 * time.Second}
	}
	if rng.IntN(3) == 0 {
		r.policy.InstallerBackoff.JitterPercent = ptr.To[int32](50)
	}
	r.prev = store.Current()
	policy, _ := json.Marshal(r.policy)
	r.logf("nodes %v, policy %s", names, policy)
	return r, r.restart()
}

// fault injects at most a few faults, at random.
func (r *simRun) fault() {
	c, rng := r.host.RolloutCluster, r.rng
	nodes := c.Nodes
	pick := func() string { return nodes[rng.IntN(len(nodes))] }
	switch k := rng.IntN(40); {
	case k < 4:
		n := pick()
		away := !c.Unreachable[n]
		c.SetUnreachable(n, away)
		r.logf("fault: %s unreachable=%t", n, away)
	case k < 9:
		n := pick()
		outcome := []fake.InstallerOutcome{fake.InstallerFails, fake.InstallerOOMKilled, fake.InstallerHangs, fake.InstallerDisappears}[rng.IntN(4)]
		scripts := c.InstallerScripts[n]
		for len(scripts) < c.Attempts[n] {
			scripts = append(scripts, fake.InstallerScript{})
		}
		if c.InstallerScripts == nil {
			c.InstallerScripts = map[string][]fake.InstallerScript{}
		}
		c.InstallerScripts[n] = append(scripts[:c.Attempts[n]], fake.InstallerScript{Outcome: outcome, Message: "injected"})
		r.logf("fault: next installer on %s %s", n, outcome)
	case k < 11:
		on := c.Errors[fake.RolloutDeleteInstaller] == nil
		if on {
			c.SetError(fake.RolloutDeleteInstaller, errors.New("delete refused"))
		} else {
			c.SetError(fake.RolloutDeleteInstaller, nil)
		}
		r.logf("fault: deletes fail=%t", on)
	case k < 12:
		c.SetError(fake.RolloutEnsureInstaller, errors.New("create refused"))
		r.logf("fault: the next creates fail")
	case k < 14:
		n := pick()
		op := c.Operand(n)
		op.Phase, op.Message = rollout.OperandFailed, "crashed"
		c.SetOperand(n, op)
		r.logf("fault: operand on %s crashed", n)
	case k < 15:
		n := pick()
		if c.OperandHangs == nil {
			c.OperandHangs = map[string]map[int32]bool{}
		}
		latest := r.host.store.Current().LatestAvailableRevision
		c.OperandHangs[n] = map[int32]bool{latest: true}
		r.logf("fault: operand of revision %d on %s stays not ready", latest, n)
	case k < 17:
		r.host.store.Conflicts = 1 + rng.IntN(5)
		r.logf("fault: %d write conflicts", r.host.store.Conflicts)
	case k < 20:
		r.host.crashAfter = rng.IntN(3)
		r.logf("fault: crash after %d more writes", r.host.crashAfter)
	case k < 22:
		back := time.Duration(1+rng.IntN(3600)) * time.Second
		r.clk.SetTime(r.clk.Now().Add(-back))
		r.logf("fault: clock stepped back %v", back)
	case k < 23:
		fwd := time.Duration(1+rng.IntN(3600)) * time.Second
		r.clk.Step(fwd)
		r.logf("fault: clock stepped forward %v", fwd)
	case k < 25:
		if latest := r.host.store.Current().LatestAvailableRevision; latest < simMaxLatest {
			r.host.store.SetLatest(latest + 1)
			r.logf("fault: revision %d arrives", latest+1)
		}
	case k < 26:
		name := fmt.Sprintf("n%d", r.nodeSeq)
		r.nodeSeq++
		c.AddNode(name)
		r.logf("fault: node %s added", name)
	case k < 27:
		if len(nodes) > 2 {
			n := pick()
			c.RemoveNode(n)
			delete(r.maxCur, n)
			r.logf("fault: node %s removed", n)
		}
	}
}

// quiesce stops every fault: nodes reachable, scripts and errors gone, hung
// installers and operands move on, crashed operands restarted by the kubelet.
func (r *simRun) quiesce() {
	c := r.host.RolloutCluster
	c.Unreachable = nil
	c.InstallerScripts = nil
	c.Errors = nil
	c.OperandHangs = nil
	for _, p := range c.Pods {
		p.Script = fake.InstallerScript{}
	}
	for n, op := range c.Operands {
		if op.Phase == rollout.OperandFailed {
			op.Phase, op.ReadySince, op.Message = rollout.OperandReady, r.clk.Now(), ""
			c.Operands[n] = op
		}
	}
	r.host.store.Conflicts = 0
	r.host.crashAfter, r.host.dead = -1, false
	r.logf("faults stop")
}

// step syncs once, checks every invariant, lets the kubelet move and the
// clock advance.
func (r *simRun) step(ctx context.Context) error {
	before := r.host.store.Status // the store replaces, never mutates, what it holds
	created := len(r.host.Created)
	res, err := r.ctrl.Sync(ctx)
	r.syncs++
	r.events = append(r.events, res.Events...)
	if r.verbose {
		for _, e := range res.Events {
			r.logf("event %s %s: %s", e.Type, e.Reason, e.Message)
		}
	}
	switch {
	case err == nil:
	case errors.Is(err, errCrash):
		r.logf("crashed: %v; restarting from the persisted status", err)
		r.host.dead, r.host.crashAfter = false, -1
		if err := r.restart(); err != nil {
			return err
		}
	case converge.IsConflict(err), strings.Contains(err.Error(), "create refused"):
		r.logf("sync error: %v", err)
		r.host.SetError(fake.RolloutEnsureInstaller, nil)
	default:
		return fmt.Errorf("unexpected sync error: %w", err)
	}
	if err := r.check(before, r.host.Created[created:]); err != nil {
		return err
	}
	wait := time.Second
	if !r.host.Tick() && res.RequeueAfter > 0 {
		wait = min(res.RequeueAfter, 10*time.Minute)
	}
	r.clk.Step(wait)
	return nil
}

// unavailable counts nodes down: unreachable, in transition, operand not
// ready, or regressed.
func (r *simRun) unavailable(st rollout.Status) (unavailable, inTransition int) {
	c := r.host.RolloutCluster
	for _, n := range st.NodeStatuses {
		if n.InTransition() {
			inTransition++
		}
		if c.Unreachable[n.NodeName] || n.InTransition() || c.Operand(n.NodeName).Phase != rollout.OperandReady || n.RegressedRevision != 0 {
			unavailable++
		}
	}
	return unavailable, inTransition
}

// check verifies the invariants after one sync.
func (r *simRun) check(before rollout.Status, created []rollout.Installer) error {
	after := r.host.store.Status
	if err := after.Validate(); err != nil {
		return fmt.Errorf("persisted status is invalid: %w", err)
	}
	for _, c := range after.Conditions {
		if err := conditions.Validate(c); err != nil {
			return fmt.Errorf("persisted condition is invalid: %w", err)
		}
	}

	// The engine never takes a ready node down past MaxUnavailable.
	budget := max(int(r.policy.MaxUnavailable), 1)
	startedReady := false
	for _, n := range after.NodeStatuses {
		old, ok := before.Node(n.NodeName)
		if ok && !old.InTransition() && n.InTransition() && r.host.Operand(n.NodeName).Phase == rollout.OperandReady && old.RegressedRevision == 0 {
			startedReady = true
		}
	}
	if down, moving := r.unavailable(after); startedReady && (down > budget || moving > budget) {
		return fmt.Errorf("started a ready node with %d unavailable and %d in transition after it, maxUnavailable %d", down, moving, budget)
	}

	// No current revision goes down.
	for _, n := range after.NodeStatuses {
		if n.CurrentRevision < r.maxCur[n.NodeName] {
			return fmt.Errorf("node %s current revision went down from %d to %d", n.NodeName, r.maxCur[n.NodeName], n.CurrentRevision)
		}
		r.maxCur[n.NodeName] = n.CurrentRevision
	}

	// No installer of a superseded revision is created after the target moved.
	for _, inst := range created {
		n, ok := after.Node(inst.Node)
		if !ok || n.TargetRevision != inst.Revision || rollout.InstallerName(n) != inst.Name {
			return fmt.Errorf("created installer %s, but node %s targets %d", inst.Name, inst.Node, n.TargetRevision)
		}
		for _, d := range after.InstallersToDelete {
			if d.Name == inst.Name {
				return fmt.Errorf("created installer %s that must be deleted", inst.Name)
			}
		}
	}

	// Every transition is reported once: as many events as transitions persisted.
	writes := r.host.store.Writes
	prev := r.prev
	var wantCurrent, wantTarget, wantFailures int
	for _, w := range writes[r.written:] {
		for _, n := range w.NodeStatuses {
			old, ok := prev.Node(n.NodeName)
			if !ok { // a node the write adds starts from nothing
				old = rollout.NodeStatus{NodeName: n.NodeName}
			}
			failedNow := n.LastFailedTime != nil && (old.LastFailedTime == nil || n.LastFailedCount != old.LastFailedCount || n.LastFailedRevision != old.LastFailedRevision)
			// One write may both finish a node's revision and start its next.
			if old.InTransition() && n.CurrentRevision == old.TargetRevision && n.CurrentRevision != old.CurrentRevision && !failedNow {
				wantCurrent++
			}
			if n.InTransition() && (n.TargetRevision != old.TargetRevision || (n.InstallerOrderedTime != nil && old.InstallerOrderedTime == nil && !old.InTransition())) {
				wantTarget++
			}
			if failedNow {
				wantFailures++
			}
		}
		prev = w
	}
	r.written, r.prev = len(writes), after
	var gotCurrent, gotTarget, gotFailures int
	for _, e := range r.events {
		switch e.Reason {
		case rollout.ReasonNodeCurrentRevisionChanged:
			gotCurrent++
		case rollout.ReasonNodeTargetRevisionChanged:
			gotTarget++
		case rollout.ReasonInstallerPodFailed, rollout.ReasonInstallerPodDisappeared, rollout.ReasonOperandFailed, rollout.ReasonOperandNotReady:
			gotFailures++
		}
	}
	r.events = nil
	if gotCurrent != wantCurrent || gotTarget != wantTarget || gotFailures != wantFailures {
		return fmt.Errorf("events do not match the persisted transitions: %d current-revision events for %d transitions, "+
			"%d target-revision events for %d, %d failure events for %d failures",
			gotCurrent, wantCurrent, gotTarget, wantTarget, gotFailures, wantFailures)
	}
	return nil
}

// converged reports whether the rollout is done and nothing is left behind.
func (r *simRun) converged() bool {
	st := r.host.store.Status
	if !st.Converged() || !conditions.IsFalse(st.Conditions, conditions.TypeDegraded) {
		return false
	}
	for _, n := range st.NodeStatuses {
		if op := r.host.Operand(n.NodeName); op.Phase != rollout.OperandReady || op.Revision < st.LatestAvailableRevision {
			return false
		}
	}
	for _, p := range r.host.Pods {
		if p.State.Phase == rollout.InstallerPending || p.State.Phase == rollout.InstallerRunning {
			return false
		}
	}
	return true
}

// run plays the schedule: faults, then quiet until converged.
func (r *simRun) run(ctx context.Context) error {
	for range simFaultSteps {
		for r.rng.IntN(2) == 0 {
			r.fault()
		}
		if err := r.step(ctx); err != nil {
			return err
		}
	}
	r.quiesce()
	for i := range simQuietSteps {
		if r.converged() {
			r.logf("converged %d quiet steps after the faults stopped", i)
			return nil
		}
		if err := r.step(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("not converged within %d quiet steps after the faults stopped: %+v", simQuietSteps, r.host.store.Current())
}

// playSchedule plays one seeded schedule.
func playSchedule(ctx context.Context, seed uint64, verbose bool) error {
	r, err := newSimRun(seed, verbose)
	if err != nil {
		return err
	}
	return r.run(ctx)
}

// TestSimRollout runs seeded schedules of faults against Controller.Sync and
// fake.RolloutCluster: nodes unreachable and back, added and removed;
// installers that fail, OOM, hang, vanish, fail to be created or deleted;
// operands that crash or stay not ready; status write conflicts; a crash
// between any two writes (a new Controller from the persisted status); the
// clock stepping forwards and backwards; new revisions mid-rollout. After
// every step: the engine never starts a ready node past MaxUnavailable, no
// current revision goes down, no installer of a superseded target is
// created, every transition is reported once, and the status validates.
// Once the faults stop the rollout converges within simQuietSteps steps,
// with no installer left running. A failure prints the seed, the command
// that replays it and the step log.
func TestSimRollout(t *testing.T) {
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	seeds := make([]uint64, 0, *simSchedules)
	if *simSeed != 0 {
		r, err := newSimRun(*simSeed, true)
		if err == nil {
			err = r.run(ctx)
		}
		t.Logf("seed %d steps:\n%s", *simSeed, strings.Join(r.log, "\n"))
		if err != nil {
			t.Fatalf("seed %d: %v", *simSeed, err)
		}
		return
	} else {
		for i := range *simSchedules {
			seeds = append(seeds, uint64(i)+1)
		}
	}
	type failure struct {
		seed uint64
		err  error
		log  []string
	}
	var (
		mu       sync.Mutex
		failures []failure
		wg       sync.WaitGroup
	)
	next := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range next {
				if err := playSchedule(ctx, seed, false); err == nil {
					continue
				}
				r, _ := newSimRun(seed, true)
				err := r.run(ctx)
				mu.Lock()
				failures = append(failures, failure{seed: seed, err: err, log: r.log})
				mu.Unlock()
			}
		}()
	}
	for _, s := range seeds {
		next <- s
	}
	close(next)
	wg.Wait()
	for i, f := range failures {
		if i == 3 {
			t.Errorf("… and %d more failing seeds", len(failures)-i)
			break
		}
		t.Errorf("seed %d: %v\nreplay: go test ./rollout -run 'TestSimRollout$' -seed %d -v\nsteps:\n%s",
			f.seed, f.err, f.seed, strings.Join(f.log, "\n"))
	}
	t.Logf("%d schedules", len(seeds))
}

// TestSimRolloutReplays: a seed replays exactly, step log included, so a
// failing seed printed by TestSimRollout reproduces with -seed.
func TestSimRolloutReplays(t *testing.T) {
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	for _, seed := range []uint64{1, 514, 3570} {
		var logs [2][]string
		for i := range logs {
			r, err := newSimRun(seed, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.run(ctx); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			logs[i] = r.log
		}
		if strings.Join(logs[0], "\n") != strings.Join(logs[1], "\n") {
			t.Errorf("seed %d played two different schedules", seed)
		}
		if len(logs[0]) < 10 {
			t.Errorf("seed %d logged only %d steps", seed, len(logs[0]))
		}
	}
}
