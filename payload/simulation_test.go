package payload_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/payload"
)

var (
	simSeed      = flag.Uint64("seed", 0, "replay the payload simulation schedule of this seed (0: run -schedules schedules)")
	simSchedules = flag.Int("schedules", 1000, "number of payload simulation schedules")
)

// sim is one schedule: a world of objects, a store, clocks and host calls that wait
// until the simulator answers them, one at a time, in an order the seed drives, while
// the worker's goroutines run for real in a synctest bubble. After every answer the
// simulator waits until every goroutine of the bubble is blocked, and checks the
// invariants. The worker tells its status writer of a change only right before it
// blocks, so the writes too come in an order the schedule fixes, and a seed replays
// step for step, whatever GOMAXPROCS.
type sim struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	writes *rand.Rand // the outcomes of status writes
	jitter *rand.Rand
	clk    *simClock
	wall   *simWall // what the running worker's clock reads
	log    []string
	faults bool
	failed bool

	mu          sync.Mutex // guards what host goroutines touch: pending, stored, violations, liveEpoch, crashed
	pending     []*simCall
	stored      []byte // the status the store holds, as JSON
	violations  []string
	liveEpoch   int  // the worker whose status writes land; those of a crashed one are lost
	writeFaults bool // status writes fail at times, and the process may crash right after one
	crashed     bool // the process crashed right after a write: it is to be restarted

	objects map[string]string // what exists in the cluster: by ref, the digest of the release whose object it is

	worker      *payload.Worker
	epoch       int // of the last worker made
	workerEpoch int // of the worker running
	cancel      context.CancelFunc
	done        chan error
	desired     payload.Release // what the host wants
	gen         int64
	told        payload.Release // what the running worker was told, or resumed from its status

	pass     simPass
	due      simDue
	resumeBy *payload.Status // the status a restart carries on from
	last     payload.Status  // the worker's status after the last step
	stopping bool
	applies  int
}

// simPass is the apply in progress, as far as the world saw it: between the first
// host call after a decision and the next reported decision.
type simPass struct {
	started    bool
	release    string // simID of the release it applies
	version    string
	at         time.Time // when its first call came
	state      payload.State
	finished   map[string]bool
	startedRef map[string]bool
	noKind     map[string]bool
	deleted    []string
	readySince map[string]time.Time // when each object's readiness wait began
	// ledger holds what failed in the world during the pass: the refs of objects whose
	// calls failed, "the registry", "the preconditions".
	ledger   map[string]bool
	reported map[string]bool // the refs whose calls returned an error of EffectReport
}

// simDue is when the next pass of a release must come, in the world's time: no sooner
// than low (its interval or backoff), no later than high (its own length).
type simDue struct {
	release   string // simID; "" while nothing is due
	low, high time.Time
}

func (s *sim) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf("%s "+format, append([]any{s.clk.Now().Format("15:04:05.000000")}, args...)...))
}

// fail reports a violation with the command that replays it, and stops the schedule.
func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	if s.failed {
		return
	}
	s.failed = true
	s.t.Errorf("payload simulation, seed %d: %s\nreplay: go test ./payload -run 'TestSimPayload$' -seed %d -v\nsteps:\n%s",
		s.seed, fmt.Sprintf(format, args...), s.seed, strings.Join(s.log, "\n"))
	s.abandon()
	s.t.FailNow()
}

// abandon ends the worker after a failure: every call answered, until Start returns.
func (s *sim) abandon() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	for range 1000 {
		synctest.Wait()
		select {
		case <-s.done:
			return
		default:
		}
		s.mu.Lock()
		calls := slices.Clone(s.pending)
		s.pending = nil
		s.mu.Unlock()
		for _, c := range calls {
			c.reply <- verdictCancelled
		}
	}
}

// call is a host call: it waits for the simulator's verdict.
func (s *sim) call(c *simCall) simVerdict {
	c.reply = make(chan simVerdict)
	s.mu.Lock()
	s.pending = append(s.pending, c)
	s.mu.Unlock()
	return <-c.reply
}

func newSim(t *testing.T, seed uint64) *sim {
	s := &sim{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), writes: rand.New(rand.NewPCG(seed, 1)),
		jitter: rand.New(rand.NewPCG(seed, 2)), clk: newSimClock(t0), faults: true, writeFaults: true, objects: map[string]string{}}
	s.wall = newSimWall(s.clk, 0)
	for _, r := range simReleases {
		for _, o := range simObjectsOf(r.Version) {
			if o.delete && s.rng.IntN(2) == 0 { // some objects to remove exist, some never did
				s.objects[o.ref] = simID(r)
			}
		}
	}
	return s
}

// start runs a new worker from st, or the same one again (w), whose hooks are of the
// epoch it was made in. A new worker is told the desired release in its Config, as a
// host that reads its resource first does, or not: it then resumes st's release.
func (s *sim) start(w *payload.Worker, st payload.Status) {
	if w == nil {
		s.epoch++
		s.workerEpoch = s.epoch
		var made *payload.Worker
		cfg := s.config(s.epoch, &made, s.wall)
		cfg.Status = st
		s.told = st.Release
		if !s.desired.IsZero() && s.rng.IntN(4) > 0 {
			cfg.Desired, cfg.Generation = s.desired, s.gen
			s.told = s.desired
		}
		s.logf("a new worker (clock %s) from %s/%s %d/%d, told %s", s.wall.skew(), st.Release, st.State, st.Done, st.Total, cfg.Desired)
		var err error
		if made, err = payload.NewWorker(cfg); err != nil {
			s.fail("NewWorker: %v", err)
		}
		if got := made.Status(); !reflect.DeepEqual(got, st) {
			s.fail("a new worker does not start from the persisted status: %+v, want %+v", got, st)
		}
		w = made
	}
	s.mu.Lock()
	s.liveEpoch, s.crashed = s.workerEpoch, false
	s.mu.Unlock()
	s.worker = w
	s.due = s.dueFrom(w.Status(), s.told)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- w.Start(ctx) }()
	s.boundary()
	s.settle()
}

// boundary ends the pass in progress, as far as the simulator tracks it.
func (s *sim) boundary() {
	s.pass = simPass{finished: map[string]bool{}, startedRef: map[string]bool{}, noKind: map[string]bool{},
		readySince: map[string]time.Time{}, ledger: map[string]bool{}, reported: map[string]bool{}}
}

// update sets the desired release, as the host does. Another release is due at once;
// the same one, through a mirror or with another generation, when it was, or sooner
// if the worker's clock says it is due.
func (s *sim) update(r payload.Release) {
	s.gen++
	s.desired = r
	s.logf("Update(%d, %s %s force=%t)", s.gen, r, r.Image, r.Force)
	before := s.worker.Status()
	s.worker.Update(s.gen, r)
	switch {
	case simID(r) != simID(s.told):
		s.due, s.resumeBy = simDue{release: simID(r), low: s.clk.Now(), high: s.clk.Now()}, nil
	case s.pass.started:
	case s.due.release == "":
		s.due = s.dueFrom(before, r)
	default:
		if d := s.dueFrom(before, r); d.low.Before(s.due.low) {
			s.due.low = d.low
		}
	}
	s.told = r
	s.settle()
}

// settle waits until the bubble is idle and takes in what the worker asked: the calls
// whose context ended are answered as a call that honours its context answers,
// results are taken in, until nothing moves.
func (s *sim) settle() {
	for {
		synctest.Wait()
		s.mu.Lock()
		slices.SortFunc(s.pending, func(a, b *simCall) int { return strings.Compare(a.key(), b.key()) })
		var fresh []*simCall
		for _, c := range s.pending {
			if !c.seen {
				c.seen = true
				c.dead = c.epoch != s.liveEpoch
				fresh = append(fresh, c)
			}
		}
		s.mu.Unlock()
		for _, c := range fresh {
			s.arrive(c)
		}
		c := s.autoAnswer()
		if c == nil {
			return
		}
		if c.kind == "result" {
			s.answer(c, verdictOK)
		} else {
			s.answer(c, verdictCancelled)
		}
	}
}

// autoAnswer returns the call the world answers by itself: a result, a call of a
// crashed process, or a call whose context ended that does not hang.
func (s *sim) autoAnswer() *simCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.pending {
		if c.kind == "result" || c.dead || (!c.hung && c.ctx != nil && c.ctx.Err() != nil) {
			return c
		}
	}
	return nil
}

// stop ends Start's context; calls that hang are answered ok until Start returns.
// After a crash, the worker's last writes are lost and nothing it still writes lands.
func (s *sim) stop(crash bool) {
	s.logf("stop (crash: %t)", crash)
	if crash {
		s.mu.Lock()
		s.liveEpoch = 0
		s.mu.Unlock()
	}
	before := s.worker.Status()
	s.stopping = true
	s.cancel()
	for {
		s.settle()
		select {
		case err := <-s.done:
			s.stopping = false
			if err != nil {
				s.fail("Start: %v", err)
			}
			if after := s.worker.Status(); after.Release.Same(before.Release) && after.Failures > before.Failures {
				s.fail("a stop was counted as a failure: %+v", after.Failure)
			}
			s.checkGoroutines()
			return
		default:
		}
		s.mu.Lock()
		var hung *simCall
		if len(s.pending) > 0 {
			hung = s.pending[0]
		}
		s.mu.Unlock()
		if hung == nil {
			s.fail("the worker does not stop")
		}
		s.answer(hung, verdictOK)
	}
}

// restart stops the worker and starts it again: cleanly, the same one or a new one
// from the status it wrote last; or after a crash (also one right after a status
// write), a new one from the status written last before the crash. A new worker runs
// on the same machine's clock or is a replica whose clock is up to 5 minutes off;
// unless its Config named the desired release, it is told it at once, or later.
func (s *sim) restart(crash bool) {
	s.mu.Lock()
	crash = crash || s.crashed
	s.mu.Unlock()
	s.stop(crash)
	s.mu.Lock()
	crash = crash || s.crashed // a clean stop's last write may crash too
	s.mu.Unlock()
	if !crash && s.rng.IntN(2) == 0 {
		s.logf("restart the same worker")
		s.resumeBy = nil
		s.start(s.worker, payload.Status{})
		return
	}
	persisted := s.persisted(s.rng.IntN(4) == 0)
	s.resumeBy = &persisted
	if s.rng.IntN(2) == 0 {
		s.wall = newSimWall(s.clk, time.Duration(s.rng.Int64N(int64(10*time.Minute)))-5*time.Minute)
	}
	s.last = persisted
	s.start(nil, persisted)
	if s.rng.IntN(2) == 0 && !s.desired.IsZero() {
		s.update(s.desired)
	}
}

// step moves the world's time: to the next timer, which fires, or part of the way.
// While faults last, the running worker's clock may jump an hour back or forth.
func (s *sim) step() {
	if s.faults && s.rng.IntN(8) == 0 {
		jump := time.Hour
		if s.rng.IntN(2) == 0 {
			jump = -jump
		}
		s.logf("the worker's clock jumps %s", jump)
		s.wall.jump(jump)
		return
	}
	next, ok := s.clk.next()
	if !ok {
		return
	}
	now := s.clk.Now()
	if d := next.Sub(now); d > time.Millisecond && s.rng.IntN(4) == 0 {
		at := now.Add(time.Duration(s.rng.Int64N(int64(d))))
		s.logf("step %s, firing nothing", at.Sub(now))
		s.clk.advance(at)
		s.settle()
		return
	}
	s.logf("step %s", next.Sub(now))
	s.clk.fireNext()
	s.settle()
}

// answerOne answers one of the calls that wait, the seed picks which.
func (s *sim) answerOne(v func(*simCall) simVerdict) bool {
	s.mu.Lock()
	calls := slices.Clone(s.pending)
	s.mu.Unlock()
	if len(calls) == 0 {
		return false
	}
	c := calls[s.rng.IntN(len(calls))]
	if c.hung {
		s.answer(c, verdictOK) // a hung call returns at last, whatever its context says
	} else {
		s.answer(c, v(c))
	}
	s.settle()
	return true
}

// afterCrash restarts the worker when it crashed right after a status write.
func (s *sim) afterCrash() {
	s.mu.Lock()
	crashed := s.crashed
	s.mu.Unlock()
	if crashed {
		s.logf("the process crashed right after a status write")
		s.restart(true)
	}
}

func (s *sim) run(steps int) {
	s.t.Helper()
	s.start(nil, payload.Status{})
	s.update(s.pick())
	s.check()
	for range steps {
		switch r := s.rng.IntN(100); {
		case r < 65 && s.answerOne(s.verdict):
		case r < 82:
			s.step()
		case r < 93:
			for range 1 + s.rng.IntN(2) {
				s.update(s.pick())
			}
		default:
			s.restart(s.rng.IntN(3) == 0)
		}
		s.afterCrash()
		s.check()
	}
	s.converge()
	s.stop(false)
}

// converge lets the world behave once the faults stop: the worker must reconcile the
// release last desired, every pass on time.
func (s *sim) converge() {
	s.faults = false
	s.mu.Lock()
	s.writeFaults = false
	s.mu.Unlock()
	s.logf("faults stop")
	s.afterCrash()
	if s.desired != s.told {
		s.update(s.desired)
	}
	passes := s.applies
	for i := 0; ; i++ {
		st := s.worker.Status()
		s.mu.Lock()
		idle := len(s.pending) == 0
		s.mu.Unlock()
		if idle && st.State == payload.StateReconciling && simID(st.Release) == simID(s.desired) && st.Failure == nil && !st.Interrupted && s.applies > passes+1 {
			return
		}
		if i > 400 {
			s.fail("no convergence on %s within 400 steps after the faults stopped: %+v", s.desired, st)
		}
		if !s.answerOne(s.verdict) {
			s.step()
		}
		s.check()
	}
}

// runSchedule runs the schedule of seed in a bubble of its own and returns its log.
func runSchedule(t *testing.T, seed uint64) (log []string, applies int) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, seed)
		s.run(50)
		log, applies = s.log, s.applies
	})
	return log, applies
}

// TestSimPayload drives the Worker, its pools of one, two and three workers running
// for real, through seeded schedules: host calls that block until the schedule
// answers them, in any order, with failures, hangs past their context, panics,
// runtime.Goexit, unknown kinds and readiness waits; bursts of Update to four
// releases, two of them of one version and two digests, forced or not, through a
// mirror or not; stops and restarts of the same worker or of a new one (told the
// desired release in its Config or not), from the status persisted last through
// encoding/json, at times as an earlier version wrote it, with seconds; crashes
// between any two host calls, right after a status write too, losing what the
// process did not write; failing and conflicting status writes; a worker's clock
// jumping an hour back or forth, replicas whose clocks are up to 5 minutes off, and
// time passing. After every step it checks the world (simcheck_test.go): no task
// starts before every task it depends on ended well in the same apply, no more calls
// are in flight than the state's pool, no host call of a release starts once the
// worker was told another one, no pass comes before its interval or backoff nor after
// its own length, no readiness wait outlasts its timeout, a kind found unknown is not
// tried again in the same apply, an object a release deletes is never applied in it
// and is gone once a pass of it completes, which leaves every other object of the
// release in place, every failure a decision records was met by that pass in the
// world, ManifestsDeleted names only objects the apply removed, progress never goes
// back in memory nor in what is persisted, a stop is no failure nor warning, and no
// goroutine of the worker is left once Start returns. Once the faults stop, the
// worker reconciles the release last desired, every pass on time.
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
		seeds = seeds[:min(len(seeds), 100)]
	}
	start := time.Now()
	applies := 0
	for _, seed := range seeds {
		_, n := runSchedule(t, seed)
		applies += n
		if t.Failed() {
			return
		}
	}
	t.Logf("%d schedules, %d applies, in %s", len(seeds), applies, time.Since(start).Round(time.Millisecond))
}

// TestSimPayloadReplays: a seed replays step for step, although the worker's
// goroutines run for real, on as many threads as GOMAXPROCS gives.
func TestSimPayloadReplays(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		first, _ := runSchedule(t, seed)
		again, _ := runSchedule(t, seed)
		if !slices.Equal(first, again) {
			for i := range min(len(first), len(again)) {
				if first[i] != again[i] {
					t.Fatalf("seed %d diverges at step %d:\n%s\n%s", seed, i, first[i], again[i])
				}
			}
			t.Fatalf("seed %d: %d steps, then %d", seed, len(first), len(again))
		}
	}
}
