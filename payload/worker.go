package payload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/payload/manifest"
)

// defaultNotifyInterval is the least time between two status writes that are not edges
// (Config.NotifyInterval).
const defaultNotifyInterval = time.Second

// Config configures a Worker. Loader and Applier are required; every other zero field
// means its documented default.
type Config struct {
	// Loader retrieves and loads the payload of a desired release.
	Loader Loader
	// Applier applies one manifest.
	Applier Applier
	// Deleter removes the objects of manifests marked for deletion; a payload with such
	// a manifest fails to apply without one.
	Deleter Deleter
	// Readiness, when set, is waited for after every manifest applied while
	// initializing or updating, so that the next run level starts on ready objects
	// (Policy.ReadinessTimeout, Policy.ReadinessEffect). Reconciling does not wait.
	Readiness Readiness
	// Preconditions, when set, must pass before an update starts, unless the desired
	// release is forced.
	Preconditions Preconditions
	// Include decides which manifests of a payload belong to the cluster: a non-nil
	// error excludes the manifest (manifest.Inclusion.Include ships the
	// cluster-version operator's rules). Nil includes every manifest.
	Include func(m *manifest.Manifest) error
	// Policy paces the worker; the zero value is every default.
	Policy Policy
	// Status is the last status the host persisted; the worker carries on from it at
	// once: with Desired, or with the status's own Release when Desired is zero, until
	// Update says otherwise.
	Status Status
	// Desired is the release the host wants when the worker is made, and Generation
	// its generation, as the host would pass them to Update. A host that knows them
	// (it read its resource) sets them, so that the worker's first apply is of that
	// release whatever the order of Start and Update: given a persisted Status alone,
	// a worker started before Update resumes the persisted release, which may be one
	// the host no longer wants.
	Desired    Release
	Generation int64
	// StatusWriter, when set, persists every new status: edges (release, state,
	// generation, failure, interruption) at once, progress at most once per
	// NotifyInterval.
	StatusWriter StatusWriter
	// NotifyInterval is the least time between two progress writes (default 1s).
	NotifyInterval time.Duration
	// FlushTimeout bounds the last status write, which Start makes after its context
	// ended and waits for before it returns (default 10s).
	FlushTimeout time.Duration
	// OnResult, when set, is called on the worker's goroutine with the Result of every
	// decision that follows an apply or emits events; Status then returns the status
	// that decision made. The host emits the events with its recorder.
	OnResult func(converge.Result)
	// Clock times retries, intervals, timeouts and status writes; nil is the real clock.
	Clock clock.WithDelayedExecution
	// Jitter returns a random number in [0, 1) that spreads retries; nil is
	// math/rand/v2's Float64. The worker calls it from one goroutine at a time.
	Jitter func() float64
}

// Worker keeps a cluster at a desired payload: Update says which release, Start runs
// the loop that applies it. Every decision is Decide's; the loop only waits and acts:
// it applies a release the first time with Initializing (every component at once), a
// new release with Updating (run levels in order, waiting for readiness), and then
// keeps Reconciling every Policy.Interval; a failed apply is retried with backoff. A
// new desired release cancels the apply in flight, which is not a failure. Stopping
// the worker (ending Start's context) is not a failure either: the status says the
// apply was interrupted, and a worker started again, the same one or a new one given
// the persisted status, carries on exactly where it stopped.
//
// The pools are bounded in every state (Policy.Workers, InitializingWorkers,
// ReconcileWorkers). A panic or runtime.Goexit in host code fails what it was doing,
// never the host. A Worker is safe for concurrent use; Start runs one loop at a time.
type Worker struct {
	cfg      Config
	policy   Policy
	zones    converge.Zones
	clock    clock.WithDelayedExecution
	wake     chan struct{}
	notifier *notifier

	// jitterMu serializes the calls of Config.Jitter, which the pool's goroutines share.
	jitterMu sync.Mutex

	mu         sync.Mutex
	running    bool
	desired    Release
	generation int64
	status     Status
	// version grows with every change of status, for the notifier.
	version uint64
	// cancel cancels the apply in flight, of the release applying.
	cancel   context.CancelCauseFunc
	applying Release

	// The payload loaded last, owned by the loop.
	loaded    *Payload
	loadedFor Release
}

// NewWorker validates cfg, loads the time zones of its Policy.Windows, and returns a
// worker. A nil or typed-nil Loader or Applier, a typed-nil optional interface, a bad
// Policy or Status, a negative NotifyInterval or FlushTimeout, or a window's time
// zone that does not load, is an error matching converge.ErrInvalid that names every
// problem ("payload: invalid config: Loader is required").
func NewWorker(cfg Config) (*Worker, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	zones, err := converge.Zones(nil).Load(cfg.Policy.Windows)
	if err != nil {
		return nil, input.Invalid("payload", "config", input.Problems(err, "Policy: windows: ")...)
	}
	w := &Worker{
		cfg:    cfg,
		policy: cfg.Policy.withDefaults(),
		zones:  zones,
		clock:  cfg.Clock,
		wake:   make(chan struct{}, 1),
		status: *cfg.Status.DeepCopy(),
	}
	if w.clock == nil {
		w.clock = clock.RealClock{}
	}
	if w.cfg.Jitter == nil {
		w.cfg.Jitter = rand.Float64
	}
	// The release the host wants, or else the persisted one, is applied at once;
	// Update may replace it.
	switch {
	case !cfg.Desired.IsZero():
		w.desired, w.generation = cfg.Desired, cfg.Generation
	case !w.status.Release.IsZero():
		w.desired, w.generation = w.status.Release, w.status.ObservedGeneration
	}
	if cfg.StatusWriter != nil {
		interval := cfg.NotifyInterval
		if interval == 0 {
			interval = defaultNotifyInterval
		}
		w.notifier = newNotifier(interval, w.clock, w.latest, func(ctx context.Context, s Status) error {
			return guard("writing the status", func() error { return cfg.StatusWriter.WriteStatus(ctx, s) })
		})
	}
	return w, nil
}

// Status returns a copy of the latest status.
func (w *Worker) Status() Status {
	if w == nil {
		return Status{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.status.DeepCopy()
}

// Update sets the desired release and its generation and returns the current status.
// A release that is not the one applying (Release.Same) cancels the apply in flight
// before Update returns, so that nothing more of it is applied, unless Policy.Paused
// or closed Policy.Windows keep that release from starting: then the apply in flight
// finishes. An empty release is ignored.
func (w *Worker) Update(generation int64, desired Release) Status {
	if w == nil {
		return Status{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if desired.IsZero() {
		return *w.status.DeepCopy()
	}
	changed := generation != w.generation || desired != w.desired
	w.generation, w.desired = generation, desired
	if w.cancel != nil && !w.applying.Same(desired) && !w.holding(desired) {
		w.cancel(errSuperseded)
		w.cancel = nil
	}
	if changed {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return *w.status.DeepCopy()
}

// validate reports every problem of cfg.
func (cfg *Config) validate() error {
	problems := input.Fields(
		input.FieldValue{Name: "Loader", Value: cfg.Loader, Required: true},
		input.FieldValue{Name: "Applier", Value: cfg.Applier, Required: true},
		input.FieldValue{Name: "Deleter", Value: cfg.Deleter},
		input.FieldValue{Name: "Readiness", Value: cfg.Readiness},
		input.FieldValue{Name: "Preconditions", Value: cfg.Preconditions},
		input.FieldValue{Name: "StatusWriter", Value: cfg.StatusWriter},
	)
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"NotifyInterval", cfg.NotifyInterval}, {"FlushTimeout", cfg.FlushTimeout}} {
		if d.d < 0 {
			problems = append(problems, fmt.Sprintf("%s %s is negative", d.name, d.d))
		}
	}
	problems = append(problems, input.Problems(cfg.Policy.validate(), "Policy: ")...)
	problems = append(problems, input.Problems(cfg.Status.validate(), "Status: ")...)
	return input.Invalid("payload", "config", problems...)
}

// jitter draws a number in [0, 1) from Config.Jitter.
func (w *Worker) jitter() float64 {
	w.jitterMu.Lock()
	defer w.jitterMu.Unlock()
	return w.cfg.Jitter()
}

// errSuperseded cancels an apply whose release was replaced by Update.
var errSuperseded = errors.New("payload: apply superseded by a new desired release")

// errApplyTimeout cancels an apply that ran longer than Policy.ApplyTimeout.
var errApplyTimeout = errors.New("payload: apply timed out")

// Start runs the worker until ctx ends and returns once every goroutine it started has
// returned and, with a StatusWriter, the last status is written: once ctx has ended,
// Start writes the status it stopped at, often the interrupted one, and waits for that
// write up to Config.FlushTimeout. The status then says whether an apply was
// interrupted. Calling Start while it runs, with a nil context, or on a Worker not
// made by NewWorker is an error.
func (w *Worker) Start(ctx context.Context) error {
	if w == nil || w.wake == nil {
		return input.NotMade("payload", "Worker")
	}
	if ctx == nil {
		return input.Invalidf("payload", "Start arguments", "nil context")
	}
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
			w.notifier.run(ctx)
		}()
	}
	err := w.loop(ctx)
	wg.Wait()
	if w.notifier != nil {
		// The last status, often the interrupted one, is written even though ctx ended.
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), orDefault(w.cfg.FlushTimeout, defaultFlushTimeout))
		defer cancel()
		w.notifier.deliver(flushCtx)
	}
	return err
}

// defaultFlushTimeout bounds the last status write of a stopping worker
// (Config.FlushTimeout).
const defaultFlushTimeout = 10 * time.Second

// publish makes s the worker's status.
func (w *Worker) publish(s Status) {
	w.mu.Lock()
	w.status = s
	w.version++
	w.mu.Unlock()
}

// latest returns a copy of the status and its version.
func (w *Worker) latest() (Status, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.status.DeepCopy(), w.version
}

// notify tells the notifier, if any, that the status may have changed. The worker's
// goroutines call it right before they block (a host call, the loop's wait), never
// between two changes of the status: the notifier then reads a status that stands
// still, and never writes one caught between the progress of an apply's last manifest
// and the decision that ends the apply, which come from two goroutines.
func (w *Worker) notify() {
	if w.notifier != nil {
		w.notifier.poke()
	}
}

// progress records that done manifests of release are applied, if that is more than
// the status says.
func (w *Worker) progress(release Release, done, total int32) {
	w.mu.Lock()
	s := &w.status
	if !s.Release.Same(release) || (done <= s.Done && total == s.Total) {
		w.mu.Unlock()
		return
	}
	now := w.clock.Now()
	if done > s.Done {
		at := now.Truncate(time.Second)
		s.Done, s.LastProgressTime = min(done, total), metaTime(at)
	}
	s.Total, s.Done = total, min(s.Done, total)
	setConditions(s, w.policy, now)
	w.version++
	w.mu.Unlock()
}

// report hands a result to the host.
func (w *Worker) report(ctx context.Context, r converge.Result) {
	if w.cfg.OnResult == nil {
		return
	}
	w.notify()
	if err := guard("OnResult", func() error { w.cfg.OnResult(r); return nil }); err != nil {
		klog.FromContext(ctx).Error(err, "OnResult failed")
	}
}

func metaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// holding reports whether the pause or the windows keep desired, a release that is
// not the one applying, from starting now, so that the apply in flight finishes.
func (w *Worker) holding(desired Release) bool {
	hs, _ := holds(&Input{Desired: desired, Policy: w.policy, Zones: w.zones, Now: w.clock.Now()})
	return hs != nil
}
