package payload_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/converge-dev/converge"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/payload"
)

var (
	simSeed      = flag.Uint64("seed", 0, "replay the payload simulation schedule of this seed (0: run -schedules schedules)")
	simSchedules = flag.Int("schedules", 2000, "number of payload simulation schedules")
)

// The simulated payloads: three releases of seven manifests over three run levels and
// two components, one of them removed, one depending on another.
var simReleases = []payload.Release{
	{Version: "1.0.0", Image: "registry.example/release@sha256:aaaa"},
	{Version: "1.1.0", Image: "registry.example/release@sha256:bbbb"},
	{Version: "1.2.0", Image: "registry.example/release@sha256:cccc"},
}

func simPayload(r payload.Release) *payload.Payload {
	p := &payload.Payload{Release: r, Manifests: []payload.Manifest{
		manifest("0000_10_a_00_ns.yaml", "Namespace", "", "a"),
		manifest("0000_10_b_00_ns.yaml", "Namespace", "", "b"),
		manifest("0000_20_a_00_cm.yaml", "ConfigMap", "a", "one"),
		manifest("0000_20_a_01_old.yaml", "ConfigMap", "a", "old"),
		manifest("0000_20_b_00_cm.yaml", "ConfigMap", "b", "one", "ConfigMap/a/one"),
		manifest("0000_30_a_00_cm.yaml", "ConfigMap", "a", "two"),
		manifest("0000_30_b_00_cm.yaml", "ConfigMap", "b", "two"),
	}}
	p.Manifests[3].Delete = true
	return p
}

func simLevel(file string) int {
	level, _, _ := payload.ParseRunLevel(file)
	return level
}

// simPolicy: pools of one, so that every schedule replays exactly; an apply timeout one
// nanosecond off the second, so that it never fires together with another timer.
var simPolicy = payload.Policy{
	Interval:            metav1.Duration{Duration: time.Minute},
	ApplyTimeout:        metav1.Duration{Duration: 5*time.Minute + time.Nanosecond},
	ManifestAttempts:    1,
	Workers:             1,
	InitializingWorkers: 1,
	ReconcileWorkers:    1,
	ReadinessPoll:       metav1.Duration{Duration: 5 * time.Second},
	ReadinessTimeout:    metav1.Duration{Duration: 20 * time.Second},
}

// simEvent is the worker reaching the simulator: a host call waiting for its verdict,
// or a timer it is about to wait on.
type simEvent struct {
	kind    string // load, precondition, apply, delete, ready, result, timer
	ctx     context.Context
	release payload.Release
	state   payload.State
	file    string
	ref     string
	result  converge.Result
	timer   *simTimer
	reply   chan simVerdict
}

func (e *simEvent) applySide() bool {
	switch e.kind {
	case "load", "precondition", "apply", "delete", "ready":
		return true
	}
	return false
}

type simVerdict int

const (
	verdictOK simVerdict = iota
	verdictFail
	verdictReport
	verdictHang
	verdictPanic
	verdictGoexit
	verdictNotReady
)

// simTimer is a timer of the simulated clock.
type simTimer struct {
	clock.Timer
	due     time.Time
	stopped bool
	afterFn bool
	fired   chan struct{} // closed once the function of an AfterFunc has run
	sim     *sim
}

func (t *simTimer) Stop() bool {
	t.sim.mu.Lock()
	t.stopped = true
	t.sim.mu.Unlock()
	return t.Timer.Stop()
}

// simClock is a fake clock that tells the simulator about every timer the worker waits
// on (NewTimer) and keeps the apply timeouts (AfterFunc) in its model.
type simClock struct {
	*clocktesting.FakeClock
	sim *sim
}

func (c simClock) NewTimer(d time.Duration) clock.Timer {
	t := &simTimer{Timer: c.FakeClock.NewTimer(d), due: c.Now().Add(d), sim: c.sim}
	c.sim.track(t)
	c.sim.events <- &simEvent{kind: "timer", timer: t}
	return t
}

func (c simClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	fired := make(chan struct{})
	t := &simTimer{Timer: c.FakeClock.AfterFunc(d, func() { f(); close(fired) }), due: c.Now().Add(d), afterFn: true, fired: fired, sim: c.sim}
	c.sim.track(t)
	return t
}

// sim is one schedule.
type sim struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	clk    simClock
	events chan *simEvent
	log    []string
	faults bool

	mu     sync.Mutex
	timers []*simTimer

	cfg     payload.Config
	worker  *payload.Worker
	cancel  context.CancelFunc
	done    chan error
	desired payload.Release
	gen     int64

	// bp is where the worker waits: an event (a host call or a timer), nil while it runs.
	bp          *simEvent
	hanging     bool
	pollNext    bool // the next timer is a readiness poll
	wakePending bool
	expect      bool

	// The apply in progress: its release, what it completed.
	inApply      bool
	applyRelease payload.Release
	readySince   map[string]time.Time
	completed    map[string]bool
	last         payload.Status
	resumeBy     *payload.Status // the status a restart carries on from
	applies      int
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%s "+format, append([]any{s.clk.Now().Format("15:04:05.000000000")}, args...)...))
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("payload simulation, seed %d: %s\nreplay: go test ./payload -run 'TestSimPayload$' -seed %d -v\nsteps:\n%s",
		s.seed, fmt.Sprintf(format, args...), s.seed, strings.Join(s.log, "\n"))
}

func (s *sim) track(t *simTimer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timers = append(s.timers, t)
}

// nextDue returns the earliest due time of a timer not stopped and not fired.
func (s *sim) nextDue() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	var next time.Time
	found := false
	live := s.timers[:0]
	for _, t := range s.timers {
		if t.stopped || !t.due.After(now) {
			continue
		}
		live = append(live, t)
		if !found || t.due.Before(next) {
			next, found = t.due, true
		}
	}
	s.timers = live
	return next, found
}

func (s *sim) hooks() payload.Config {
	call := func(e *simEvent) simVerdict {
		e.reply = make(chan simVerdict)
		s.events <- e
		return <-e.reply
	}
	var jitter = rand.New(rand.NewPCG(s.seed, 7))
	return payload.Config{
		Loader: payload.LoaderFunc(func(ctx context.Context, r payload.Release) (*payload.Payload, error) {
			if call(&simEvent{kind: "load", ctx: ctx, release: r}) == verdictFail {
				return nil, errors.New("registry unavailable")
			}
			return simPayload(r), nil
		}),
		Preconditions: payload.PreconditionsFunc(func(ctx context.Context, _, to payload.Release) error {
			if call(&simEvent{kind: "precondition", ctx: ctx, release: to}) == verdictFail {
				return errors.New("not upgradeable")
			}
			return nil
		}),
		Applier: payload.ApplierFunc(func(ctx context.Context, m *payload.Manifest, state payload.State) error {
			return s.play(ctx, call(&simEvent{kind: "apply", ctx: ctx, release: s.applying(), state: state, file: m.File, ref: m.Ref()}))
		}),
		Deleter: payload.DeleterFunc(func(ctx context.Context, m *payload.Manifest) error {
			return s.play(ctx, call(&simEvent{kind: "delete", ctx: ctx, release: s.applying(), file: m.File, ref: m.Ref()}))
		}),
		Readiness: payload.ReadinessFunc(func(ctx context.Context, m *payload.Manifest) error {
			switch call(&simEvent{kind: "ready", ctx: ctx, release: s.applying(), file: m.File, ref: m.Ref()}) {
			case verdictNotReady:
				return errors.New("not ready")
			case verdictFail:
				return &payload.UpdateError{Reason: "Degraded", Message: m.Ref() + " is degraded", Effect: payload.EffectFail}
			}
			return nil
		}),
		OnResult: func(r converge.Result) { call(&simEvent{kind: "result", result: r}) },
		Clock:    s.clk,
		Policy:   simPolicy,
		Jitter:   jitter.Float64,
	}
}

// applying is the release of the apply in progress, as the worker's status says.
func (s *sim) applying() payload.Release { return s.worker.Status().Release }

// play acts out a verdict on a call of the applier or the deleter.
func (s *sim) play(ctx context.Context, v simVerdict) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch v {
	case verdictFail:
		return errors.New("apiserver refused")
	case verdictReport:
		return &payload.UpdateError{Reason: "Slow", Message: "slow", Effect: payload.EffectReport}
	case verdictHang:
		<-ctx.Done()
		return ctx.Err()
	case verdictPanic:
		panic("applier bug")
	case verdictGoexit:
		runtime.Goexit()
	}
	return nil
}

func newSim(t *testing.T, seed uint64) *sim {
	s := &sim{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), events: make(chan *simEvent), faults: true}
	s.clk = simClock{FakeClock: clocktesting.NewFakeClock(t0), sim: s}
	s.cfg = s.hooks()
	return s
}

// start runs a worker: the same one again, or a new one from the persisted status.
func (s *sim) start(w *payload.Worker) {
	s.worker = w
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(10)))
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- w.Start(ctx) }()
	s.bp, s.hanging, s.wakePending, s.expect, s.inApply = nil, false, false, true, false
}

// await receives the events the worker must send, until it waits.
func (s *sim) await() {
	s.t.Helper()
	for s.expect {
		var e *simEvent
		select {
		case e = <-s.events:
		case err := <-s.done:
			s.fail("the worker stopped by itself: %v", err)
		case <-time.After(time.Minute): // a deadlock detector, not a timing
			s.fail("the worker is stuck: no event after %s", s.describe())
		}
		s.receive(e)
	}
}

func (s *sim) describe() string {
	if s.bp == nil {
		return "nothing"
	}
	return fmt.Sprintf("%s %s %s", s.bp.kind, s.bp.ref, s.bp.release)
}

// receive records an event and checks the invariants it is subject to.
func (s *sim) receive(e *simEvent) {
	s.t.Helper()
	s.expect, s.bp = false, e
	switch e.kind {
	case "timer":
		if s.pollNext {
			s.pollNext = false
			s.logf("worker waits %s for a readiness poll", e.timer.due.Sub(s.clk.Now()))
			return
		}
		if s.wakePending {
			s.wakePending, s.expect = false, true // the loop takes the wake at once
			s.logf("worker would wait until %s, but a wake is pending", e.timer.due.Format("15:04:05"))
			return
		}
		s.logf("worker waits until %s", e.timer.due.Format("15:04:05.000000000"))
		return
	case "result":
		s.inApply = false
		s.logf("result: requeue %s, events %v", e.result.RequeueAfter, e.result.Events)
		return
	}
	if !s.inApply {
		s.inApply, s.completed, s.applyRelease, s.readySince = true, map[string]bool{}, e.release, map[string]time.Time{}
		s.applies++
	}
	if want := s.resumeBy; want != nil && e.kind == "apply" {
		s.resumeBy = nil
		state := want.State
		if state == "" {
			state = payload.StateInitializing
		}
		if want.Release.Same(s.desired) && e.state != state {
			s.fail("a restart from %s/%s applied as %s", want.Release, want.State, e.state)
		}
	}
	s.logf("%s %s %s %s (ctx done: %t)", e.kind, e.release, e.state, e.ref, e.ctx.Err() != nil)
	if _, seen := s.readySince[e.ref]; e.kind == "ready" && !seen {
		s.readySince[e.ref] = s.clk.Now()
	}
	if (e.kind == "apply" || e.kind == "delete") && e.ctx.Err() == nil && !e.release.Same(s.desired) {
		s.fail("%s of %s applied after the switch to %s", e.ref, e.release, s.desired)
	}
	if e.kind == "apply" && e.state == payload.StateUpdating && e.ctx.Err() == nil {
		for _, m := range simPayload(e.release).Manifests {
			if simLevel(m.File) < simLevel(e.file) && !s.completed[m.Ref()] {
				s.fail("updating applied %s before %s of a lower run level was done", e.ref, m.Ref())
			}
		}
	}
}

// reply answers the host call the worker waits on.
func (s *sim) reply(v simVerdict) {
	e := s.bp
	s.bp = nil
	s.logf("  -> %d", v)
	switch {
	case v == verdictHang && e.ctx.Err() == nil:
		s.hanging, s.bp = true, e
	case v == verdictNotReady:
		// The worker polls again unless the apply ended or the readiness timeout passed.
		s.pollNext = e.ctx.Err() == nil && s.clk.Now().Before(s.readySince[e.ref].Add(simPolicy.ReadinessTimeout.Duration))
		s.expect = true
	default:
		s.expect = true
	}
	if e.ctx != nil && e.ctx.Err() == nil {
		switch {
		case e.kind == "delete" && v == verdictOK:
			s.completed[e.ref] = true
		case e.kind == "ready" && v == verdictOK:
			s.completed[e.ref] = true
		case e.kind == "apply" && (v == verdictOK || v == verdictReport) && e.state == payload.StateReconciling:
			s.completed[e.ref] = true
		}
	}
	e.reply <- v
}

// update sets a desired release and accounts for what it wakes.
func (s *sim) update(r payload.Release) {
	s.gen++
	loopWaiting := s.bp != nil && s.bp.kind == "timer" && !s.inApply
	pollWaiting := s.bp != nil && s.bp.kind == "timer" && s.inApply
	cancels := s.inApply && !s.applyRelease.Same(r)
	s.logf("Update(%d, %s %s force=%t)", s.gen, r, r.Image, r.Force)
	s.desired = r
	s.resumeBy = nil
	s.worker.Update(s.gen, r)
	switch {
	case loopWaiting:
		s.expect, s.bp = true, nil // the loop wakes
		return
	case cancels && (s.hanging || pollWaiting):
		s.expect, s.bp, s.hanging = true, nil, false
	}
	s.wakePending = true // the generation changed: the loop decides again when it next waits
}

// step moves the clock and accounts for what it wakes.
func (s *sim) step() {
	next, ok := s.nextDue()
	if !ok {
		return
	}
	now := s.clk.Now()
	d := next.Sub(now)
	if whole := d.Truncate(time.Second); s.rng.IntN(3) == 0 && whole > 0 && whole < d {
		d = time.Duration(1+s.rng.Int64N(int64(whole/time.Second))) * time.Second // a step that fires nothing
	}
	at := now.Add(d)
	fires := func(t *simTimer) bool { return t != nil && !t.stopped && !t.due.After(at) }
	s.mu.Lock()
	bpFires := s.bp != nil && s.bp.kind == "timer" && fires(s.bp.timer)
	var timeouts []*simTimer
	for _, t := range s.timers {
		if t.afterFn && fires(t) {
			timeouts = append(timeouts, t)
		}
	}
	timeoutFires := len(timeouts) > 0
	s.mu.Unlock()
	s.logf("step %s", d)
	s.clk.Step(d)
	for _, t := range timeouts {
		<-t.fired // the apply's context is cancelled before the simulation goes on
	}
	switch {
	case s.bp != nil && s.bp.kind == "timer" && (bpFires || (s.inApply && timeoutFires)):
		s.expect, s.bp = true, nil
	case s.hanging && timeoutFires:
		s.expect, s.bp, s.hanging = true, nil, false
	}
}

// stop ends Start's context, answers what the worker still asks, and waits for Start.
func (s *sim) stop() {
	s.logf("stop")
	before := s.worker.Status()
	s.cancel()
	if s.bp != nil && s.bp.reply != nil && !s.hanging {
		s.bp.reply <- verdictOK
	}
	for {
		select {
		case e := <-s.events:
			s.logf("  while stopping: %s %s %v", e.kind, e.ref, e.result.Events)
			for _, ev := range e.result.Events {
				if ev.Type == converge.EventTypeWarning {
					s.fail("a stop emitted a warning: %v", ev)
				}
			}
			if e.reply != nil {
				e.reply <- verdictOK
			}
		case err := <-s.done:
			if err != nil {
				s.fail("Start: %v", err)
			}
			s.bp, s.hanging, s.expect = nil, false, false
			if after := s.worker.Status(); after.Release.Same(before.Release) && after.Failures > before.Failures {
				s.fail("a stop was counted as a failure: %+v", after.Failure)
			}
			return
		case <-time.After(time.Minute): // a deadlock detector, not a timing
			s.fail("the worker does not stop")
		}
	}
}

// checkStatus checks what holds after every step.
func (s *sim) checkStatus() {
	st := s.worker.Status()
	sameStint := len(st.History) > 0 && len(s.last.History) > 0 && st.History[0].StartedTime.Equal(&s.last.History[0].StartedTime) &&
		st.Release.Same(s.last.Release)
	if sameStint && st.Done < s.last.Done {
		s.fail("progress went backwards within %s: %d after %d", st.Release, st.Done, s.last.Done)
	}
	if st.Done > st.Total && st.Total > 0 {
		s.fail("done %d of %d", st.Done, st.Total)
	}
	s.last = st
}

func (s *sim) verdict(kind string) simVerdict {
	if !s.faults {
		return verdictOK
	}
	r := s.rng.IntN(100)
	switch kind {
	case "apply", "delete":
		switch {
		case r < 8:
			return verdictFail
		case r < 10:
			return verdictReport
		case r < 13:
			return verdictHang
		case r < 15:
			return verdictPanic
		case r < 17:
			return verdictGoexit
		}
	case "ready":
		switch {
		case r < 15:
			return verdictNotReady
		case r < 18:
			return verdictFail
		}
	case "load", "precondition":
		if r < 12 {
			return verdictFail
		}
	}
	return verdictOK
}

func (s *sim) pick() payload.Release {
	r := simReleases[s.rng.IntN(len(simReleases))]
	r.Force = s.rng.IntN(4) == 0
	if s.rng.IntN(5) == 0 { // the same release through a mirror
		r.Image = strings.Replace(r.Image, "registry.example", "mirror.example", 1)
	}
	return r
}

func (s *sim) run(steps int) {
	s.t.Helper()
	w, err := payload.NewWorker(s.cfg)
	if err != nil {
		s.fail("NewWorker: %v", err)
	}
	s.worker = w
	s.update(s.pick())
	s.start(w)
	for range steps {
		s.await()
		s.checkStatus()
		switch r := s.rng.IntN(100); {
		case s.bp != nil && s.bp.reply != nil && !s.hanging && r < 70:
			s.reply(s.verdict(s.bp.kind))
		case r < 80:
			s.step()
		case r < 90:
			// A burst of updates while the worker waits for a verdict; one otherwise, as
			// an update wakes a waiting worker.
			burst := 1
			if s.bp != nil && s.bp.reply != nil && !s.hanging {
				burst += s.rng.IntN(3)
			}
			for range burst {
				s.update(s.pick())
			}
		default:
			s.stop()
			s.restart()
		}
	}
	s.faults = false
	s.logf("faults stop")
	if s.hanging {
		s.stop()
		s.restart()
	}
	for i := 0; ; i++ {
		s.await()
		s.checkStatus()
		st := s.worker.Status()
		if st.State == payload.StateReconciling && st.Release.Same(s.desired) && st.Failure == nil && !st.Interrupted && st.Completed > 0 && !s.inApply {
			break
		}
		if i > 60 {
			s.fail("no convergence on %s within 60 steps after the faults stopped: %+v", s.desired, st)
		}
		if s.bp != nil && s.bp.reply != nil {
			s.reply(verdictOK)
		} else {
			s.step()
		}
	}
	s.stop()
}

// restart starts the same worker again, or a new one from the status it left.
func (s *sim) restart() {
	persisted := s.worker.Status()
	s.resumeBy = &persisted
	if s.rng.IntN(2) == 0 {
		s.logf("restart the same worker from %s/%s", persisted.Release, persisted.State)
		s.start(s.worker)
		return
	}
	s.logf("restart a new worker from %s/%s", persisted.Release, persisted.State)
	cfg := s.cfg
	cfg.Status = persisted
	w, err := payload.NewWorker(cfg)
	if err != nil {
		s.fail("NewWorker: %v", err)
	}
	if got := w.Status(); !statusEqual(got, persisted) {
		s.fail("a new worker does not start from the persisted status: %+v, want %+v", got, persisted)
	}
	s.worker = w
	w.Update(s.gen, s.desired)
	s.start(w)
}

func statusEqual(a, b payload.Status) bool { return reflect.DeepEqual(a, b) }

// TestSimPayload drives the Worker through seeded schedules of updates, loader,
// applier and readiness failures, hangs, panics and runtime.Goexit, stops and restarts
// (the same worker, or a new one from the persisted status) and clock steps, checking
// after every step that progress never goes backwards within a release, that updating
// applies in run-level order, that nothing of a replaced release is applied after the
// switch, that a restart carries on from the persisted status, and (every hundred
// schedules) that no goroutine is left behind; once the faults
// stop, the worker must reconcile the last desired release within 60 steps.
func TestSimPayload(t *testing.T) {
	seeds := make([]uint64, 0, *simSchedules)
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		for i := range *simSchedules {
			seeds = append(seeds, uint64(i+1))
		}
	}
	if testing.Short() {
		seeds = seeds[:min(len(seeds), 200)]
	}
	start := time.Now()
	applies := 0
	before := goleak.IgnoreCurrent()
	for i, seed := range seeds {
		s := newSim(t, seed)
		s.run(40)
		applies += s.applies
		if i%100 == 99 || i == len(seeds)-1 {
			if err := goleak.Find(before); err != nil {
				s.fail("goroutines left behind: %v", err)
			}
		}
	}
	t.Logf("%d schedules, %d applies, in %s", len(seeds), applies, time.Since(start).Round(time.Millisecond))
}
