package payload_test

import (
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/payload"
)

// arrive takes a new call in and checks what must hold when a call starts.
func (s *sim) arrive(c *simCall) {
	if c.kind == "result" {
		s.result(c)
		return
	}
	s.logf("%s %s %s %s (ctx done: %t)", c.kind, c.version, c.state, c.ref, c.ctx.Err() != nil)
	if c.dead {
		s.injected["a call made after its process crashed"]++
		s.logf("  (made after its process crashed: it reaches nothing)")
		return
	}
	s.checkHeldCall(c)
	now := s.clk.Now()
	if !s.pass.started {
		s.pass.started, s.pass.release, s.pass.version, s.pass.at = true, c.release, c.version, now
		s.applies++
		switch {
		case s.due.release != c.release:
		case now.Before(s.due.low):
			s.fail("a pass of %s started at %s, before its interval or backoff ended at %s", c.version, now.Format("15:04:05.000000"), s.due.low.Format("15:04:05.000000"))
		case now.After(s.due.high):
			s.fail("a pass of %s started at %s, after its wait's own length ended at %s", c.version, now.Format("15:04:05.000000"), s.due.high.Format("15:04:05.000000"))
		}
	}
	if !c.task() {
		return
	}
	if c.kind == "apply" && simDeletes(c.version, c.ref) {
		s.fail("%s, which %s deletes, was applied", c.ref, c.version)
	}
	if c.kind == "ready" {
		since, waiting := s.pass.readySince[c.ref]
		switch {
		case !waiting:
			s.pass.readySince[c.ref] = now
		case now.After(since.Add(simPolicy.ReadinessTimeout.Duration)):
			s.fail("%s is still checked for readiness %s after its wait began, longer than the readiness timeout of %s",
				c.ref, now.Sub(since), simPolicy.ReadinessTimeout.Duration)
		}
	}
	s.arriveTask(c)
}

// arriveTask checks what must hold when a task's call starts: the state a restart
// resumes, a kind found unknown, the tasks it depends on.
func (s *sim) arriveTask(c *simCall) {
	if s.pass.state == "" {
		s.pass.state = c.state
		if want := s.resumeBy; want != nil {
			s.resumeBy = nil
			state := want.State
			if state == "" {
				state = payload.StateInitializing
			}
			if simID(want.Release) == c.release && c.state != state {
				s.fail("a restart from %s/%s applied as %s", want.Release, want.State, c.state)
			}
		}
	}
	if s.pass.noKind[c.ref] {
		s.fail("%s was tried again in the apply that found its kind unknown", c.ref)
	}
	if !s.pass.startedRef[c.ref] {
		s.pass.startedRef[c.ref] = true
		for _, dep := range simDepsOf(c.version, c.state)[c.ref] {
			if !s.pass.finished[dep] {
				s.fail("%s started while %s, which it depends on, had not finished (%s)", c.ref, dep, c.state)
			}
		}
	}
}

// simDeletes reports whether the release of version deletes ref.
func simDeletes(version, ref string) bool {
	return slices.ContainsFunc(simObjectsOf(version), func(o simObject) bool { return o.ref == ref && o.delete })
}

// result takes in a decision the worker reported.
func (s *sim) result(c *simCall) {
	st := c.status
	s.logf("result: requeue %s, events %v, %s/%s %d/%d failures %d interrupted %t", c.result.RequeueAfter, c.result.Events,
		st.Release, st.State, st.Done, st.Total, st.Failures, st.Interrupted)
	if c.dead {
		return
	}
	for _, e := range c.result.Events {
		if s.stopping && e.Type == converge.EventTypeWarning {
			s.fail("a stop emitted a warning: %v", e)
		}
		if e.Reason != payload.ReasonManifestsDeleted {
			continue
		}
		_, names, _ := strings.Cut(e.Message, ": ")
		for _, id := range strings.Split(names, ", ") {
			if !slices.Contains(s.pass.deleted, id) {
				s.fail("%q names %s, which this apply did not remove (it removed %v)", e.Message, id, s.pass.deleted)
			}
		}
	}
	if s.pass.started {
		s.passEnded(st)
	}
	s.expectOpening(st)
	s.boundary()
}

// passEnded checks the decision st that follows a pass, and says when the next pass
// is due: a release the pass did not end is due at once; after a failure, no sooner
// than the backoff without jitter and no later than with the most; after a completed
// pass, the interval.
func (s *sim) passEnded(st payload.Status) {
	now := s.clk.Now()
	ended := !st.Interrupted && simID(st.Release) == s.pass.release
	if ended && st.Failure != nil {
		s.checkLedger(st.Failure)
	}
	if ended {
		s.checkTimes(st)
	}
	if ended && st.Failures == 0 && st.Completed > 0 {
		s.checkCompleted()
	}
	if !ended {
		s.due = simDue{}
		if next := s.target(st); !next.IsZero() {
			s.due = simDue{release: simID(next), low: now, high: now}
		}
		return
	}
	shortest, longest := simWait(st)
	s.due = simDue{release: s.pass.release, low: now.Add(shortest), high: now.Add(longest + time.Microsecond)}
}

// checkLedger holds for the failure a pass recorded: the world produced it in that
// pass. Every object, the registry or the preconditions its message names failed a
// call of the pass; a timeout comes once the pass ran the apply timeout.
func (s *sim) checkLedger(f *payload.Failure) {
	if f.Reason == payload.ReasonUpdatePayloadTimedOut {
		if ran := s.clk.Now().Sub(s.pass.at); ran < simPolicy.ApplyTimeout.Duration {
			s.fail("a pass that ran %s recorded a timeout: %s", ran, f.Message)
		}
		return
	}
	if len(s.pass.ledger) == 0 {
		s.fail("the pass recorded a failure, but none of its calls failed: %s: %s", f.Reason, f.Message)
	}
	named := func(marker string) {
		if !s.pass.ledger[marker] {
			s.fail("the pass recorded a failure of %s, which none of its calls met (it met %v): %s", marker, slices.Sorted(maps.Keys(s.pass.ledger)), f.Message)
		}
	}
	for _, marker := range []string{"the registry", "the preconditions"} {
		if strings.Contains(f.Message, marker) {
			named(marker)
		}
	}
	for _, o := range simObjectsOf(s.pass.version) {
		if strings.Contains(f.Message, o.ref) || strings.Contains(f.Message, o.id) {
			named(o.ref)
		}
	}
}

// checkTimes holds for a decision: it records no progress later than its clock reads,
// and Failing says what its last progress says of a failure of
// EffectFailAfterInterval: True once no progress was made for an interval.
func (s *sim) checkTimes(st payload.Status) {
	wall := s.wall.Now()
	if st.LastProgressTime != nil && st.LastProgressTime.After(wall) {
		s.fail("the decision records progress at %s, later than its clock reads (%s)", st.LastProgressTime, wall)
	}
	if st.Failure == nil || st.Failure.Effect != payload.EffectFailAfterInterval {
		return
	}
	want, since := true, "with no progress"
	if st.LastProgressTime != nil {
		want, since = wall.Sub(st.LastProgressTime.Time) >= simPolicy.Interval.Duration, wall.Sub(st.LastProgressTime.Time).String()+" after the last progress"
	}
	if failing := meta.IsStatusConditionTrue(st.Conditions, conditions.TypeFailing); failing != want {
		s.fail("Failing is %t %s, with a failure of %s", failing, since, st.Failure.Effect)
	}
}

// checkCompleted holds once a pass of a release completed: every object of the
// release is the release's, and every object it deletes is gone, but for a delete
// that returned an error the status reports.
func (s *sim) checkCompleted() {
	for _, o := range simObjectsOf(s.pass.version) {
		got, exists := s.objects[o.ref]
		switch {
		case o.delete && exists && !s.pass.reported[o.ref]:
			s.fail("%s, which %s deletes, is still there once a pass of it completed", o.ref, s.pass.version)
		case !o.delete && got != s.pass.release:
			s.fail("%s holds %q once a pass of %s (%s) completed", o.ref, got, s.pass.version, s.pass.release)
		}
	}
}

// dueFrom is when a worker that decides from st, now, applies want next: at once for
// another release, an interrupted apply or no due time; else at st.NextApplyTime as
// the worker's clock reads it, but no later than the wait's own length.
func (s *sim) dueFrom(st payload.Status, want payload.Release) simDue {
	now := s.clk.Now()
	if want.IsZero() {
		return simDue{}
	}
	d := simDue{release: simID(want), low: now, high: now}
	if st.State == "" || simID(st.Release) != simID(want) || st.Interrupted || st.NextApplyTime == nil {
		return d
	}
	_, longest := simWait(st)
	wait := min(max(st.NextApplyTime.Sub(s.wall.Now()), 0), longest)
	d.low, d.high = now.Add(wait), now.Add(wait+time.Microsecond)
	return d
}

// answer gives c its verdict and records what it does in the world.
func (s *sim) answer(c *simCall, v simVerdict) {
	s.mu.Lock()
	i := slices.Index(s.pending, c)
	s.mu.Unlock()
	if i < 0 {
		s.fail("answered a call that is not pending: %s", c.key())
	}
	if c.dead && c.kind != "result" {
		v = verdictCancelled
	}
	if v == verdictHang {
		s.logf("  %s hangs", c.key())
		c.hung = true
		return
	}
	if c.kind != "result" {
		s.logf("  %s -> %s", c.key(), verdictNames[v])
	}
	if !c.dead {
		v = s.record(c, v)
	}
	s.reply(c, v)
}

// record makes what c does with v happen in the world and in the pass's ledger, and
// returns the answer the world gives: a delete of an object already gone finds it
// gone.
func (s *sim) record(c *simCall, v simVerdict) simVerdict {
	live := c.ctx == nil || c.ctx.Err() == nil
	if c.kind != "result" && v.failed() {
		s.pass.ledger[c.marker()] = true
	}
	if v == verdictReport {
		s.pass.reported[c.ref] = true
	}
	switch {
	case c.kind == "apply" && (v == verdictOK || v == verdictReport):
		s.objects[c.ref] = c.release
		if live && c.state == payload.StateReconciling {
			s.pass.finished[c.ref] = true
		}
	case c.kind == "delete" && v == verdictOK:
		if _, exists := s.objects[c.ref]; !exists {
			v = verdictNotFound
			s.logf("  (gone already)")
		} else {
			s.pass.deleted = append(s.pass.deleted, c.id)
			delete(s.objects, c.ref)
		}
		if live {
			s.pass.finished[c.ref] = true
		}
	case c.kind == "delete" && v == verdictReport && live:
		s.pass.finished[c.ref] = true // an error that is only reported does not hold dependents back
	case c.kind == "ready" && v == verdictOK && live:
		s.pass.finished[c.ref] = true
	case c.kind == "apply" && v == verdictUnknownKind && live:
		s.pass.noKind[c.ref] = true
	}
	return v
}

// reply hands the verdict over.
func (s *sim) reply(c *simCall, v simVerdict) {
	s.mu.Lock()
	s.pending = slices.DeleteFunc(s.pending, func(p *simCall) bool { return p == c })
	s.mu.Unlock()
	c.reply <- v
}

// check holds after every step: what runs fits the pool, progress never goes back, a
// pass due comes within its wait's own length, and a worker with something to do is
// not idle.
func (s *sim) check() {
	s.mu.Lock()
	violations := slices.Clone(s.violations)
	var tasks []*simCall
	for _, c := range s.pending {
		if c.task() && !c.dead && c.epoch == s.workerEpoch {
			tasks = append(tasks, c)
		}
	}
	pending := len(s.pending)
	s.mu.Unlock()
	if len(violations) > 0 {
		s.fail("%s", violations[0])
	}
	for _, c := range tasks {
		if c.state != tasks[0].state || c.release != tasks[0].release {
			s.fail("calls of two applies in flight at once: %s and %s", tasks[0].key(), c.key())
		}
	}
	if len(tasks) > 0 && len(tasks) > simPools[tasks[0].state] {
		s.fail("%d calls in flight while %s, more than the pool of %d", len(tasks), tasks[0].state, simPools[tasks[0].state])
	}
	st := s.worker.Status()
	if sameStint(s.last, st) && st.Done < s.last.Done {
		s.fail("progress went back within %s: %d after %d", st.Release, st.Done, s.last.Done)
	}
	if st.Total > 0 && st.Done > st.Total {
		s.fail("done %d of %d", st.Done, st.Total)
	}
	s.last = st
	if s.due.release != "" && !s.pass.started && s.clk.Now().After(s.due.high) {
		s.fail("no pass of %s by %s, when its wait's own length ended", s.due.release, s.due.high.Format("15:04:05.000000"))
	}
	s.checkOpening(pending)
	if _, timers := s.clk.next(); pending == 0 && !timers && !s.told.IsZero() && !s.holds.paused {
		s.fail("the worker waits for nothing while %s is to be applied", s.told)
	}
}

// engineFrame matches a function of the engine (not of its tests) in a stack.
var engineFrame = regexp.MustCompile(`(?m)^github\.com/converge-dev/converge/payload\.`)

// stacks is the buffer of checkGoroutines, grown as needed.
var stacks = make([]byte, 64<<10)

// checkGoroutines holds once Start returned: no goroutine of the worker is left.
func (s *sim) checkGoroutines() {
	synctest.Wait()
	n := runtime.Stack(stacks, true)
	for n == len(stacks) {
		stacks = make([]byte, 2*len(stacks))
		n = runtime.Stack(stacks, true)
	}
	for _, g := range strings.Split(string(stacks[:n]), "\n\n") {
		if strings.Contains(g, "synctest bubble") && engineFrame.MatchString(g) {
			s.fail("a goroutine of the worker is left once Start returned:\n%s", g)
		}
	}
}
