package rollout_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"regexp"
	"runtime"
	"slices"
	"strconv"
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

// errCrash is what every host call returns once the simulated process died.
var errCrash = errors.New("simulated crash")

// simHost wraps the fakes: after crashAfter more successful status writes
// the process dies, and every host call fails until the next restart. It
// counts the installer calls of a sync.
type simHost struct {
	*fake.RolloutCluster
	store      *fake.RolloutStatusStore
	crashAfter int // -1: no crash pending
	dead       bool
	acted      int                 // EnsureInstaller and DeleteInstaller calls
	refused    []rollout.Installer // the creates the host refused, not yet in the ledger
	shown      map[string]bool     // the installer pods a host call showed the engine
}

func (h *simHost) GetInstaller(ctx context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	if h.dead {
		return rollout.InstallerState{}, errCrash
	}
	st, err := h.RolloutCluster.GetInstaller(ctx, inst)
	if err == nil && st.Phase != rollout.InstallerNotFound {
		h.shown[inst.Name] = true
	}
	return st, err
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
	h.acted++
	err := h.RolloutCluster.EnsureInstaller(ctx, inst)
	if err != nil {
		h.refused = append(h.refused, inst)
	}
	return err
}

func (h *simHost) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	if h.dead {
		return errCrash
	}
	h.acted++
	return h.RolloutCluster.DeleteInstaller(ctx, inst)
}

// simGate is a gate that denies the nodes in denied and records what it
// admitted during a sync.
type simGate struct {
	denied   map[string]bool
	admitted map[string]bool // installer names
}

func (g *simGate) Admit(_ context.Context, d rollout.Disruption) error {
	if g.denied[d.Installer.Node] {
		return fmt.Errorf("quorum would be lost without %s", d.Installer.Node)
	}
	if g.admitted == nil {
		g.admitted = map[string]bool{}
	}
	g.admitted[d.Installer.Name] = true
	return nil
}

// machine is one machine behind a node name.
type machine struct{ node, uid string }

// simFailure is an attempt the world saw fail: when (in forward time) and
// the shortest wait the policy allows before it is tried again.
type simFailure struct {
	at       time.Duration
	wait     time.Duration
	fallback bool
}

// nodeRev is a revision on a node.
type nodeRev struct {
	node string
	rev  int32
}

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
	cfg := rollout.Config{Status: r.host, Installers: r.host, Operands: r.host, Nodes: r.host,
		Clock: r.clk, Policy: r.policy, Jitter: r.rng.Float64, OnDecision: func(d rollout.Decision) { r.decided = d }}
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
	r := &simRun{seed: seed, rng: rng, clk: clk, host: &simHost{RolloutCluster: cluster, store: store, crashAfter: -1, shown: map[string]bool{}},
		maxReady: map[machine]int32{}, lastCreated: map[string]string{}, failures: map[nodeRev]simFailure{}, installed: map[string]int32{}, podMachine: map[string]string{}, lateInstall: map[string]int32{}, reported: map[*rollout.OperandFallback]bool{},
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

// fault injects one fault at random.
func (r *simRun) fault() {
	c, rng := r.host.RolloutCluster, r.rng
	nodes := c.Nodes
	pick := func() string { return nodes[rng.IntN(len(nodes))] }
	switch k := rng.IntN(48); {
	case k < 4:
		n := pick()
		away := !c.Unreachable[n]
		c.SetUnreachable(n, away)
		r.logf("fault: %s unreachable=%t", n, away)
	case k < 9:
		n := pick()
		outcome := []fake.InstallerOutcome{fake.InstallerFails, fake.InstallerOOMKilled, fake.InstallerHangs, fake.InstallerDisappears}[rng.IntN(4)]
		r.scriptInstaller(n, c.Attempts[n], outcome)
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
		if op, ok := c.Operands[n]; ok {
			op.Phase, op.Message = rollout.OperandFailed, "crashed"
			c.SetOperand(n, op)
			r.logf("fault: operand on %s crashed", n)
		}
	case k < 16:
		n := pick()
		if c.OperandHangs == nil {
			c.OperandHangs = map[string]map[int32]bool{}
		}
		latest := r.host.store.Status.LatestAvailableRevision
		c.OperandHangs[n] = map[int32]bool{latest: true}
		r.logf("fault: operand of revision %d on %s stays not ready", latest, n)
		if r.seed%5 >= 3 {
			// The install after the next (the last good revision's once
			// the engine falls back, or the revision its leader runs)
			// fails too: with either backoff the longer, a failure in
			// fallback keeps both.
			r.scriptInstaller(n, c.Attempts[n]+1, fake.InstallerFails)
			r.logf("fault: installer %d on %s Fails", c.Attempts[n]+2, n)
		}
	case k < 18:
		r.host.store.Conflicts = 1 + rng.IntN(5)
		r.logf("fault: %d write conflicts", r.host.store.Conflicts)
	case k < 21:
		r.host.crashAfter = rng.IntN(3)
		r.logf("fault: crash after %d more writes", r.host.crashAfter)
	case k < 23:
		back := time.Duration(1+rng.IntN(3600)) * time.Second
		r.clk.SetTime(r.clk.Now().Add(-back))
		r.logf("fault: clock stepped back %v", back)
	case k < 24:
		fwd := time.Duration(1+rng.IntN(3600)) * time.Second
		r.advance(fwd)
		r.logf("fault: clock stepped forward %v", fwd)
	case k < 27:
		if latest := r.host.store.Status.LatestAvailableRevision; latest < simMaxLatest {
			r.host.store.SetLatest(latest + 1)
			r.logf("fault: revision %d arrives", latest+1)
		}
	case k < 28:
		name := fmt.Sprintf("n%d", r.nodeSeq)
		r.nodeSeq++
		c.AddNode(name)
		if c.UIDs != nil {
			c.UIDs[name] = name + "-machine-0"
		}
		if rng.IntN(2) == 0 { // a machine that comes with an operand of its own
			rev := 1 + rng.Int32N(r.host.store.Status.LatestAvailableRevision)
			c.SetOperand(name, rollout.OperandState{Phase: rollout.OperandReady, Revision: rev, ReadySince: r.clk.Now()})
			c.LastKnownGood[name] = rev
			r.logf("fault: node %s added, running revision %d", name, rev)
		} else {
			r.logf("fault: node %s added", name)
		}
	case k < 29:
		if len(nodes) > 2 {
			n := pick()
			c.RemoveNode(n)
			r.logf("fault: node %s removed", n)
		}
	case k < 32:
		if c.UIDs != nil {
			n := pick()
			c.ReplaceNode(n)
			for k := range r.failures {
				if k.node == n {
					delete(r.failures, k)
				}
			}
			delete(r.installed, n)
			r.logf("fault: node %s replaced by machine %s", n, c.UIDs[n])
		}
	case k < 35:
		// A lost static pod manifest: only an operand that runs ready on a
		// node not installing, since nothing else would ever start one.
		n := pick()
		st, _ := r.host.store.Status.Node(n)
		if op := c.Operand(n); op.Phase == rollout.OperandReady && !st.InTransition() {
			c.RemoveOperand(n)
			r.logf("fault: operand on %s lost", n)
		}
	case k < 40:
		if r.gate != nil {
			n := pick()
			r.gate.denied[n] = !r.gate.denied[n]
			r.logf("fault: gate denies %s=%t", n, r.gate.denied[n])
		}
	}
}

// quiesce stops every fault: nodes reachable, scripts and errors gone, hung
// installers and operands move on, crashed operands restarted by the kubelet,
// the gate admits every node.
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
	if r.gate != nil {
		r.gate.denied = map[string]bool{}
	}
	r.host.store.Conflicts = 0
	r.host.crashAfter, r.host.dead = -1, false
	r.quiet = true
	r.logf("faults stop")
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
	for _, inst := range r.host.refused {
		r.failed(inst.Node, inst.Revision, r.minRetry)
	}
	r.host.refused = r.host.refused[:0]
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

// checkNoChurn: once a sync's own actions have been seen (a few more syncs
// at the same time, as long as the last one acted), a sync a second later,
// in a world that did not change, writes nothing, unless the previous sync
// asked to look again within that second.
func (r *simRun) checkNoChurn(ctx context.Context, res converge.Result, idle bool) error {
	if !idle {
		var err error
		if res, idle, err = r.sync(ctx); err != nil {
			return err
		}
	}
	if !idle || (res.RequeueAfter > 0 && res.RequeueAfter <= time.Second) || r.host.crashAfter >= 0 || r.host.store.Conflicts > 0 {
		return nil
	}
	writes := r.host.store.WriteCount()
	r.advance(time.Second)
	if _, _, err := r.sync(ctx); err != nil {
		return err
	}
	if w := r.host.store.WriteCount() - writes; w > 0 {
		before, _ := json.Marshal(r.host.store.Writes[writes-1])
		after, _ := json.Marshal(r.host.store.Writes[writes])
		return fmt.Errorf("a sync one second after a quiet one, in a world that did not change, wrote the status %d times:\n%s\n%s", w, before, after)
	}
	return nil
}

// decision is what Decide makes of the persisted status and the world now,
// for a step log that needs more than describe.
func (r *simRun) decision() string {
	c := r.host.RolloutCluster
	obs := rollout.Observation{}
	st := r.host.store.Current()
	for _, n := range c.Nodes {
		o := rollout.NodeObservation{UID: c.UIDs[n], Operand: c.Operand(n), Unreachable: c.Unreachable[n]}
		if o.Operand.Phase == 0 && o.Operand.Revision == 0 {
			o.Operand = rollout.OperandState{}
		}
		if ns, ok := st.Node(n); ok && ns.InTransition() {
			o.Installer, _ = c.GetInstaller(context.Background(), rollout.Installer{Name: rollout.InstallerName(ns), Node: n, Revision: ns.TargetRevision})
		}
		obs[n] = o
	}
	d, err := rollout.Decide(rollout.Input{Status: st, Observation: obs, Policy: r.policy, Now: r.clk.Now()})
	if err != nil {
		return err.Error()
	}
	return strings.ReplaceAll(d.String(), "\n", " / ")
}

// describe renders the status and the world in one line, for the step log.
func (r *simRun) describe() string {
	var b strings.Builder
	st := r.host.store.Status
	for _, n := range st.NodeStatuses {
		fmt.Fprintf(&b, "%s %d→%d", n.NodeName, n.CurrentRevision, n.TargetRevision)
		if n.InstallerOrderedTime != nil {
			b.WriteString(" ordered")
		}
		if n.InstalledTime != nil {
			b.WriteString(" installed")
		}
		if n.LastFailedRevision != 0 {
			fmt.Fprintf(&b, " failed %d×%d+%d %s", n.LastFailedRevision, n.LastFailedCount, n.LastFallbackCount, n.LastFailedReason)
		}
		if n.RegressedRevision != 0 || n.OperandMissing {
			fmt.Fprintf(&b, " regressed %d missing %t", n.RegressedRevision, n.OperandMissing)
		}
		b.WriteString("; ")
	}
	fmt.Fprintf(&b, "to delete %v", st.InstallersToDelete)
	if st.HeldSince != nil {
		fmt.Fprintf(&b, " held since %s", st.HeldSince.Sub(t0))
	}
	for _, c := range st.Conditions {
		if c.Type == conditions.TypeDegraded && c.Status == metav1.ConditionTrue {
			fmt.Fprintf(&b, " Degraded %s", c.Reason)
		}
	}
	b.WriteString(" | world:")
	c := r.host.RolloutCluster
	for _, n := range c.Nodes {
		op, ok := c.Operands[n]
		fmt.Fprintf(&b, " %s(%s", n, c.UIDs[n])
		if ok {
			fmt.Fprintf(&b, " %s@%d", op.Phase, op.Revision)
			if op.Fallback != nil {
				fmt.Fprintf(&b, " fallback-for %d", op.Fallback.ForRevision)
			}
		}
		if c.Unreachable[n] {
			b.WriteString(" unreachable")
		}
		b.WriteString(")")
	}
	names := make([]string, 0, len(c.Pods))
	for name := range c.Pods {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, " %s:%s", name, c.Pods[name].State.Phase)
	}
	return b.String()
}

// simSnapshot is what the world ran at one moment.
type simSnapshot struct {
	operands    map[string]rollout.OperandState
	unreachable map[string]bool
	pods        map[string]simPod
	livePods    map[string]int // by node
}

// simPod is what a snapshot keeps of an installer pod.
type simPod struct {
	node    string
	rev     int32
	phase   rollout.InstallerPhase
	outcome fake.InstallerOutcome
}

func (p simPod) live() bool {
	return p.phase == rollout.InstallerPending || p.phase == rollout.InstallerRunning
}

// snapshot records the world into s, reusing its maps.
func (r *simRun) snapshot(s *simSnapshot) simSnapshot {
	c := r.host.RolloutCluster
	if s.operands == nil {
		*s = simSnapshot{operands: map[string]rollout.OperandState{}, unreachable: map[string]bool{}, pods: map[string]simPod{}, livePods: map[string]int{}}
	}
	clear(s.operands)
	clear(s.unreachable)
	clear(s.pods)
	clear(s.livePods)
	for n, op := range c.Operands {
		s.operands[n] = op
	}
	for n, u := range c.Unreachable {
		s.unreachable[n] = u
	}
	for name, p := range c.Pods {
		sp := simPod{node: p.Installer.Node, rev: p.Installer.Revision, phase: p.State.Phase, outcome: p.Script.Outcome}
		s.pods[name] = sp
		if sp.live() {
			s.livePods[sp.node]++
		}
	}
	return *s
}

// down reports whether a node is unavailable in the world: unreachable, its
// operand not ready, or an installer pod of it can still run.
func (s simSnapshot) down(node string) bool {
	return s.unreachable[node] || s.operands[node].Phase != rollout.OperandReady || s.livePods[node] > 0
}

// converged reports whether every node of the world runs the latest
// revision or a newer one, and none a fallback.
func (r *simRun) converged(s simSnapshot, latest int32) bool {
	for _, n := range r.host.Nodes {
		op, ok := s.operands[n]
		if !ok || op.Revision < latest || op.Fallback != nil {
			return false
		}
	}
	return true
}

// moving reports whether the kubelet of a reachable node still has work: an
// installer pod that can still run, an operand starting, or an installer
// that succeeded whose operand is not in place yet.
func (r *simRun) moving(s simSnapshot) bool {
	for _, n := range r.host.Nodes {
		if s.unreachable[n] {
			continue
		}
		op, found := s.operands[n]
		if s.livePods[n] > 0 || op.Phase == rollout.OperandPending {
			return true
		}
		if p, ok := s.pods[r.lastCreated[n]]; ok && p.phase == rollout.InstallerSucceeded && (!found || op.Revision != p.rev) {
			return true
		}
	}
	return false
}

// checkSync verifies the invariants after one sync: against what the world
// runs, never through the engine's own helpers.
func (r *simRun) checkSync(before, after simSnapshot, created []rollout.Installer, res converge.Result, ok bool) error {
	st := r.host.store.Status // the store replaces, never mutates, what it holds
	if err := st.Validate(); err != nil {
		return fmt.Errorf("persisted status is invalid: %w", err)
	}
	for _, c := range st.Conditions {
		if err := conditions.Validate(c); err != nil {
			return fmt.Errorf("persisted condition is invalid: %w", err)
		}
	}
	deleting := map[string]bool{}
	for _, inst := range st.InstallersToDelete {
		deleting[inst.Name] = true
	}

	// 1. Budget: taking a healthy node down never makes more nodes
	// unavailable than MaxUnavailable.
	started := ""
	for _, inst := range created {
		if !before.down(inst.Node) {
			started = inst.Node
		}
	}
	if started != "" {
		down := 0
		for _, n := range r.host.Nodes {
			if after.down(n) {
				down++
			}
		}
		if down > r.budget {
			return fmt.Errorf("started healthy node %s: %d nodes are unavailable after it, maxUnavailable %d", started, down, r.budget)
		}
	}

	// 3. No leftover: every live installer pod is the one its node's
	// decision wants, or one the decision wants gone.
	for name, p := range after.pods {
		if !p.live() || deleting[name] {
			continue
		}
		n, found := st.Node(p.node)
		if !found || n.TargetRevision != p.rev || r.lastCreated[p.node] != name {
			return fmt.Errorf("installer %s (revision %d on %s) can still run, but node %s targets revision %d and it is not recorded for deletion",
				name, p.rev, p.node, p.node, n.TargetRevision)
		}
	}

	for _, inst := range created {
		n, _ := st.Node(inst.Node)
		if n.TargetRevision != inst.Revision || deleting[inst.Name] {
			return fmt.Errorf("created installer %s, but node %s targets %d", inst.Name, inst.Node, n.TargetRevision)
		}
		// 4. Backoff: an attempt the world saw fail is not tried again
		// before the policy's shortest backoff (less the second that
		// persisted times are truncated to).
		if f, ok := r.failures[nodeRev{inst.Node, inst.Revision}]; ok && r.fwd-f.at < f.wait-time.Second {
			return fmt.Errorf("retried revision %d on %s %v after the world saw it fail, the backoff is at least %v", inst.Revision, inst.Node, r.fwd-f.at, f.wait)
		}
		// A node in fallback whose install of its last good revision
		// failed since retries the revision it fell back from no sooner
		// than the installer backoff of that failure either.
		if f, ok := r.failures[nodeRev{inst.Node, inst.Revision}]; ok && f.fallback {
			good := r.host.LastKnownGood[inst.Node]
			for k, g := range r.failures {
				if k.node == inst.Node && k.rev == good && k.rev < inst.Revision && !g.fallback && g.at >= f.at && r.fwd-g.at < g.wait-time.Second {
					return fmt.Errorf("retried revision %d on %s %v after installing revision %d failed, the installer backoff is at least %v",
						inst.Revision, inst.Node, r.fwd-g.at, k.rev, g.wait)
				}
			}
		}
		f, fellBack := r.failures[nodeRev{inst.Node, inst.Revision}]
		fellBack = fellBack && f.fallback
		for k := range r.failures {
			if k.node == inst.Node && inst.Revision >= k.rev {
				delete(r.failures, k) // the attempt after the failure, or a newer revision
			}
		}
		// Fallback: no node that is up starts a revision another node's
		// startup monitor fell back from, unless it fell back from it too
		// (one of them retries it first).
		if own := before.operands[inst.Node].Fallback; !before.down(inst.Node) && !fellBack && (own == nil || own.ForRevision != inst.Revision) {
			for _, m := range r.host.Nodes {
				if op := before.operands[m]; m != inst.Node && op.Fallback != nil && op.Fallback.ForRevision == inst.Revision {
					return fmt.Errorf("started %s on %s, which is up, while %s runs a fallback from revision %d", inst.Name, inst.Node, m, inst.Revision)
				}
			}
		}
		// The gate admits every start: a node not installing before.
		if prev, ok := r.prev.Node(inst.Node); r.gate != nil && (!ok || !prev.InTransition()) && !r.gate.admitted[inst.Name] {
			return fmt.Errorf("started %s on %s without the gate's admission", inst.Name, inst.Node)
		}
	}
	if err := r.checkEvents(before); err != nil {
		return err
	}
	if !ok {
		return nil
	}

	if err := checkHolds(st, r.decided); err != nil {
		return err
	}

	// 5. Honesty: conditions agree with the world they were decided from.
	latest := st.LatestAvailableRevision
	if conditions.IsFalse(st.Conditions, conditions.TypeProgressing) && !r.converged(before, latest) {
		return fmt.Errorf("progressing is False, but the world does not run revision %d everywhere", latest)
	}
	now := r.clk.Now()
	deadline := r.deadline
	r.deadline = time.Time{}
	if res.RequeueAfter > 0 {
		r.deadline = now.Add(res.RequeueAfter)
	}
	world := r.fingerprint(before, latest)
	changed := world != r.lastWorld
	r.lastWorld = world
	switch {
	case r.converged(before, latest) || r.moving(after) || changed:
		r.stuckSince = nil
	case r.stuckSince == nil || r.stuckSince.After(now):
		// The hold starts once the engine had its chance: at a sync past
		// the time it asked to look again.
		if deadline.IsZero() || !now.Before(deadline) {
			r.stuckSince = &now
		}
	case now.Sub(*r.stuckSince) >= r.holdAfter && !conditions.IsTrue(st.Conditions, conditions.TypeDegraded):
		return fmt.Errorf("nothing has moved towards revision %d for %v, longer than holdDegradedAfter %v, and Degraded is not True",
			latest, now.Sub(*r.stuckSince), r.holdAfter)
	}
	return nil
}

// goDuration matches a Go duration ("15s", "1m30s", "18.5s") in a text.
var goDuration = regexp.MustCompile(`(^|[^\w.-])\d+(\.\d+)?(ns|us|µs|ms|s|m|h)(\d|\b)`)

// checkHolds: (8) the persisted holds are those the decision rendered, as
// a status keeps them (sorted, each once, at most converge.MaxHolds), each
// of a reason rollout.HoldReasons lists, with no duration in its message,
// and Progressing says each of them.
func checkHolds(st rollout.Status, d rollout.Decision) error {
	if want := converge.SortHolds(slices.Clone(d.Holds)); !slices.Equal(st.Holds, want) {
		return fmt.Errorf("persisted holds %+v, but the decision rendered %+v", st.Holds, want)
	}
	if len(st.Holds) > converge.MaxHolds {
		return fmt.Errorf("%d holds persisted, more than %d", len(st.Holds), converge.MaxHolds)
	}
	progressing, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
	for i, h := range st.Holds {
		switch {
		case i > 0 && converge.CompareHolds(st.Holds[i-1], h) >= 0:
			return fmt.Errorf("persisted holds not sorted, or one twice: %+v", st.Holds)
		case !slices.Contains(rollout.HoldReasons(), h.Reason):
			return fmt.Errorf("hold %+v has a reason rollout.HoldReasons does not list", h)
		case goDuration.MatchString(h.Message):
			return fmt.Errorf("hold %+v has a duration in its message", h)
		case progressing.Status != metav1.ConditionTrue || !strings.Contains(progressing.Message, h.Message):
			return fmt.Errorf("hold %+v is not in Progressing: %s %q", h, progressing.Status, progressing.Message)
		}
	}
	return nil
}

// fingerprint renders what a sync sees of the world: a sync that sees the
// same world as the one before it saw a world in which nothing moved.
func (r *simRun) fingerprint(s simSnapshot, latest int32) string {
	b := r.fp[:0]
	b = strconv.AppendInt(b, int64(latest), 10)
	for _, n := range r.host.Nodes {
		op := s.operands[n]
		b = append(b, '|')
		b = append(b, n...)
		b = append(b, ' ')
		b = append(b, r.host.UIDs[n]...)
		b = strconv.AppendBool(append(b, ' '), s.unreachable[n])
		b = strconv.AppendInt(append(b, ' '), int64(op.Phase), 10)
		b = strconv.AppendInt(append(b, '/'), int64(op.Revision), 10)
		b = strconv.AppendBool(append(b, ' '), op.Fallback != nil)
		b = strconv.AppendInt(append(b, ' '), int64(s.livePods[n]), 10)
	}
	r.fp = b
	return string(b)
}

// checkEvents checks the events of the writes since the last check: a start
// says the revision the node's operand ran, and every transition persisted
// is reported by exactly one event.
func (r *simRun) checkEvents(before simSnapshot) error {
	for _, e := range r.events {
		var node string
		var from, to int32
		if e.Reason != rollout.ReasonNodeTargetRevisionChanged || !strings.Contains(e.Message, "because starting") && !strings.Contains(e.Message, "because retrying") {
			continue
		}
		if _, err := fmt.Sscanf(e.Message, "Updating node %q from revision %d to %d", &node, &from, &to); err != nil {
			return fmt.Errorf("event %q: %v", e.Message, err)
		}
		if op, ok := before.operands[node]; ok && op.Phase == rollout.OperandReady && op.Fallback == nil && op.Revision != from {
			return fmt.Errorf("event %q, but the operand ran revision %d", e.Message, op.Revision)
		}
	}

	// A fallback the startup monitor made is reported once: an event for a
	// fallback pod already reported, of a node the status kept since, is
	// a second fallback that did not happen.
	for _, e := range r.events {
		var node string
		if e.Reason != rollout.ReasonOperandFailedFallback || !strings.Contains(e.Message, "fell back from revision") {
			continue
		}
		if _, err := fmt.Sscanf(e.Message, "Node %q fell back", &node); err != nil {
			return fmt.Errorf("event %q: %v", e.Message, err)
		}
		pod := before.operands[node].Fallback
		if pod == nil {
			return fmt.Errorf("event %q, but node %s runs no fallback", e.Message, node)
		}
		if _, kept := r.prev.Node(node); kept && r.reported[pod] {
			return fmt.Errorf("event %q, but that fallback was reported before", e.Message)
		}
		r.reported[pod] = true
	}

	writes := r.host.store.Writes
	prev := r.prev
	var want [6]int
	for _, w := range writes[r.written:] {
		for _, n := range w.NodeStatuses {
			old, ok := prev.Node(n.NodeName)
			if !ok || (old.NodeUID != "" && old.NodeUID != n.NodeUID) {
				// A node that joins, or a new machine, starts at the
				// revision it runs, with no history.
				old = rollout.NodeStatus{NodeName: n.NodeName, NodeUID: n.NodeUID, CurrentRevision: n.CurrentRevision}
			}
			fellBack := n.LastFailedReason == rollout.ReasonOperandFailedFallback &&
				(n.LastFallbackCount != old.LastFallbackCount || n.LastFailedRevision != old.LastFailedRevision)
			failedNow := n.LastFailedTime != nil && !fellBack && (old.LastFailedTime == nil || n.LastFailedCount != old.LastFailedCount || n.LastFailedRevision != old.LastFailedRevision)
			switch {
			case fellBack:
				want[0]++
				r.failed(n.NodeName, n.LastFailedRevision, r.minFallback)
			case n.CurrentRevision > old.CurrentRevision:
				want[1]++
			}
			if n.InTransition() && (!old.InTransition() || n.TargetRevision != old.TargetRevision) && !(fellBack && n.TargetRevision == n.CurrentRevision) {
				want[2]++
			}
			if failedNow {
				want[3]++
			}
			if n.RegressedRevision != 0 && n.RegressedRevision != old.RegressedRevision {
				want[4]++
			}
			if n.OperandMissing && !old.OperandMissing {
				want[5]++
			}
		}
		prev = w
	}
	r.written, r.prev = len(writes), r.host.store.Status
	var got [6]int
	for _, e := range r.events {
		switch e.Reason {
		case rollout.ReasonOperandFailedFallback:
			got[0]++
		case rollout.ReasonNodeCurrentRevisionChanged:
			got[1]++
		case rollout.ReasonNodeTargetRevisionChanged:
			got[2]++
		case rollout.ReasonInstallerPodFailed, rollout.ReasonInstallerPodDisappeared, rollout.ReasonInstallerCreateFailed,
			rollout.ReasonOperandFailed, rollout.ReasonOperandNotReady:
			got[3]++
		case rollout.ReasonNodeRevisionRegressed:
			got[4]++
		case rollout.ReasonNodeOperandMissing:
			got[5]++
		}
	}
	r.events = nil
	if got != want {
		return fmt.Errorf("events do not match the persisted transitions (fallback, current, target, failure, regressed, missing): %v events for %v", got, want)
	}
	return nil
}

// failed records a failed attempt of rev on node: the first since the last
// attempt counts (the engine records a failure once), unless a fallback
// follows another failure: the retry then waits the fallback backoff from
// the fallback.
func (r *simRun) failed(node string, rev int32, wait time.Duration) {
	k := nodeRev{node, rev}
	fallback := wait == r.minFallback
	if f, ok := r.failures[k]; ok && (f.fallback || !fallback) {
		return
	}
	r.failures[k] = simFailure{at: r.fwd, wait: wait, fallback: fallback}
}

// checkTick verifies what one kubelet tick did: no installer that ran took
// a machine below a revision it ran ready (unless a fallback the status
// records, or one the rollout decided must go), and records the failures the
// world saw and what each machine ran.
func (r *simRun) checkTick(before simSnapshot) error {
	c := r.host.RolloutCluster
	st := r.host.store.Status
	for name, was := range before.pods {
		p, exists := c.Pods[name]
		node := was.node
		m := machine{node, c.UIDs[node]}
		if r.podMachine[name] != m.uid {
			continue // created for the machine's predecessor: not its history
		}
		// An installer the engine had already retired (timed out, or
		// superseded) that fails later is no attempt of the node failing.
		retired := slices.ContainsFunc(st.InstallersToDelete, func(i rollout.Installer) bool { return i.Name == name })
		switch {
		case !exists && was.phase == rollout.InstallerPending && was.outcome == fake.InstallerDisappears && !retired && r.host.shown[name]:
			r.failed(node, was.rev, r.minRetry)
		case !exists:
		case was.phase == rollout.InstallerRunning && p.State.Phase == rollout.InstallerFailed && !retired:
			r.failed(node, was.rev, r.minRetry)
		case was.phase == rollout.InstallerRunning && p.State.Phase == rollout.InstallerSucceeded:
			r.installed[node] = was.rev
			if retired {
				r.lateInstall[node] = was.rev
			}
			// 2. No downgrade.
			if rev := was.rev; rev < r.maxReady[m] {
				n, _ := st.Node(node)
				fallback := n.TargetRevision == rev && n.CurrentRevision == rev && n.LastFailedReason == rollout.ReasonOperandFailedFallback
				if !fallback && !retired {
					return fmt.Errorf("installer %s installed revision %d on %s, which ran revision %d already", name, rev, node, r.maxReady[m])
				}
			}
		}
	}
	for node, op := range c.Operands {
		m := machine{node, c.UIDs[node]}
		was, found := before.operands[node]
		switch {
		case op.Fallback != nil && (!found || was.Fallback == nil) && r.lateInstall[node] != op.Fallback.ForRevision:
			// The monitor's fallback, unless the engine's own fallback from
			// the same revision came first; one from what an installer the
			// engine had retired installed late is no attempt of the node.
			r.failed(node, op.Fallback.ForRevision, r.minFallback)
		case op.Phase == rollout.OperandReady && op.Fallback == nil:
			r.maxReady[m] = max(r.maxReady[m], op.Revision)
			delete(r.failures, nodeRev{node, op.Revision})
		case op.Phase == rollout.OperandFailed && found && was.Phase == rollout.OperandPending:
			if p, ok := c.Pods[r.lastCreated[node]]; ok && p.Installer.Revision == op.Revision && p.State.Phase == rollout.InstallerSucceeded {
				r.failed(node, op.Revision, r.minRetry)
			}
		}
	}
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

// outage keeps one node unreachable, everything else quiet, while a new
// revision arrives, for longer than HoldDegradedAfter: the hold must turn
// Degraded (checked after every sync), and the node then comes back.
func (r *simRun) outage(ctx context.Context) error {
	c := r.host.RolloutCluster
	n := c.Nodes[r.rng.IntN(len(c.Nodes))]
	if latest := r.host.store.Status.LatestAvailableRevision; latest < simMaxLatest {
		r.host.store.SetLatest(latest + 1)
	}
	c.SetUnreachable(n, true)
	r.logf("outage: %s unreachable while revision %d rolls out", n, r.host.store.Status.LatestAvailableRevision)
	for end := r.fwd + r.holdAfter + 15*time.Minute; r.fwd < end; {
		if err := r.step(ctx); err != nil {
			return err
		}
	}
	c.SetUnreachable(n, false)
	r.logf("outage over: %s is back", n)
	return nil
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
