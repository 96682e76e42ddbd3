package payload

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
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
		timer    clock.Timer
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	select { // the first decision sees every Update made before Start
	case <-w.wake:
	default:
	}
	for {
		w.mu.Lock()
		in := Input{Desired: w.desired, Generation: w.generation, Status: w.status, Observation: observed,
			Policy: w.policy, Now: w.clock.Now(), Jitter: w.jitter()}
		w.mu.Unlock()
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
			logger.V(2).Info("Applying payload", "release", d.Status.Release.String(), "state", d.Status.State)
			observed = w.apply(ctx, d)
			continue
		}
		// The wait ends at a time, not after a duration: the clock may have moved while
		// the host handled the result.
		var due <-chan time.Time
		if d.RequeueAfter > 0 {
			at := in.Now.Add(d.RequeueAfter)
			wait := at.Sub(w.clock.Now())
			if wait <= 0 {
				continue
			}
			timer = w.clock.NewTimer(wait)
			if !w.clock.Now().Before(at) { // the clock moved on before the timer was set
				timer.Stop()
				timer = nil
				continue
			}
			due = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-w.wake:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}
