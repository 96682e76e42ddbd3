package payload_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/payload"
)

// start runs a new worker from st, or the same one again (w), whose hooks are of the
// epoch it was made in. A new worker is told the desired release in its Config, as a
// host that reads its resource first does, or not: it then resumes st's release.
func (s *sim) start(w *payload.Worker, st payload.Status) {
	if w == nil {
		s.epoch++
		s.workerEpoch = s.epoch
		if s.holds.pausing {
			s.holds.paused = s.rng.IntN(2) == 0
			s.injected["a paused worker"] += map[bool]int{true: 1}[s.holds.paused]
		}
		if st.State != "" && !st.Release.IsZero() {
			s.begun = simID(st.Release) // the release the store says the cluster runs
		}
		var made *payload.Worker
		cfg := s.config(s.epoch, &made, s.wall)
		cfg.Status = st
		s.told = st.Release
		if !s.desired.IsZero() && s.rng.IntN(4) > 0 {
			cfg.Desired, cfg.Generation = s.desired, s.gen
			s.told = s.desired
		}
		s.logf("a new worker (clock %s, paused %t) from %s/%s %d/%d, told %s", s.wall.skew(), s.holds.paused, st.Release, st.State, st.Done, st.Total, cfg.Desired)
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
	s.due = s.dueFrom(w.Status(), s.target(w.Status()))
	s.expectOpening(w.Status())
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

// update sets the desired release, as the host does. Another release is due at once,
// unless the pause or the windows hold it back: then the release the worker goes on
// with stays due as it was; the same one, through a mirror or with another
// generation, when it was, or sooner if the worker's clock says it is due.
func (s *sim) update(r payload.Release) {
	s.gen++
	s.desired = r
	s.logf("Update(%d, %s %s force=%t)", s.gen, r, r.Image, r.Force)
	before := s.worker.Status()
	s.worker.Update(s.gen, r)
	current := before.State != "" && !before.Release.IsZero()
	switch same := current && simID(before.Release) == simID(r); {
	case !same && s.held():
		s.logf("  held: paused %t or the windows closed", s.holds.paused)
		s.pass.kept = s.pass.kept || s.pass.started
		if current {
			s.dueAgain(before, before.Release)
		} else if !s.pass.started {
			s.due = simDue{}
		}
	case simID(r) != simID(s.told) && !same:
		s.due, s.resumeBy = simDue{release: simID(r), low: s.clk.Now(), high: s.clk.Now()}, nil
	default:
		s.dueAgain(before, r)
	}
	s.told = r
	s.settle()
	s.expectOpening(s.worker.Status())
}

// dueAgain is when r, the release the worker applies, is due after a decision that
// starts nothing: when it was, or sooner if the worker's clock says it is due.
func (s *sim) dueAgain(before payload.Status, r payload.Release) {
	switch {
	case s.pass.started:
	case s.due.release == "":
		s.due = s.dueFrom(before, r)
	default:
		if d := s.dueFrom(before, r); d.low.Before(s.due.low) {
			s.due.low = d.low
		}
	}
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
	s.injected["a restart"]++
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
		s.injected["a replica with its own clock"]++
		s.wall = &offsetClock{WithDelayedExecution: s.clk, offset: time.Duration(s.rng.Int64N(int64(10*time.Minute))) - 5*time.Minute}
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
		s.injected["a clock jumps "+jump.String()]++
		s.logf("the worker's clock jumps %s", jump)
		s.wall.jump(jump)
		s.holds.opensAt = time.Time{} // the worker's wait lasts its length, whatever its clock reads
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
		s.injected["a crash right after a status write"]++
		s.logf("the process crashed right after a status write")
		s.restart(true)
	}
}

// liftPause ends the schedule's pauses: a paused worker is stopped and a new one,
// not paused, carries on from the persisted status, as a host does when the pause
// is lifted.
func (s *sim) liftPause() {
	s.holds.pausing = false
	if !s.holds.paused {
		return
	}
	s.logf("the pause is lifted")
	s.stop(false)
	s.holds.paused = false
	persisted := s.persisted(false)
	s.resumeBy, s.last = &persisted, persisted
	s.start(nil, persisted)
}
