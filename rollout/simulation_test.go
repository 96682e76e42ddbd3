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
	"sync/atomic"
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
	simDebug     = flag.Bool("sim-debug", false, "TestSimRollout with -seed: log what Decide makes of every step")
)

// simFoundSeeds are the schedules beyond CI's count that found a bug:
// TestSimRollout plays them as well as its first -schedules ones.
var simFoundSeeds = []uint64{11111, 12151}

// Simulation bounds. A schedule injects faults for simFaultSteps steps, then
// stops them; it must then converge within simQuietSteps steps, each a sync
// followed by a kubelet tick and the clock moved by the requeue the sync
// asked for (at most 10 minutes): a fallback backoff of up to 2 hours and a
// rollout of a few nodes fit in it.
const (
	simFaultSteps = 25
	simQuietSteps = 100
	simMaxLatest  = 6
)

// The policy's documented defaults, written here rather than asked of the
// engine: the shortest wait before a retry, and how long a hold may last
// before Degraded reports it.
const (
	simInstallerBackoff = 15 * time.Second
	simFallbackBackoff  = 20 * time.Minute
	simHoldDegraded     = 10 * time.Minute
)

// simRun is one seeded schedule.
type simRun struct {
	seed    uint64
	rng     *rand.Rand
	clk     *clocktesting.FakeClock
	host    *simHost
	gate    *simGate
	policy  rollout.Policy
	ctrl    *rollout.Controller
	decided rollout.Decision // the decision the last sync acted on
	verbose bool             // keep a step log (a failing seed is replayed with it)
	debug   bool             // log what Decide makes of every step, too
	world   simSnapshot      // the world after the last sync
	snaps   [3]simSnapshot   // the buffers of the world before and after a sync, and of done
	log     []string
	events  []converge.Event
	quiet   bool

	budget      int           // MaxUnavailable as the policy field says, at least 1
	holdAfter   time.Duration // HoldDegradedAfter as the policy field says
	minRetry    time.Duration // the shortest installer backoff the policy allows
	minFallback time.Duration // the shortest fallback backoff
	fwd         time.Duration // the clock's forward steps, summed
	stuckSince  *time.Time    // when a sync first saw the world stuck, past the engine's last deadline
	deadline    time.Time     // when the last sync asked to look again (zero: on a change)
	lastWorld   string        // the world the last sync saw
	fp          []byte        // the buffer fingerprint renders into

	maxReady    map[machine]int32                 // the highest revision each machine ran ready, a fallback's excluded
	lastCreated map[string]string                 // the last installer created on each node
	failures    map[nodeRev]simFailure            // the failed attempts the world saw, not tried again since
	installed   map[string]int32                  // the revision the last installer that succeeded on each node installed
	podMachine  map[string]string                 // the UID of the machine each installer was created for
	lateInstall map[string]int32                  // the revision an installer installed after the engine retired it, by node
	fellBack    map[*rollout.OperandFallback]bool // the startup monitor's fallbacks the engine was shown
	ledger      map[nodeRev]int                   // the failures the world showed, not yet recorded by the status
	replica     skewedClock                       // the clock of the replica that syncs
	skewLow     time.Duration                     // the lowest and highest offsets of the replicas' clocks so far
	skewHigh    time.Duration
	replacedAt  map[string]int                    // the store's write count when each node's machine was last replaced
	reported    map[*rollout.OperandFallback]bool // the startup monitor's fallbacks an event reported
	written     int                               // store writes already checked
	prev        rollout.Status                    // the status persisted before the writes not yet checked
	nodeSeq     int
}

func (r *simRun) logf(format string, args ...any) {
	if !r.verbose {
		return
	}
	r.log = append(r.log, fmt.Sprintf("[%s] ", r.clk.Now().Sub(t0))+fmt.Sprintf(format, args...))
}

func (r *simRun) restart() error {
	r.skew()
	cfg := rollout.Config{Status: r.host, Installers: r.host, Operands: r.host, Nodes: r.host,
		Clock: r.replica, Policy: r.policy, Jitter: r.rng.Float64, OnDecision: func(d rollout.Decision) { r.decided = d }}
	if r.gate != nil {
		cfg.Gate = r.gate
	}
	c, err := rollout.NewController(cfg)
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
	if rng.IntN(3) != 0 {
		cluster.UIDs = map[string]string{}
		for _, name := range names {
			cluster.UIDs[name] = name + "-machine-0"
		}
	}
	if rng.IntN(3) == 0 {
		cluster.FallbackAfter = 2 + rng.IntN(3)
	}
	store := fake.NewRolloutStatusStore(2, 1, names...)
	for i := range store.Status.NodeStatuses { // as the sync before the schedule wrote it
		store.Status.NodeStatuses[i].NodeUID = cluster.UIDs[names[i]]
	}
	r := &simRun{seed: seed, rng: rng, clk: clk, host: &simHost{RolloutCluster: cluster, store: store, codec: newPartCodec().roundTrip, crashAfter: -1, shown: map[string]bool{}},
		maxReady: map[machine]int32{}, lastCreated: map[string]string{}, failures: map[nodeRev]simFailure{}, installed: map[string]int32{}, podMachine: map[string]string{}, lateInstall: map[string]int32{}, replacedAt: map[string]int{}, replica: skewedClock{world: clk}, ledger: map[nodeRev]int{}, fellBack: map[*rollout.OperandFallback]bool{}, reported: map[*rollout.OperandFallback]bool{},
		nodeSeq: n, verbose: verbose}
	r.policy = rollout.Policy{MaxUnavailable: int32(1 + rng.IntN(2))}
	if rng.IntN(2) == 0 {
		r.policy.InstallerPendingTimeout = metav1.Duration{Duration: 2 * time.Minute}
	}
	if rng.IntN(2) == 0 {
		r.policy.OperandReadyTimeout = metav1.Duration{Duration: 3 * time.Minute}
	}
	if rng.IntN(3) == 0 {
		r.policy.FallbackTimeout = metav1.Duration{Duration: 90 * time.Second}
	}
	if rng.IntN(3) == 0 {
		r.policy.MinReadyDuration = metav1.Duration{Duration: 10 * time.Second}
	}
	if rng.IntN(3) == 0 {
		r.policy.InstallerBackoff.JitterPercent = ptr.To[int32](50)
	}
	if rng.IntN(2) == 0 {
		r.policy.HoldDegradedAfter = metav1.Duration{Duration: 3 * time.Minute}
	}
	if rng.IntN(3) == 0 {
		r.gate = &simGate{denied: map[string]bool{}}
	}
	r.budget = max(int(r.policy.MaxUnavailable), 1)
	r.holdAfter = simHoldDegraded
	if r.policy.HoldDegradedAfter.Duration > 0 {
		r.holdAfter = r.policy.HoldDegradedAfter.Duration
	}
	r.minRetry, r.minFallback = simInstallerBackoff, simFallbackBackoff
	if seed%5 == 3 {
		// A fallback backoff shorter than the installer's, drawn from the
		// seed so that the other schedules stay as they are (the schedules
		// of seed%5 == 4 fail an install after a fallback with the default
		// backoffs, whose fallback backoff is the longer one).
		r.policy.FallbackBackoff = converge.Backoff{Initial: metav1.Duration{Duration: 30 * time.Second}, Max: metav1.Duration{Duration: 30 * time.Second}}
		r.policy.InstallerBackoff.Initial, r.policy.InstallerBackoff.Max = metav1.Duration{Duration: 5 * time.Minute}, metav1.Duration{Duration: 5 * time.Minute}
		r.minRetry, r.minFallback = 5*time.Minute, 30*time.Second
	}
	for _, name := range names {
		r.maxReady[machine{name, cluster.UIDs[name]}] = 1
	}
	r.prev = store.Current()
	if r.verbose {
		policy, _ := json.Marshal(r.policy)
		r.logf("nodes %v, UIDs %t, startup monitor after %d ticks, gate %t, policy %s", names, cluster.UIDs != nil, cluster.FallbackAfter, r.gate != nil, policy)
	}
	return r, r.restart()
}

// scriptInstaller makes the attempt-th installer of node end with outcome
// (the attempts before it, not scripted yet, succeed).
func (r *simRun) scriptInstaller(node string, attempt int, outcome fake.InstallerOutcome) {
	c := r.host.RolloutCluster
	scripts := c.InstallerScripts[node]
	for len(scripts) < attempt {
		scripts = append(scripts, fake.InstallerScript{})
	}
	if c.InstallerScripts == nil {
		c.InstallerScripts = map[string][]fake.InstallerScript{}
	}
	c.InstallerScripts[node] = append(scripts[:attempt], fake.InstallerScript{Outcome: outcome, Message: "injected"})
}

// advance moves the clock forward.
func (r *simRun) advance(d time.Duration) {
	r.clk.Step(d)
	r.fwd += d
}

// sync runs one Controller.Sync and checks what it did against the world.
func (r *simRun) sync(ctx context.Context) (converge.Result, bool, error) {
	before := r.snapshot(&r.snaps[0])
	created, acted := len(r.host.Created), r.host.acted
	if r.gate != nil {
		r.gate.admitted = nil
	}
	res, err := r.ctrl.Sync(ctx)
	r.events = append(r.events, res.Events...)
	if r.verbose {
		for _, e := range res.Events {
			r.logf("event %s %s: %s", e.Type, e.Reason, e.Message)
		}
	}
	ok := true
	switch {
	case err == nil:
	case errors.Is(err, errCrash):
		r.logf("crashed: %v; restarting from the persisted status", err)
		r.host.dead, r.host.crashAfter = false, -1
		if err := r.restart(); err != nil {
			return res, false, err
		}
		ok = false
	case converge.IsConflict(err), strings.Contains(err.Error(), "create refused"):
		r.logf("sync error: %v", err)
		r.host.SetError(fake.RolloutEnsureInstaller, nil)
		ok = false
	default:
		return res, false, fmt.Errorf("unexpected sync error: %w", err)
	}
	if r.verbose {
		r.logf("  %s requeue %v", r.describe(), res.RequeueAfter)
		if r.debug {
			r.logf("  decision on it: %s", r.decision())
		}
	}
	crashed := errors.Is(err, errCrash)
	for _, inst := range r.host.refused {
		r.failed(inst.Node, inst.Revision, r.minRetry)
		r.witnessed(inst.Node, inst.Revision)
		if err := r.checkRefusal(inst, crashed || converge.IsConflict(err)); err != nil {
			return res, false, err
		}
	}
	r.host.refused = r.host.refused[:0]
	if err == nil {
		r.host.saw()
	}
	// A sync that failed saw nothing it could keep: a landed write already
	// kept what it was shown, and a lost one kept nothing.
	r.host.showing = r.host.showing[:0]
	for _, f := range r.host.fallbacks {
		// The monitor's fallback the engine was shown, unless the
		// engine's own fallback from the same revision came first; one
		// from what an installer the engine had retired installed late
		// is no attempt of the node.
		if !r.fellBack[f.pod] && r.lateInstall[f.node] != f.pod.ForRevision {
			r.failed(f.node, f.pod.ForRevision, r.minFallback)
		}
		r.fellBack[f.pod] = true
	}
	r.host.fallbacks = r.host.fallbacks[:0]
	newPods := r.host.Created[created:]
	for _, inst := range newPods {
		delete(r.host.shown, inst.Name) // a new pod: a name may be used again
		delete(r.lateInstall, inst.Node)
		r.lastCreated[inst.Node] = inst.Name
		r.podMachine[inst.Name] = r.host.UIDs[inst.Node]
		if p, ok := r.host.Pods[inst.Name]; ok && !r.quiet && r.rng.IntN(2) == 0 {
			p.Script.PendingTicks = r.rng.IntN(6)
		}
	}
	r.world = r.snapshot(&r.snaps[1])
	if err := r.checkSync(before, r.world, newPods, res, ok); err != nil {
		return res, ok, err
	}
	return res, ok && r.host.acted == acted, nil
}

// step syncs once, checks every invariant, lets the kubelet move and the
// clock advance.
func (r *simRun) step(ctx context.Context) error {
	res, idle, err := r.sync(ctx)
	if err != nil {
		return err
	}
	if r.rng.IntN(4) == 0 {
		if err := r.checkNoChurn(ctx, res, idle); err != nil {
			return err
		}
	}
	moved := r.host.Tick()
	if err := r.checkTick(r.world); err != nil {
		return err
	}
	// The clock moves a second while the kubelet works, else to the
	// engine's next deadline, at most 10 minutes away.
	wait := time.Second
	if !moved {
		wait = 10 * time.Minute
		if res.RequeueAfter > 0 {
			wait = min(res.RequeueAfter, wait)
		}
	}
	r.advance(wait)
	return nil
}

// done reports whether the rollout is over, in the world and in its status.
func (r *simRun) done() bool {
	st := r.host.store.Status
	if !st.Converged() || !conditions.IsFalse(st.Conditions, conditions.TypeDegraded) || !conditions.IsFalse(st.Conditions, conditions.TypeProgressing) {
		return false
	}
	s := r.snapshot(&r.snaps[2])
	for _, n := range r.host.Nodes {
		if op := s.operands[n]; op.Phase != rollout.OperandReady || op.Revision < st.LatestAvailableRevision || op.Fallback != nil {
			return false
		}
	}
	for _, p := range s.pods {
		if p.live() {
			return false
		}
	}
	return true
}

// run plays the schedule: faults, then quiet until done.
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
	if r.rng.IntN(3) == 0 {
		if err := r.outage(ctx); err != nil {
			return err
		}
	}
	for i := range simQuietSteps {
		if r.done() {
			r.logf("converged %d quiet steps after the faults stopped", i)
			return nil
		}
		if err := r.step(ctx); err != nil {
			return err
		}
	}
	// 7. Liveness.
	return fmt.Errorf("not converged within %d quiet steps after the faults stopped: %+v", simQuietSteps, r.host.store.Current())
}

// TestSimRollout runs seeded schedules of faults against Controller.Sync and
// a simulated world (fake.RolloutCluster) that does what real kubelets and
// machines do: installer pods pending for any number of steps, then running
// after the decision that created them changed; installers that fail, OOM,
// hang, vanish, fail to be created or deleted; operands that crash, stay not
// ready, or are lost; a startup monitor that falls back on its own; nodes
// unreachable and back, added (some with an operand of their own), removed,
// and replaced under the same name by a new machine; a gate that flaps;
// status write conflicts; a crash between any two writes (a new Controller
// from the persisted status); the clock stepping forwards and backwards; new
// revisions mid-rollout.
//
// After every step, against what the world runs: (1) taking a healthy node
// down never leaves more nodes unavailable (unreachable, not ready, or with
// an installer that can still run) than MaxUnavailable; (2) no installer
// takes a machine below a revision it ran, except a fallback its status
// records; (3) every installer that can still run is the one its node's
// decision wants, or recorded for deletion; (4) an attempt the world saw fail
// is retried no sooner than the policy's backoff; (5) a start's event names
// the revision the node ran, Progressing is False only when the world runs
// the latest revision everywhere, and a world where nothing moves towards it
// for longer than HoldDegradedAfter is Degraded; every persisted transition
// is reported by exactly one event; (6) once a sync's own actions are seen, a
// sync a second later in an unchanged world writes nothing; (7) once the
// faults stop, the rollout converges within simQuietSteps steps with no
// installer left running and no fallback left; and (8) the persisted holds
// are those the decision rendered, sorted, bounded, of known reasons, with
// no duration, and Progressing says each. A failure prints the seed,
// the command that replays it and the step log.
func TestSimRollout(t *testing.T) {
	ctx := klog.NewContext(context.Background(), klog.Logger{})
	if *simSeed != 0 {
		r, err := newSimRun(*simSeed, true)
		r.debug = *simDebug
		if err == nil {
			err = r.run(ctx)
		}
		t.Logf("seed %d steps:\n%s", *simSeed, strings.Join(r.log, "\n"))
		if err != nil {
			t.Fatalf("seed %d: %v\nreplay: go test ./rollout -run 'TestSimRollout$' -seed %d -v", *simSeed, err, *simSeed)
		}
		return
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
		failed   atomic.Bool
	)
	next := make(chan uint64)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range next {
				r, err := newSimRun(seed, false)
				if err == nil {
					err = r.run(ctx)
				}
				if err == nil {
					continue
				}
				failed.Store(true)
				r, _ = newSimRun(seed, true)
				err = r.run(ctx)
				mu.Lock()
				failures = append(failures, failure{seed: seed, err: err, log: r.log})
				mu.Unlock()
			}
		}()
	}
	played := 0
	for _, seed := range simFoundSeeds {
		if seed > uint64(*simSchedules) {
			next <- seed
			played++
		}
	}
	for i := range *simSchedules {
		if failed.Load() && played >= 200 {
			break // a bug is found: report it without playing every schedule
		}
		next <- uint64(i) + 1
		played++
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
	t.Logf("%d schedules", played)
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
