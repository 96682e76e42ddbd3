package payload_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

var (
	simSeed      = flag.Uint64("seed", 0, "replay the payload simulation schedule of this seed (0: run -schedules schedules)")
	simSchedules = flag.Int("schedules", 1000, "number of payload simulation schedules")
)

// The simulated releases; simPayload names every object after its release, so that a
// host call says which release it is for.
var simReleases = []payload.Release{
	{Version: "1.0.0", Image: "registry.example/release@sha256:aaaa"},
	{Version: "1.1.0", Image: "registry.example/release@sha256:bbbb"},
	{Version: "1.2.0", Image: "registry.example/release@sha256:cccc"},
}

const simVersionAnnotation = "sim.converge.dev/version"

// simPayload is eleven manifests over four run levels and three components: a removal,
// a dependency across components and a Job, which nothing passes.
func simPayload(r payload.Release) *payload.Payload {
	v := r.Version
	m := func(file, kind, namespace, name string, deps ...string) manifest.Manifest {
		mf := newManifest(file, kind, namespace, name+"-"+v, deps...)
		mf.Object.SetAnnotations(map[string]string{simVersionAnnotation: v})
		return mf
	}
	p := &payload.Payload{Release: r, Manifests: []manifest.Manifest{
		m("0000_10_a_00_ns.yaml", "Namespace", "", "a"),
		m("0000_10_b_00_ns.yaml", "Namespace", "", "b"),
		m("0000_10_c_00_ns.yaml", "Namespace", "", "c"),
		m("0000_20_a_00_cm.yaml", "ConfigMap", "a", "one"),
		m("0000_20_a_01_old.yaml", "ConfigMap", "a", "old"),
		m("0000_20_b_00_cm.yaml", "ConfigMap", "b", "one", "ConfigMap/a/one-"+v),
		m("0000_20_c_00_cm.yaml", "ConfigMap", "c", "one"),
		m("0000_25_a_00_job.yaml", "Job", "a", "migrate"),
		m("0000_30_a_00_cm.yaml", "ConfigMap", "a", "two"),
		m("0000_30_b_00_cm.yaml", "ConfigMap", "b", "two"),
		m("0000_30_c_00_cm.yaml", "ConfigMap", "c", "two"),
	}}
	p.Manifests[4].Delete = true
	p.Manifests[7].GVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	return p
}

// simDeps returns, for every manifest of p applied in state, the manifests that must
// have ended well in the same apply before it starts: the files before it of its
// component and run level, every lower run level when updating, every manifest before
// a Job and the Job before every manifest after it, and its depends-on references.
func simDeps(p *payload.Payload, state payload.State) map[string][]string {
	deps := map[string][]string{}
	isJob := func(m manifest.Manifest) bool { return m.GVK.Kind == "Job" }
	for i, m := range p.Manifests {
		level, component, _ := manifest.ParseRunLevel(m.File)
		for _, o := range p.Manifests[:i] {
			l, c, _ := manifest.ParseRunLevel(o.File)
			if (l == level && c == component) || (state == payload.StateUpdating && l < level) || isJob(m) || isJob(o) {
				deps[m.Ref()] = append(deps[m.Ref()], o.Ref())
			}
		}
		deps[m.Ref()] = append(deps[m.Ref()], m.DependsOn...)
	}
	return deps
}

// simDepsCache holds simDeps of every release and state.
var simDepsCache sync.Map

func simDepsOf(version string, state payload.State) map[string][]string {
	key := version + "/" + string(state)
	if deps, ok := simDepsCache.Load(key); ok {
		return deps.(map[string][]string)
	}
	deps := simDeps(simPayload(payload.Release{Version: version}), state)
	simDepsCache.Store(key, deps)
	return deps
}

// simPolicy: every pool above one worker, readiness polled and bounded, manifests tried
// twice, the defaults' backoffs.
var simPolicy = payload.Policy{
	Interval:            metav1.Duration{Duration: time.Minute},
	ApplyTimeout:        metav1.Duration{Duration: 5 * time.Minute},
	ManifestAttempts:    2,
	Workers:             2,
	InitializingWorkers: 3,
	ReconcileWorkers:    2,
	ReadinessPoll:       metav1.Duration{Duration: 5 * time.Second},
	ReadinessTimeout:    metav1.Duration{Duration: 20 * time.Second},
}

// simPools is the pool of each state, as simPolicy says.
var simPools = map[payload.State]int{payload.StateInitializing: 3, payload.StateUpdating: 2, payload.StateReconciling: 2}

// simVerdict is how the world answers a host call.
type simVerdict int

const (
	verdictOK          simVerdict = iota
	verdictFail                   // an error the applier retries
	verdictReport                 // an error of EffectReport
	verdictHang                   // the call ignores its context until the simulator answers again
	verdictPanic                  // the call panics
	verdictGoexit                 // the call calls runtime.Goexit
	verdictNotReady               // a readiness check that finds the object not ready
	verdictUnknownKind            // the kind has no resource on the server
	verdictCancelled              // the call returns its context's error, as a call that honours it does
	verdictNotFound               // a delete that finds the object gone
)

var verdictNames = map[simVerdict]string{verdictOK: "ok", verdictFail: "fail", verdictReport: "report", verdictHang: "hang", verdictPanic: "panic",
	verdictGoexit: "goexit", verdictNotReady: "not ready", verdictUnknownKind: "unknown kind", verdictCancelled: "cancelled", verdictNotFound: "not found"}

// simCall is a host call waiting for the world's answer.
type simCall struct {
	kind    string // load, check, apply, delete, ready, result
	version string // of the release the call is for
	ref     string
	id      string // "ConfigMap a/one-1.0.0", as the worker's messages name the object
	state   payload.State
	ctx     context.Context
	result  converge.Result
	status  payload.Status // the status the decision made, for a result
	epoch   int            // the worker the call comes from
	hung    bool
	seen    bool // the simulator has taken the call in
	reply   chan simVerdict
}

func (c *simCall) key() string { return c.kind + " " + c.version + " " + c.ref }

func (c *simCall) task() bool { return c.kind == "apply" || c.kind == "delete" || c.kind == "ready" }

// sim is one schedule: a world of objects, a clock and host calls that wait until the
// simulator answers them, one at a time, in an order the seed drives, while the
// worker's goroutines run for real in a synctest bubble. After every answer the
// simulator waits until every goroutine of the bubble is blocked, so that a seed
// replays, and checks the invariants. The status writer's notifier is the one
// goroutine the schedule does not order: it reads the status when it writes, beside
// the loop, so a few seeds in a thousand can take another path after a write.
type sim struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	writes *rand.Rand // the outcomes of status writes
	jitter *rand.Rand
	clk    *simClock
	log    []string
	faults bool
	failed bool

	mu          sync.Mutex // guards what host goroutines touch: pending, persisted, violations
	pending     []*simCall
	persisted   payload.Status
	violations  []string
	liveEpoch   int  // the worker whose status writes land; those of a crashed one are lost
	writeFaults bool // status writes fail at times

	objects map[string]bool // what exists in the cluster, by ref

	worker      *payload.Worker
	epoch       int // of the last worker made
	workerEpoch int // of the worker running
	cancel      context.CancelFunc
	done        chan error
	desired     payload.Release // what the host wants
	gen         int64
	told        payload.Release // what the running worker was told, or resumed from its status

	// The apply in progress, between two reported decisions.
	started    bool
	version    string // of the release it applies
	finished   map[string]bool
	startedRef map[string]bool
	noKind     map[string]bool
	deleted    []string
	applyState payload.State
	// No pass of dueVersion starts before due.
	due        time.Time
	dueVersion string
	resumeBy   *payload.Status // the status a restart carries on from
	last       payload.Status  // the worker's status after the last step
	stopping   bool
	applies    int
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

// act plays a verdict in the host call that got it.
func act(ctx context.Context, v simVerdict, what string) error {
	switch v {
	case verdictFail:
		return errors.New("apiserver refused " + what)
	case verdictReport:
		return &payload.UpdateError{Reason: "Slow", Message: what + " is slow", Effect: payload.EffectReport}
	case verdictPanic:
		panic("host bug on " + what)
	case verdictGoexit:
		runtime.Goexit()
	case verdictUnknownKind:
		return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, SearchedVersions: []string{"v1"}}
	case verdictCancelled:
		return ctx.Err()
	case verdictNotFound:
		return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, what)
	}
	return nil
}

func versionOf(m *manifest.Manifest) string { return m.Object.GetAnnotations()[simVersionAnnotation] }

// idOf names m's object as the worker's events do.
func idOf(m *manifest.Manifest) string {
	return fmt.Sprintf("%s %q", strings.ToLower(m.GVK.Kind), m.Namespace()+"/"+m.Name())
}

// config returns the hooks of the worker of epoch: every host call asks the simulator.
func (s *sim) config(epoch int, w **payload.Worker) payload.Config {
	state := func() payload.State { return (*w).Status().State }
	return payload.Config{
		Loader: payload.LoaderFunc(func(ctx context.Context, r payload.Release) (*payload.Payload, error) {
			if v := s.call(&simCall{kind: "load", version: r.Version, ctx: ctx, epoch: epoch}); v != verdictOK {
				return nil, act(ctx, v, "the registry")
			}
			return simPayload(r), nil
		}),
		Preconditions: payload.PreconditionsFunc(func(ctx context.Context, _, to payload.Release) error {
			if v := s.call(&simCall{kind: "check", version: to.Version, ctx: ctx, epoch: epoch}); v != verdictOK {
				return fmt.Errorf("not upgradeable: %w", act(ctx, v, "the preconditions"))
			}
			return nil
		}),
		Applier: payload.ApplierFunc(func(ctx context.Context, m *manifest.Manifest, st payload.State) error {
			return act(ctx, s.call(&simCall{kind: "apply", version: versionOf(m), ref: m.Ref(), id: idOf(m), state: st, ctx: ctx, epoch: epoch}), m.Ref())
		}),
		Deleter: payload.DeleterFunc(func(ctx context.Context, m *manifest.Manifest) error {
			return act(ctx, s.call(&simCall{kind: "delete", version: versionOf(m), ref: m.Ref(), id: idOf(m), state: state(), ctx: ctx, epoch: epoch}), m.Ref())
		}),
		Readiness: payload.ReadinessFunc(func(ctx context.Context, m *manifest.Manifest) error {
			switch v := s.call(&simCall{kind: "ready", version: versionOf(m), ref: m.Ref(), id: idOf(m), state: state(), ctx: ctx, epoch: epoch}); v {
			case verdictNotReady:
				return errors.New(m.Ref() + " is not ready")
			case verdictFail:
				return &payload.UpdateError{Reason: "Degraded", Message: m.Ref() + " is degraded", Effect: payload.EffectFail}
			default:
				return act(ctx, v, m.Ref())
			}
		}),
		StatusWriter: payload.StatusWriterFunc(func(_ context.Context, st payload.Status) error { return s.write(epoch, st) }),
		OnResult: func(r converge.Result) {
			s.call(&simCall{kind: "result", result: r, status: (*w).Status(), epoch: epoch})
		},
		Clock:  s.clk,
		Policy: simPolicy,
		Jitter: s.jitter.Float64,
	}
}

// write persists a status, or fails as a store can: a conflict or an error. A write of
// a crashed worker is lost. Persisted progress must never go back within a release.
func (s *sim) write(epoch int, st payload.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.liveEpoch {
		return errors.New("the process is gone")
	}
	if s.writeFaults {
		switch r := s.writes.IntN(100); {
		case r < 10:
			return fmt.Errorf("store: %w", converge.ErrConflict)
		case r < 15:
			return errors.New("store unavailable")
		}
	}
	before := s.persisted
	if sameStint(before, st) && st.Done < before.Done {
		s.violations = append(s.violations, fmt.Sprintf("persisted progress went back within %s: %d after %d", st.Release, st.Done, before.Done))
	}
	s.persisted = *st.DeepCopy()
	return nil
}

// sameStint reports whether two statuses are of one stint of one release: no Update
// came between them (the generation is the same), so that the release was not started
// again.
func sameStint(a, b payload.Status) bool {
	return len(a.History) > 0 && len(b.History) > 0 && a.History[0].StartedTime.Equal(&b.History[0].StartedTime) &&
		a.Release.Same(b.Release) && a.ObservedGeneration == b.ObservedGeneration
}

func newSim(t *testing.T, seed uint64) *sim {
	s := &sim{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0)), writes: rand.New(rand.NewPCG(seed, 1)),
		jitter: rand.New(rand.NewPCG(seed, 2)), clk: newSimClock(t0), faults: true, writeFaults: true, objects: map[string]bool{}}
	for _, r := range simReleases {
		for _, m := range simPayload(r).Manifests {
			if m.Delete && s.rng.IntN(2) == 0 { // some objects to remove exist, some never did
				s.objects[m.Ref()] = true
			}
		}
	}
	return s
}

// start runs a new worker from st, or the same one again (w), whose hooks are of the
// epoch it was made in.
func (s *sim) start(w *payload.Worker, st payload.Status) {
	if w == nil {
		s.epoch++
		s.workerEpoch = s.epoch
		var made *payload.Worker
		cfg := s.config(s.epoch, &made)
		cfg.Status = st
		var err error
		if made, err = payload.NewWorker(cfg); err != nil {
			s.fail("NewWorker: %v", err)
		}
		w = made
		s.told = st.Release
	}
	s.mu.Lock()
	s.liveEpoch = s.workerEpoch
	s.mu.Unlock()
	s.worker = w
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- w.Start(ctx) }()
	s.boundary()
	s.settle()
}

// boundary ends the apply in progress, as far as the simulator tracks it.
func (s *sim) boundary() {
	s.started, s.finished, s.startedRef, s.noKind, s.deleted, s.applyState = false, map[string]bool{}, map[string]bool{}, map[string]bool{}, nil, ""
}

// update sets the desired release, as the host does.
func (s *sim) update(r payload.Release) {
	s.gen++
	s.desired = r
	s.logf("Update(%d, %s %s force=%t)", s.gen, r, r.Image, r.Force)
	s.worker.Update(s.gen, r)
	if !r.Same(s.told) {
		s.due, s.dueVersion, s.resumeBy = time.Time{}, "", nil
	}
	s.told = r
	s.settle()
}

// settle waits until the bubble is idle and takes in what the worker asked: the calls
// whose context ended are answered as a call that honours its context answers, results
// are taken in, until nothing moves.
func (s *sim) settle() {
	for {
		synctest.Wait()
		s.mu.Lock()
		slices.SortFunc(s.pending, func(a, b *simCall) int { return strings.Compare(a.key(), b.key()) })
		var fresh []*simCall
		for _, c := range s.pending {
			if !c.seen {
				c.seen = true
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

// autoAnswer returns the call the world answers by itself: a result, or a call whose
// context ended that does not hang.
func (s *sim) autoAnswer() *simCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.pending {
		if c.kind == "result" || (!c.hung && c.ctx != nil && c.ctx.Err() != nil) {
			return c
		}
	}
	return nil
}

// arrive takes a new call in and checks what must hold when a call starts.
func (s *sim) arrive(c *simCall) {
	if c.kind == "result" {
		s.result(c)
		return
	}
	s.logf("%s %s %s %s (ctx done: %t)", c.kind, c.version, c.state, c.ref, c.ctx.Err() != nil)
	if c.version != s.told.Version {
		s.fail("%s of %s started once the worker was told %s", c.kind, c.version, s.told)
	}
	if !s.started {
		s.started, s.version = true, c.version
		s.applies++
		if s.dueVersion == c.version && s.clk.Now().Before(s.due) {
			s.fail("a pass of %s started at %s, before its interval or backoff ended at %s", c.version, s.clk.Now().Format("15:04:05.000000"), s.due.Format("15:04:05.000000"))
		}
	}
	if !c.task() {
		return
	}
	if s.applyState == "" {
		s.applyState = c.state
		if want := s.resumeBy; want != nil {
			s.resumeBy = nil
			state := want.State
			if state == "" {
				state = payload.StateInitializing
			}
			if want.Release.Version == c.version && c.state != state {
				s.fail("a restart from %s/%s applied as %s", want.Release, want.State, c.state)
			}
		}
	}
	if s.noKind[c.ref] {
		s.fail("%s was tried again in the apply that found its kind unknown", c.ref)
	}
	if !s.startedRef[c.ref] {
		s.startedRef[c.ref] = true
		for _, dep := range simDepsOf(c.version, c.state)[c.ref] {
			if !s.finished[dep] {
				s.fail("%s started while %s, which it depends on, had not finished (%s)", c.ref, dep, c.state)
			}
		}
	}
}

// result takes in a decision the worker reported.
func (s *sim) result(c *simCall) {
	st := c.status
	s.logf("result: requeue %s, events %v, %s/%s %d/%d failures %d interrupted %t", c.result.RequeueAfter, c.result.Events,
		st.Release, st.State, st.Done, st.Total, st.Failures, st.Interrupted)
	for _, e := range c.result.Events {
		if s.stopping && e.Type == converge.EventTypeWarning {
			s.fail("a stop emitted a warning: %v", e)
		}
		if e.Reason != "ManifestsDeleted" {
			continue
		}
		_, names, _ := strings.Cut(e.Message, ": ")
		for _, id := range strings.Split(names, ", ") {
			if !slices.Contains(s.deleted, id) {
				s.fail("%q names %s, which this apply did not remove (it removed %v)", e.Message, id, s.deleted)
			}
		}
	}
	if s.started {
		// The decision that follows an apply: the next pass of the release waits at least
		// the interval, or the backoff without jitter; a new release starts at once.
		p := simPolicy
		switch {
		case st.Interrupted || st.Release.Version != s.version:
			s.due, s.dueVersion = time.Time{}, ""
		case st.Failure != nil && st.Failure.Effect != payload.EffectReport:
			initial := p.Interval.Duration / 8
			s.due, s.dueVersion = s.clk.Now().Add(converge.Backoff{Initial: metav1.Duration{Duration: initial}, Max: p.Interval, FactorPercent: 200}.Delay(st.Failures, 0)), st.Release.Version
		default:
			s.due, s.dueVersion = s.clk.Now().Add(p.Interval.Duration), st.Release.Version
		}
	}
	s.boundary()
}

// answer gives c its verdict and records what it does in the world.
func (s *sim) answer(c *simCall, v simVerdict) {
	s.mu.Lock()
	i := slices.Index(s.pending, c)
	s.mu.Unlock()
	if i < 0 {
		s.fail("answered a call that is not pending: %s", c.key())
	}
	if v == verdictHang {
		s.logf("  %s hangs", c.key())
		c.hung = true
		return
	}
	if c.kind != "result" {
		s.logf("  %s -> %s", c.key(), verdictNames[v])
	}
	live := c.ctx == nil || c.ctx.Err() == nil
	switch {
	case c.kind == "apply" && (v == verdictOK || v == verdictReport):
		s.objects[c.ref] = true
		if live && c.state == payload.StateReconciling {
			s.finished[c.ref] = true
		}
	case c.kind == "delete" && v == verdictOK:
		if !s.objects[c.ref] {
			v = verdictNotFound
			s.logf("  (gone already)")
		} else {
			s.deleted = append(s.deleted, c.id)
			delete(s.objects, c.ref)
		}
		if live {
			s.finished[c.ref] = true
		}
	case c.kind == "delete" && v == verdictReport && live:
		s.finished[c.ref] = true // an error that is only reported does not hold dependents back
	case c.kind == "ready" && v == verdictOK && live:
		s.finished[c.ref] = true
	case c.kind == "apply" && v == verdictUnknownKind && live:
		s.noKind[c.ref] = true
	}
	s.reply(c, v)
}

// reply hands the verdict over.
func (s *sim) reply(c *simCall, v simVerdict) {
	s.mu.Lock()
	s.pending = slices.DeleteFunc(s.pending, func(p *simCall) bool { return p == c })
	s.mu.Unlock()
	c.reply <- v
}

// check holds after every step: what runs fits the pool, progress never goes back, and
// a worker with something to do is not idle.
func (s *sim) check() {
	s.mu.Lock()
	violations := slices.Clone(s.violations)
	var tasks []*simCall
	for _, c := range s.pending {
		if c.task() {
			tasks = append(tasks, c)
		}
	}
	pending := len(s.pending)
	s.mu.Unlock()
	if len(violations) > 0 {
		s.fail("%s", violations[0])
	}
	for _, c := range tasks {
		if c.state != tasks[0].state || c.version != tasks[0].version {
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
	if _, timers := s.clk.next(); pending == 0 && !timers && !s.told.IsZero() {
		s.fail("the worker waits for nothing while %s is to be applied", s.told)
	}
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

// restart stops the worker and starts it again: cleanly, the same one or a new one
// from the status it wrote last; or after a crash, a new one from the status written
// last before the crash. A new worker is told the desired release at once, or later.
func (s *sim) restart() {
	crash := s.rng.IntN(3) == 0
	s.stop(crash)
	s.mu.Lock()
	persisted := *s.persisted.DeepCopy()
	s.mu.Unlock()
	due, dueVersion := s.due, s.dueVersion
	s.due, s.dueVersion = time.Time{}, ""
	if !persisted.Interrupted && persisted.NextApplyTime != nil {
		s.due, s.dueVersion = persisted.NextApplyTime.Time, persisted.Release.Version
	}
	s.resumeBy = &persisted
	if !crash && s.rng.IntN(2) == 0 {
		s.logf("restart the same worker")
		s.due, s.dueVersion = due, dueVersion // it keeps its status in memory
		s.start(s.worker, payload.Status{})
		s.settle()
		return
	}
	s.logf("restart a new worker from %s/%s %d/%d (crash: %t)", persisted.Release, persisted.State, persisted.Done, persisted.Total, crash)
	s.start(nil, persisted)
	if got := s.worker.Status(); !reflect.DeepEqual(got, persisted) {
		s.fail("a new worker does not start from the persisted status: %+v, want %+v", got, persisted)
	}
	s.last = persisted
	s.settle()
	if s.rng.IntN(2) == 0 {
		s.update(s.desired)
	}
}

// step moves the clock: to the next timer, which fires, or part of the way.
func (s *sim) step() {
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

func (s *sim) verdict(c *simCall) simVerdict {
	if !s.faults {
		if c.kind == "ready" && s.rng.IntN(4) == 0 {
			return verdictNotReady
		}
		return verdictOK
	}
	r := s.rng.IntN(100)
	switch c.kind {
	case "apply", "delete":
		switch {
		case r < 8:
			return verdictFail
		case r < 10:
			return verdictReport
		case r < 14:
			return verdictHang
		case r < 16:
			return verdictPanic
		case r < 18:
			return verdictGoexit
		case r < 20 && c.kind == "apply":
			return verdictUnknownKind
		}
	case "ready":
		switch {
		case r < 15:
			return verdictNotReady
		case r < 18:
			return verdictFail
		case r < 20:
			return verdictHang
		}
	case "load", "check":
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
			s.restart()
		}
		s.check()
	}
	s.faults = false
	s.mu.Lock()
	s.writeFaults = false
	s.mu.Unlock()
	s.logf("faults stop")
	if s.desired != s.told {
		s.update(s.desired)
	}
	for i := 0; ; i++ {
		st := s.worker.Status()
		s.mu.Lock()
		idle := len(s.pending) == 0
		s.mu.Unlock()
		if idle && st.State == payload.StateReconciling && st.Release.Same(s.desired) && st.Failure == nil && !st.Interrupted && st.Completed > 0 {
			break
		}
		if i > 200 {
			s.fail("no convergence on %s within 200 steps after the faults stopped: %+v", s.desired, st)
		}
		if !s.answerOne(s.verdict) {
			s.step()
		}
		s.check()
	}
	s.stop(false)
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

// TestSimPayload drives the Worker, its pools of two and three workers running for
// real, through seeded schedules: host calls that block until the schedule answers
// them, in any order, with failures, hangs past their context, panics, runtime.Goexit,
// unknown kinds and readiness waits; bursts of Update to three releases, forced or
// not, through a mirror or not; stops and restarts of the same worker or of a new one,
// from the status persisted last, a crash losing the writes not yet made; failing and
// conflicting status writes; clock steps. After every step: no task starts before
// every task it depends on ended well in the same apply (run levels while updating,
// files of a component, a Job's barrier, depends-on), no more calls are in flight than
// the pool, no host call of a release starts once the worker was told another one
// (Update) or, restarted, carries on from its persisted one, no pass starts before its
// interval or backoff, a kind found unknown is not tried again in the same apply,
// ManifestsDeleted names only objects the apply removed, progress never goes back in
// memory nor in what is persisted, a stop is no failure nor warning, and no goroutine
// of the worker is left once Start returns. Once the faults stop, the worker reconciles
// the release last desired.
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
// goroutines run for real.
func TestSimPayloadReplays(t *testing.T) {
	// On one P the bubble's goroutines that wake together run in the order
	// they were woken (only a preemption could reorder them), so the
	// notifier reads the status at the same point of the loop in both runs,
	// however loaded the machine is.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
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
