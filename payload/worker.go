package payload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Payload is a loaded payload: its release and its manifests in apply order.
type Payload struct {
	// Release is the release the payload carries; an empty Version is taken from the desired release.
	Release Release
	// Manifests are applied in this order (Load returns them in CompareFiles order).
	Manifests []Manifest
}

// PayloadLoader retrieves and loads the payload of a desired release.
type PayloadLoader interface {
	LoadPayload(ctx context.Context, desired Release) (*Payload, error)
}

// PayloadLoaderFunc adapts a function to PayloadLoader.
type PayloadLoaderFunc func(ctx context.Context, desired Release) (*Payload, error)

// LoadPayload calls f.
func (f PayloadLoaderFunc) LoadPayload(ctx context.Context, desired Release) (*Payload, error) {
	return f(ctx, desired)
}

var _ PayloadLoader = PayloadLoaderFunc(nil)

// Event types, as in core/v1.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// EventRecorder receives the worker's events; a host forwards them to its own
// record.EventRecorder with the object they are about.
type EventRecorder interface {
	Event(eventType, reason, message string)
}

// EventRecorderFunc adapts a function to EventRecorder.
type EventRecorderFunc func(eventType, reason, message string)

// Event calls f.
func (f EventRecorderFunc) Event(eventType, reason, message string) { f(eventType, reason, message) }

var _ EventRecorder = EventRecorderFunc(nil)

// ErrApplyTimeout is the cause of an apply cancelled by WorkerConfig.ApplyTimeout.
var ErrApplyTimeout = errors.New("payload: apply timed out")

// errSuperseded cancels an apply whose desired release was replaced by Update.
var errSuperseded = errors.New("payload: apply superseded by a new desired release")

// Defaults of WorkerConfig.
const (
	DefaultInterval         = 3 * time.Minute
	DefaultWorkers          = 8
	DefaultReconcileWorkers = 2
	// reconcileStride is the number of attempts that share one permutation, each shifted.
	reconcileStride = 8
)

// DefaultBackoff is the per-manifest retry policy when WorkerConfig.Backoff has no steps.
var DefaultBackoff = wait.Backoff{Duration: 10 * time.Second, Factor: 1.3, Steps: 3}

// WorkerConfig configures a Worker. Loader and Applier are required; every other zero
// field means its documented default.
type WorkerConfig struct {
	// Loader retrieves and loads the payload of a desired release.
	Loader PayloadLoader
	// Applier applies one manifest.
	Applier Applier
	// Clock times retries, intervals, apply timeouts and the throttling of OnStatus; nil
	// is the real clock.
	Clock clock.WithDelayedExecution
	// Interval is the time between two reconciles and the longest wait after a failure
	// (default DefaultInterval).
	Interval time.Duration
	// ApplyTimeout bounds one apply (default Interval while initializing, 2×Interval otherwise).
	ApplyTimeout time.Duration
	// Backoff is the retry policy of each manifest (default DefaultBackoff when Steps is 0).
	Backoff wait.Backoff
	// Workers is the size of the pool while updating (default DefaultWorkers).
	// Initializing runs every node in parallel.
	Workers int
	// ReconcileWorkers is the size of the pool while reconciling (default DefaultReconcileWorkers).
	ReconcileWorkers int
	// Jitter randomizes a retry delay (default: up to 20% longer, wait.Jitter).
	Jitter func(time.Duration) time.Duration
	// OnStatus, when set, is called with new statuses, edges at once (IsEdge) and other
	// progress throttled by NotifyInterval and NotifyBurst.
	OnStatus func(Status)
	// NotifyInterval is the time between two throttled notifications (default 1s).
	NotifyInterval time.Duration
	// NotifyBurst is the number of throttled notifications allowed at once (default 1).
	NotifyBurst int
	// Events receives the worker's events; nil drops them.
	Events EventRecorder
	// AfterApply, when set, is called by the loop after every apply that was not
	// superseded by Update, once the next attempt is scheduled (for metrics and tests).
	AfterApply func(ApplyResult)
	// Status is the last status the host persisted, for a restarted worker: the first
	// desired release is reconciled when Status.Actual is that release and
	// Status.Reconciling is set, initialized when Status.Actual is empty (or is that
	// release and Status.Initial is set), and updated to otherwise.
	Status Status
}

// RetryDelay is the wait after consecutiveErrors failed applies in a row: interval/16
// doubled for each of the first three errors (interval/8, /4, /2), then interval.
func RetryDelay(interval time.Duration, consecutiveErrors int) time.Duration {
	if consecutiveErrors < 1 || consecutiveErrors >= 4 {
		return interval
	}
	return interval / 16 << consecutiveErrors
}

// Worker keeps a cluster at a desired payload. Update sets the desired release; Start
// runs the loop: the first release is initialized (every component in parallel), a later
// different release is updated to (run levels in order, a bounded pool), cancelling the
// apply in flight, and once an apply succeeds the worker is Reconciling: it re-applies
// the payload every Interval in a seeded permutation that shifts with each attempt, on
// a small pool. After a failure it retries after RetryDelay (with jitter); the count of
// consecutive failures is reset by a success or a new release. An apply superseded by
// Update is not a failure and schedules nothing: the loop applies whatever release is
// desired when it wakes, even the superseded one when Update switched back to it (A → B
// → A during an apply of A applies A again at once). Progress is published as
// a Status through a Reporter, readable with Status and pushed to OnStatus.
//
// A Worker is safe for concurrent use; Start runs the loop once at a time.
type Worker struct {
	cfg      WorkerConfig
	clock    clock.WithDelayedExecution
	notifier *Notifier
	wake     chan struct{}

	mu         sync.Mutex
	running    bool
	desired    Release
	generation int64
	cancel     context.CancelCauseFunc
	status     Status

	// owned by the loop
	loaded    *Payload
	loadedFor Release
}

// NewWorker checks cfg, fills in its defaults and returns a worker.
func NewWorker(cfg WorkerConfig) (*Worker, error) {
	if cfg.Loader == nil || cfg.Applier == nil {
		return nil, fmt.Errorf("payload: NewWorker needs a Loader and an Applier: %w", ErrInvalid)
	}
	if cfg.Interval < 0 || cfg.ApplyTimeout < 0 || cfg.Workers < 0 || cfg.ReconcileWorkers < 0 || cfg.Backoff.Steps < 0 {
		return nil, fmt.Errorf("payload: NewWorker: negative interval, timeout, pool size or backoff steps: %w", ErrInvalid)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Backoff.Steps == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.ReconcileWorkers == 0 {
		cfg.ReconcileWorkers = DefaultReconcileWorkers
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func(d time.Duration) time.Duration { return wait.Jitter(d, 0.2) }
	}
	if cfg.Events == nil {
		cfg.Events = EventRecorderFunc(func(string, string, string) {})
	}
	w := &Worker{cfg: cfg, clock: cfg.Clock, wake: make(chan struct{}, 1), status: *cfg.Status.DeepCopy()}
	if cfg.OnStatus != nil {
		w.notifier = NewNotifier(cfg.NotifyInterval, cfg.NotifyBurst, cfg.Clock, cfg.OnStatus)
	}
	return w, nil
}

// Status returns a copy of the latest status.
func (w *Worker) Status() Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.status.DeepCopy()
}

// Update sets the desired release and its generation and returns the current status. A
// release different from the previous one cancels the apply in flight and wakes the
// loop; an empty release is ignored.
func (w *Worker) Update(generation int64, desired Release) Status {
	w.mu.Lock()
	defer w.mu.Unlock()
	if desired.IsZero() {
		return *w.status.DeepCopy()
	}
	w.generation = generation
	if desired == w.desired {
		return *w.status.DeepCopy()
	}
	w.desired = desired
	if w.cancel != nil {
		w.cancel(errSuperseded)
		w.cancel = nil
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return *w.status.DeepCopy()
}

// Start runs the worker until ctx ends and returns once every goroutine it started has
// returned. Calling Start while it runs is an error.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		w.mu.Unlock()
		return errors.New("payload: worker already started")
	}
	w.running = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.running = false
		w.mu.Unlock()
	}()

	var wg sync.WaitGroup
	if w.notifier != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.notifier.Run(ctx)
		}()
	}
	w.loop(ctx)
	wg.Wait()
	return nil
}

// ApplyResult describes one finished apply.
type ApplyResult struct {
	// Release is the release applied.
	Release Release
	// State is the state the apply ran in.
	State State
	// Attempt counts the failed applies of this release before this one.
	Attempt int
	// Err is the apply's error, nil on success.
	Err error
	// RetryAfter is the time until the next apply: RetryDelay with jitter after a
	// failure, Interval after a success.
	RetryAfter time.Duration
}

// work is what the loop is applying.
type work struct {
	desired    Release
	generation int64
	state      State
	attempt    int
	completed  int
	started    bool
}

func (w *Worker) loop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	var (
		wk                work
		consecutiveErrors int
		timer             clock.Timer
		timerC            <-chan time.Time
		// interrupted is set when the last apply was superseded: no timer is scheduled
		// then, so the next wake is due even when it finds the same release again.
		interrupted bool
	)
	schedule := func(d time.Duration) {
		if timer != nil {
			timer.Stop()
		}
		timer = w.clock.NewTimer(d)
		timerC = timer.C()
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		fromTimer := false
		select {
		case <-ctx.Done():
			return
		case <-timerC:
			fromTimer, timerC = true, nil
		case <-w.wake:
		}
		changed, ok := w.nextWork(&wk)
		if !ok {
			continue
		}
		if changed {
			consecutiveErrors = 0
		} else if !fromTimer && !interrupted {
			continue
		}
		interrupted = false
		err := w.apply(ctx, &wk)
		result := ApplyResult{Release: wk.desired, State: wk.state, Attempt: wk.attempt, Err: err}
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errSuperseded):
			interrupted = true
			continue
		case err != nil:
			consecutiveErrors++
			wk.attempt++
			wk.completed = 0
			result.RetryAfter = w.cfg.Jitter(RetryDelay(w.cfg.Interval, consecutiveErrors))
			logger.Error(err, "Unable to apply payload", "release", wk.desired.String(), "retryAfter", result.RetryAfter)
		default:
			if wk.state != StateReconciling {
				logger.Info("Payload applied, reconciling from now on", "release", wk.desired.String(), "from", wk.state)
			}
			consecutiveErrors = 0
			wk.completed++
			wk.attempt = 0
			wk.state = StateReconciling
			result.RetryAfter = w.cfg.Interval
		}
		schedule(result.RetryAfter)
		if w.cfg.AfterApply != nil {
			w.cfg.AfterApply(result)
		}
	}
}

// nextWork brings wk up to date with the desired release: ok is false before the first
// Update; changed is true for the first release and for a new one.
func (w *Worker) nextWork(wk *work) (changed, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.desired.IsZero() {
		return false, false
	}
	wk.generation = w.generation
	switch {
	case !wk.started:
		wk.started = true
		wk.state = initialState(w.cfg.Status, w.desired)
		if wk.state == StateReconciling {
			wk.completed = w.cfg.Status.Completed
		}
	case wk.desired != w.desired:
		wk.state = StateUpdating
		wk.attempt, wk.completed = 0, 0
	default:
		return false, true
	}
	wk.desired = w.desired
	return true, true
}

func initialState(persisted Status, desired Release) State {
	switch {
	case persisted.Actual == desired && persisted.Reconciling:
		return StateReconciling
	case persisted.Actual.IsZero(), persisted.Actual == desired && persisted.Initial:
		return StateInitializing
	}
	return StateUpdating
}

func (w *Worker) publish(s Status) {
	w.mu.Lock()
	w.status = s
	w.mu.Unlock()
	if w.notifier != nil {
		w.notifier.Offer(s)
	}
}

func (w *Worker) applyTimeout(state State) time.Duration {
	switch {
	case w.cfg.ApplyTimeout > 0:
		return w.cfg.ApplyTimeout
	case state == StateInitializing:
		return w.cfg.Interval
	}
	return 2 * w.cfg.Interval
}

// strategy returns how to break the payload and how to run it in state: Initializing
// runs every node at once, Updating a bounded pool that favours the critical path,
// Reconciling a small pool in a permutation seeded by the attempt's epoch and shifted
// by the attempt within it.
func (w *Worker) strategy(wk *work) (BreakFunc, RunOptions) {
	switch wk.state {
	case StateInitializing:
		return FlattenByNumberAndComponent, RunOptions{}
	case StateReconciling:
		epoch, iteration := wk.attempt/reconcileStride, wk.attempt%reconcileStride
		r := rand.New(rand.NewPCG(uint64(epoch), 0))
		return ShiftOrder(PermuteOrder(FlattenByNumberAndComponent, r), iteration, reconcileStride),
			RunOptions{Workers: w.cfg.ReconcileWorkers, Priority: LowestIndexFirst}
	}
	return ByNumberAndComponent, RunOptions{Workers: w.cfg.Workers, Priority: CriticalPathFirst}
}

func superseded(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errSuperseded)
}

// apply applies the desired payload once.
func (w *Worker) apply(ctx context.Context, wk *work) error {
	logger := klog.FromContext(ctx).WithValues("release", wk.desired.String(), "state", wk.state, "attempt", wk.attempt)
	ctx = klog.NewContext(ctx, logger)
	timeout := w.applyTimeout(wk.state)
	applyCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := w.clock.AfterFunc(timeout, func() { cancel(ErrApplyTimeout) })
	defer timer.Stop()

	w.mu.Lock()
	if w.desired != wk.desired {
		w.mu.Unlock()
		return errSuperseded
	}
	w.cancel = cancel
	baseline := *w.status.DeepCopy()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.cancel = nil
		w.mu.Unlock()
	}()

	prog := &applyProgress{
		reporter: NewReporter(baseline, w.clock, w.publish),
		status: Status{
			Generation:  wk.generation,
			State:       wk.state,
			Completed:   wk.completed,
			Initial:     wk.state == StateInitializing,
			Reconciling: wk.state == StateReconciling,
			Actual:      wk.desired,
		},
	}
	p, err := w.load(applyCtx, wk.desired)
	if err != nil {
		if superseded(applyCtx) {
			return errSuperseded
		}
		w.cfg.Events.Event(EventTypeWarning, "LoadPayloadFailed", err.Error())
		prog.fail(err)
		return err
	}
	if p.Release.Version != "" {
		prog.status.Actual.Version = p.Release.Version
	}
	prog.total = len(p.Manifests)

	tasks := NewTasks(p.Manifests, w.cfg.Backoff)
	breakFn, opts := w.strategy(wk)
	graph, err := BuildGraph(tasks, breakFn)
	if err != nil {
		err = &UpdateError{Nested: err, Effect: EffectFail, Reason: "UpdatePayloadIntegrity", Message: fmt.Sprintf("The payload %s cannot be ordered: %v", wk.desired, err)}
		w.cfg.Events.Event(EventTypeWarning, "InvalidPayload", err.Error())
		prog.fail(err)
		return err
	}
	if wk.state == StateInitializing {
		opts.Workers = len(graph.Nodes)
	}
	logger.V(2).Info("Applying payload", "manifests", len(tasks), "nodes", len(graph.Nodes), "workers", opts.Workers)

	errs := RunGraphWith(applyCtx, graph, opts, func(ctx context.Context, tasks []*Task) error {
		for _, t := range tasks {
			if err := ctx.Err(); err != nil {
				return err
			}
			prog.update()
			if err := t.Run(ctx, w.clock, w.cfg.Applier, wk.state); err != nil {
				if EffectOf(err) != EffectReport {
					return err
				}
				prog.addReport(err)
			}
			prog.inc()
		}
		return nil
	})
	if len(errs) > 0 {
		if superseded(applyCtx) {
			return errSuperseded
		}
		err := Summarize(errs)
		if errors.Is(context.Cause(applyCtx), ErrApplyTimeout) {
			err = timedOut(prog.current(), timeout, err)
		}
		if err == nil {
			err = errors.Join(errs...)
		}
		w.cfg.Events.Event(EventTypeWarning, "ApplyFailed", err.Error())
		prog.fail(err)
		return err
	}
	prog.complete()
	if wk.state != StateReconciling {
		w.cfg.Events.Event(EventTypeNormal, "PayloadApplied", fmt.Sprintf("Applied %d manifests of %s", len(tasks), prog.status.Actual))
	}
	return nil
}

// timedOut describes an apply stopped by the apply timeout, with the summary of the
// errors it met, if any.
func timedOut(s Status, timeout time.Duration, summary error) error {
	msg := fmt.Sprintf("Applying %s timed out after %s with %d of %d manifests applied", s.Actual, timeout, s.Done, s.Total)
	effect := EffectFail
	if summary != nil {
		msg += ": " + summary.Error()
		effect = EffectOf(summary)
	}
	return &UpdateError{Nested: errors.Join(ErrApplyTimeout, summary), Effect: effect, Reason: "UpdatePayloadTimedOut", Message: msg}
}

// load returns the payload of desired, loading it when it is not the one loaded last.
func (w *Worker) load(ctx context.Context, desired Release) (*Payload, error) {
	if w.loaded != nil && w.loadedFor == desired {
		return w.loaded, nil
	}
	p, err := w.cfg.Loader.LoadPayload(ctx, desired)
	if err == nil && p == nil {
		err = errors.New("the loader returned no payload")
	}
	if err == nil && desired.Version != "" && p.Release.Version != "" && p.Release.Version != desired.Version {
		err = fmt.Errorf("the payload carries version %q", p.Release.Version)
	}
	if err != nil {
		return nil, &UpdateError{
			Nested:  err,
			Effect:  EffectFail,
			Reason:  "UpdatePayloadRetrievalFailed",
			Message: fmt.Sprintf("Could not load the payload %s: %v", desired, err),
		}
	}
	w.loaded, w.loadedFor = p, desired
	w.cfg.Events.Event(EventTypeNormal, "PayloadLoaded", fmt.Sprintf("Loaded %d manifests of %s", len(p.Manifests), desired))
	return p, nil
}

// applyProgress counts the manifests of one apply and reports through the reporter.
type applyProgress struct {
	reporter *Reporter

	mu         sync.Mutex
	status     Status
	done       int
	total      int
	reportErrs []error
}

// snapshot returns the status with the current counts; the caller holds mu.
func (p *applyProgress) snapshot() Status {
	s := p.status
	s.Done, s.Total = p.done, p.total
	return s
}

func (p *applyProgress) current() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snapshot()
}

func (p *applyProgress) update() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reporter.Report(p.snapshot())
}

func (p *applyProgress) inc() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
}

func (p *applyProgress) addReport(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reportErrs = append(p.reportErrs, err)
}

func (p *applyProgress) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.snapshot()
	s.Failure = NewFailure(err)
	p.reporter.Report(s)
}

// complete reports a finished apply; errors with EffectReport are its failure.
func (p *applyProgress) complete() {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.snapshot()
	s.Completed++
	s.Initial, s.Reconciling = false, true
	s.State = StateReconciling
	s.Failure = NewFailure(Summarize(p.reportErrs))
	p.reporter.Report(s)
}
