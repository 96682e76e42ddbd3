package payload_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
	wall   *offsetClock // what the running worker's clock reads
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
	injected map[string]int // the world's faults, counted

	holds simHolds // the windows and pauses of the schedule
	begun string   // simID of the release the world last saw the worker start or resume
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
	// kept says the pass started while the pause or the windows held the told
	// release back, or an Update they held back came during it: it finishes.
	kept bool
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
		jitter: rand.New(rand.NewPCG(seed, 2)), clk: newSimClock(t0), faults: true, writeFaults: true, objects: map[string]string{},
		injected: map[string]int{}}
	s.wall = &offsetClock{WithDelayedExecution: s.clk}
	s.holds = drawHolds(rand.New(rand.NewPCG(seed, 3)))
	for _, r := range simReleases {
		for _, o := range simObjectsOf(r.Version) {
			if o.delete && s.rng.IntN(2) == 0 { // some objects to remove exist, some never did
				s.objects[o.ref] = simID(r)
			}
		}
	}
	return s
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
	if s.holds.pausing {
		s.liftPause()
	}
	if s.desired != s.told {
		s.update(s.desired)
	}
	passes, closed := s.applies, 0
	for i := 0; ; i++ {
		if s.held() && closed < 5000 { // the steps while the windows are closed do not count
			closed++
			i--
		}
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

// runSchedule runs the schedule of seed in a bubble of its own and returns its log,
// its passes and the faults it injected.
func runSchedule(t *testing.T, seed uint64) (log []string, applies int, injected map[string]int) {
	synctest.Test(t, func(t *testing.T) {
		s := newSim(t, seed)
		s.run(50)
		log, applies, injected = s.log, s.applies, s.injected
	})
	return log, applies, injected
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
	applies, injected := 0, map[string]int{}
	for _, seed := range seeds {
		_, n, faults := runSchedule(t, seed)
		applies += n
		for k, v := range faults {
			injected[k] += v
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d schedules, %d applies, in %s; faults: %v", len(seeds), applies, time.Since(start).Round(time.Millisecond), injected)
}

// TestSimPayloadReplays: a seed replays step for step, although the worker's
// goroutines run for real, on as many threads as GOMAXPROCS gives.
func TestSimPayloadReplays(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		first, _, _ := runSchedule(t, seed)
		again, _, _ := runSchedule(t, seed)
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
