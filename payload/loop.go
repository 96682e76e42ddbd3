package payload

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
)

// loop decides, acts on the decision and waits, until ctx ends. The decision that
// follows an apply stopped by ctx is still made and published, so that the status says
// the apply was interrupted. It returns Decide's error, which a validated Config and
// the statuses Decide itself made never give, but for a clock that reads the zero
// time.
func (w *Worker) loop(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	var (
		observed Observation
		next     wait
	)
	defer next.stop()
	select { // the first decision sees every Update made before Start
	case <-w.wake:
	default:
	}
	for {
		in := w.input(observed, next.elapsed && next.forPass)
		d, err := Decide(in)
		if err != nil {
			return err
		}
		w.publish(d.Status)
		if !observed.Release.IsZero() || len(d.Events) > 0 {
			w.report(ctx, d.Result)
		}
		observed = Observation{}
		if ctx.Err() != nil {
			return nil
		}
		if d.Apply {
			next.stop()
			logger.V(2).Info("Applying payload", "release", d.Status.Release.String(), "state", d.Status.State)
			observed = w.apply(ctx, d)
			continue
		}
		if due := next.arm(w.clock, in.Now, d); due {
			continue
		}
		w.notify()
		if !next.await(ctx, w.wake) {
			return nil
		}
	}
}

// input is what Decide decides from now. Once the loop's wait for the next pass has
// elapsed, the pass is due, whatever the clock reads: a due time still ahead (the
// clock stepped back during the wait) becomes now. A wait that ended before the pass
// (for the maintenance windows to open) leaves the due time as it is.
func (w *Worker) input(observed Observation, elapsed bool) Input {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := Input{Desired: w.desired, Generation: w.generation, Status: w.status, Observation: observed,
		Policy: w.policy, Zones: w.zones, Now: w.clock.Now(), Jitter: w.jitter()}
	if due := in.Status.NextApplyTime; elapsed && due != nil && in.Now.Before(due.Time) {
		now := converge.NewMicroTime(in.Now)
		in.Status.NextApplyTime = &now
	}
	return in
}

// wait is the loop's wait for the next pass. It runs on a timer of the worker's clock,
// which measures the time that passes, not what the clock reads, so that the wait
// lasts its length when the clock steps back; a wake (Update) that leaves the same
// pass due does not start it again.
type wait struct {
	timer clock.Timer
	pass  pass
	// at is when the wait ends, as the clock read it when the wait began.
	at time.Time
	// forPass says the wait lasts until the pass is due, not only until the
	// maintenance windows open.
	forPass bool
	// elapsed says the wait ended: the pass it waited for is due when forPass.
	elapsed bool
}

// pass names the pass a wait is for: the next apply of a release after so many
// completed and failed applies.
type pass struct {
	release             Release
	completed, failures int32
}

// arm starts the wait for the pass d waits for, d.RequeueAfter from decided, unless
// it waits for that pass already: a wait for the pass is kept, whatever the clock
// reads now, and a wait for the windows to open is kept unless d's ends sooner. It
// reports whether the wait is over already, so that the loop decides again at once. A decision without
// RequeueAfter (no release, a pause) waits for Update alone.
func (wt *wait) arm(clk clock.WithDelayedExecution, decided time.Time, d Decision) (due bool) {
	wt.elapsed = false
	p := pass{release: d.Status.Release, completed: d.Status.Completed, failures: d.Status.Failures}
	// The wait ends at a time, not after a duration: the clock may have moved while the
	// host handled the result. It is never longer than the decision's.
	at := decided.Add(d.RequeueAfter)
	forPass := d.Status.NextApplyTime == nil || !at.Before(d.Status.NextApplyTime.Time)
	if wt.timer != nil && wt.pass.release.Same(p.release) && wt.pass.completed == p.completed && wt.pass.failures == p.failures &&
		(d.RequeueAfter <= 0 || forPass || !at.Before(wt.at)) {
		return false
	}
	wt.stop()
	if d.RequeueAfter <= 0 {
		return false
	}
	length := min(at.Sub(clk.Now()), d.RequeueAfter)
	if length <= 0 {
		return true
	}
	timer := clk.NewTimer(length)
	if !clk.Now().Before(at) { // the clock moved on before the timer was set
		timer.Stop()
		return true
	}
	wt.timer, wt.pass, wt.at, wt.forPass = timer, p, at, forPass
	return false
}

// await waits for the wait to end, a wake or the end of ctx; it returns false when ctx
// ended.
func (wt *wait) await(ctx context.Context, wake <-chan struct{}) bool {
	var due <-chan time.Time
	if wt.timer != nil {
		due = wt.timer.C()
	}
	select {
	case <-ctx.Done():
	case <-wake:
	case <-due:
		wt.timer, wt.elapsed = nil, true
	}
	if !wt.elapsed { // a wake and the end of the wait may come together: the end counts
		select {
		case <-due:
			wt.timer, wt.elapsed = nil, true
		default:
		}
	}
	return ctx.Err() == nil
}

// stop ends the wait.
func (wt *wait) stop() {
	if wt.timer != nil {
		wt.timer.Stop()
	}
	wt.timer, wt.elapsed = nil, false
}
