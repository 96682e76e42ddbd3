// Command payload-apply applies an embedded payload of 30 manifests (5 run levels,
// 3 components, one Job) and one removal with the payload engine's sync worker and
// server-side apply: the Job as a barrier that the worker waits for (readiness),
// every component at once on a first install and run levels in order on an update,
// the ConfigMap marked release.openshift.io/delete removed, every manifest retried
// with backoff, a live progress line, then one reconcile pass that writes nothing.
//
// With no flags it uses client-go's fake dynamic client, in which one ConfigMap is
// refused twice before it is accepted, and a fake clock, and finishes in well under a
// second. -kubeconfig applies the payload to a real cluster in real time (namespace
// converge-payload-demo) and keeps the worker's status in the ConfigMap
// payload-apply-status of -namespace, so that a second run reconciles and a run with a
// new -release updates level by level. -simulate-job-controller completes the Job on
// an apiserver without kube-controller-manager. -leader-elect applies only while
// holding the Lease payload-apply in -namespace. -plan prints the dry-run plan and
// exits.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/payload"
)

//go:embed manifests/*.yaml removed/*.yaml
var embedded embed.FS

// releaseImage names where the release's manifests come from.
const releaseImage = "embedded://payload-apply/manifests"

// releaseAnnotation carries the release version on every object, so that a new release
// changes every object.
const releaseAnnotation = "payload-apply.converge.dev/release"

// options are the command line of the example.
type options struct {
	kubeconfig string
	release    string
	interval   time.Duration
	namespace  string
	// simulateJobs completes the payload's Jobs, for a cluster without a job controller.
	simulateJobs bool
	// leaderElect runs the work only while holding the Lease; identity names this
	// instance in the Lease and in the field manager.
	leaderElect                               bool
	identity                                  string
	leaseDuration, renewDeadline, retryPeriod time.Duration
}

func (o options) fieldManager() string {
	if o.leaderElect {
		return defaultFieldManager + "/" + o.identity
	}
	return defaultFieldManager
}

func main() {
	var o options
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "apply to the cluster of this kubeconfig file instead of an in-memory one")
	flag.StringVar(&o.release, "release", "1.0.0", "version of the release; every object is annotated with it, so a new version updates every object")
	flag.DurationVar(&o.interval, "interval", 0, "time between two reconciles (default 30s on a cluster, 3m in memory)")
	flag.BoolVar(&o.simulateJobs, "simulate-job-controller", false, "mark the payload's Job Complete, for an apiserver without kube-controller-manager (the integration tests' one)")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace of the status ConfigMap and of the leader-election Lease")
	flag.BoolVar(&o.leaderElect, "leader-elect", false, "apply only while holding the Lease payload-apply (needs -kubeconfig); the field manager becomes payload-apply/<identity>")
	flag.StringVar(&o.identity, "identity", "", "name of this instance in the Lease (default <host name>_<process id>)")
	flag.DurationVar(&o.leaseDuration, "lease-duration", 15*time.Second, "how long a follower waits before it takes a Lease that is not renewed")
	flag.DurationVar(&o.renewDeadline, "renew-deadline", 10*time.Second, "how long the leader tries to renew the Lease before it stops acting")
	flag.DurationVar(&o.retryPeriod, "retry-period", 2*time.Second, "time between two tries to acquire or renew the Lease")
	plan := flag.Bool("plan", false, "print the dry-run plan and exit")
	format := flag.String("format", "text", "plan format: text, mermaid or dot")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if *plan {
		err = printPlan(os.Stdout, *format)
	} else {
		err = run(ctx, o, os.Stdout)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payload-apply:", err)
		os.Exit(1)
	}
}

// loadManifests loads the 30 manifests the payload applies.
func loadManifests() ([]payload.Manifest, error) { return loadDir("manifests") }

// loadRemovals loads the manifests the payload removes (release.openshift.io/delete).
func loadRemovals() ([]payload.Manifest, error) { return loadDir("removed") }

func loadDir(dir string) ([]payload.Manifest, error) {
	sub, err := fs.Sub(embedded, dir)
	if err != nil {
		return nil, err
	}
	return payload.Load(sub, payload.LoadOptions{})
}

// releasePayload is the payload of a release: the manifests stamped with its version,
// and the removals, in file order.
func releasePayload(manifests, removals []payload.Manifest, release payload.Release) *payload.Payload {
	all := append(stampRelease(manifests, release.Version), removals...)
	slices.SortStableFunc(all, func(a, b payload.Manifest) int { return payload.CompareFiles(a.File, b.File) })
	return &payload.Payload{Release: release, Manifests: all}
}

// stampRelease returns copies of manifests annotated with the release version.
func stampRelease(manifests []payload.Manifest, version string) []payload.Manifest {
	stamped := make([]payload.Manifest, len(manifests))
	for i, m := range manifests {
		m.Object = m.Object.DeepCopy()
		annotations := m.Object.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[releaseAnnotation] = version
		m.Object.SetAnnotations(annotations)
		stamped[i] = m
	}
	return stamped
}

// printPlan prints the graph the worker runs while updating.
func printPlan(out io.Writer, format string) error {
	manifests, err := loadManifests()
	if err != nil {
		return err
	}
	graph, err := payload.BuildGraph(payload.NewTasks(manifests), payload.OrderRunLevels)
	if err != nil {
		return err
	}
	switch format {
	case "text":
		fmt.Fprint(out, graph)
	case "mermaid":
		fmt.Fprint(out, graph.Mermaid())
	case "dot":
		fmt.Fprint(out, graph.DOT())
	default:
		return fmt.Errorf("unknown plan format %q (want text, mermaid or dot)", format)
	}
	return nil
}

// progressLine prints the worker's statuses as one line rewritten in place on a
// terminal, one line per change otherwise.
type progressLine struct {
	mu   sync.Mutex
	out  io.Writer
	live bool
	last string
	// applier tells the run level of the manifest applied last.
	applier *clusterApplier
}

func newProgressLine(out io.Writer) *progressLine {
	live := false
	if f, ok := out.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			live = true
		}
	}
	return &progressLine{out: out, live: live}
}

func (p *progressLine) show(s payload.Status) {
	line := fmt.Sprintf("progress: %2d/%d manifests, run level %02d, %s", s.Done, s.Total, p.applier.level.Load(), s.State)
	if s.Failure != nil {
		line += ", failing: " + s.Failure.Reason
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if line == p.last {
		return
	}
	p.last = line
	if p.live {
		fmt.Fprintf(p.out, "\r%-90s", line)
		return
	}
	fmt.Fprintln(p.out, line)
}

func (p *progressLine) println(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.last != "" {
		fmt.Fprintln(p.out)
		p.last = ""
	}
	fmt.Fprintf(p.out, format+"\n", args...)
}

// run applies the payload, under leader election when o asks for it.
func run(ctx context.Context, o options, out io.Writer) error {
	if o.release == "" {
		return errors.New("-release must not be empty")
	}
	if o.interval < 0 {
		return fmt.Errorf("-interval must not be negative, got %s", o.interval)
	}
	if o.identity == "" {
		o.identity = defaultIdentity()
	}
	if o.kubeconfig == "" {
		if o.leaderElect {
			return errors.New("-leader-elect needs -kubeconfig")
		}
		c, err := memoryCluster(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		if err != nil {
			return err
		}
		return apply(ctx, c, o, newProgressLine(out))
	}
	c, err := realCluster(o.kubeconfig)
	if err != nil {
		return err
	}
	defer c.close()
	progress := newProgressLine(out)
	if !o.leaderElect {
		return apply(ctx, c, o, progress)
	}
	leases, err := coordinationv1client.NewForConfigAndClient(c.config, c.httpClient)
	if err != nil {
		return err
	}
	return runElected(ctx, election{
		leases:        leases,
		namespace:     o.namespace,
		identity:      o.identity,
		leaseDuration: o.leaseDuration,
		renewDeadline: o.renewDeadline,
		retryPeriod:   o.retryPeriod,
		report:        progress.println,
	}, func(ctx context.Context) error { return apply(ctx, c, o, progress) })
}

// decided is a result of the worker with the status it made.
type decided struct {
	payload.Result
	status payload.Status
}

// apply runs the sync worker until the payload has been applied and reconciled once.
func apply(ctx context.Context, c *cluster, o options, progress *progressLine) error {
	manifests, err := loadManifests()
	if err != nil {
		return err
	}
	removals, err := loadRemovals()
	if err != nil {
		return err
	}
	release := payload.Release{Version: o.release, Image: releaseImage}
	// In memory the fake clock runs a second per millisecond while anything waits on it,
	// also while the apply works, so an apply gets an hour of virtual time.
	var (
		interval     = 3 * time.Minute
		poll         = 2 * time.Second
		attempts     = int32(5)
		backoff      = payload.Backoff{Initial: metav1.Duration{Duration: 2 * time.Second}, Max: metav1.Duration{Duration: time.Minute}, FactorPercent: 200}
		applyTimeout = time.Hour
		deadline     = 60 * time.Second
	)
	if c.fake == nil {
		interval, poll, applyTimeout, deadline = 30*time.Second, time.Second, 5*time.Minute, 10*time.Minute
		attempts = 12
		backoff = payload.Backoff{Initial: metav1.Duration{Duration: 2 * time.Second}, Max: metav1.Duration{Duration: 20 * time.Second}, FactorPercent: 150}
		progress.println("applying %d manifests of release %s to the cluster of %s", len(manifests), o.release, o.kubeconfig)
	} else {
		progress.println("applying %d manifests to an in-memory cluster (ConfigMap %s is refused twice)", len(manifests), flakyConfigMap)
	}
	if o.interval > 0 {
		interval = o.interval
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, logr.Discard()), deadline)
	defer cancel()

	store := newStatusStore(c.client, o.namespace, o.fieldManager())
	persisted, err := store.load(ctx)
	if err != nil {
		return err
	}
	if !persisted.Release.IsZero() {
		progress.println("persisted status: release %s, %s, completed %d time(s)", persisted.Release.Version, persisted.State, persisted.Completed)
	}
	applier := &clusterApplier{
		client:       c.client,
		mapper:       c.mapper,
		fieldManager: o.fieldManager(),
		completeJobs: c.fake != nil || o.simulateJobs,
		clock:        c.clock,
	}
	progress.applier = applier
	applier.onError = func(m *payload.Manifest, err error) {
		progress.println("attempt failed: %s: %v", m.Ref(), err)
	}
	applier.onWait = func(m *payload.Manifest, err error) {
		progress.println("waiting for %s to be ready: %v", m.Ref(), err)
	}
	results := make(chan decided, 16)
	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	var worker *payload.Worker
	worker, err = payload.NewWorker(payload.Config{
		Loader: payload.LoaderFunc(func(_ context.Context, desired payload.Release) (*payload.Payload, error) {
			return releasePayload(manifests, removals, desired), nil
		}),
		Applier:   applier,
		Deleter:   applier,
		Readiness: applier,
		Clock:     c.clock,
		Policy: payload.Policy{
			Interval:         metav1.Duration{Duration: interval},
			ApplyTimeout:     metav1.Duration{Duration: applyTimeout},
			ManifestAttempts: attempts,
			ManifestBackoff:  backoff,
			Workers:          4,
			ReconcileWorkers: 2,
			ReadinessPoll:    metav1.Duration{Duration: poll},
			ReadinessTimeout: metav1.Duration{Duration: applyTimeout},
		},
		StatusWriter: payload.StatusWriterFunc(func(ctx context.Context, s payload.Status) error {
			progress.show(s)
			return store.save(ctx, s)
		}),
		OnResult: func(r payload.Result) {
			for _, e := range r.Events {
				progress.println("event: %s %s: %s", e.Type, e.Reason, e.Message)
			}
			select {
			case results <- decided{Result: r, status: worker.Status()}:
			case <-workerCtx.Done():
			}
		},
		Status: persisted,
	})
	if err != nil {
		return err
	}

	stopClock := c.runClock(ctx)
	defer stopClock()
	done := make(chan error, 1)
	go func() { done <- worker.Start(workerCtx) }()
	stop := func() error {
		stopWorker()
		return <-done
	}

	worker.Update(1, release)
	if err := awaitReconcile(ctx, c, persisted, progress, results); err != nil {
		_ = stop()
		return err
	}
	// The worker is stopped before its last status is saved, so that nothing overwrites it.
	if err := stop(); err != nil {
		return err
	}
	if err := store.save(ctx, worker.Status()); err != nil {
		return err
	}

	n, err := c.present(ctx, manifests)
	if err != nil {
		return err
	}
	progress.println("%d of %d objects are in the cluster", n, len(manifests))
	if c.flaky != nil {
		accepted := c.flaky.accepted.Load()
		progress.println("ConfigMap %s was accepted on attempt %d", flakyConfigMap, accepted)
		if accepted != 3 {
			return fmt.Errorf("ConfigMap %s: accepted on attempt %d, want 3", flakyConfigMap, accepted)
		}
	}
	return nil
}

// awaitReconcile waits until the payload has been applied and then reconciled once.
// An apply runs in the state the decision before it published.
func awaitReconcile(ctx context.Context, c *cluster, persisted payload.Status, progress *progressLine, results <-chan decided) error {
	const maxFailures = 5
	failures := 0
	last := persisted
	for {
		var d decided
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for the payload: %w", ctx.Err())
		case d = <-results:
		}
		ran, s := last.State, d.status
		last = s
		switch {
		case d.RequeueAfter == 0:
			continue // the decision starts an apply
		case s.Failures > 0:
			failures++
			progress.println("apply (%s) failed, retrying in %s: %s", ran, d.RequeueAfter, s.Failure.Message)
			if failures == maxFailures {
				return errors.New("too many failed applies")
			}
		default:
			progress.println("apply (%s) done: %d/%d manifests, completed %d time(s), next in %s", ran, s.Done, s.Total, s.Completed, d.RequeueAfter)
			if ran == payload.StateReconciling {
				return nil
			}
		}
		if c.fake != nil {
			c.fake.Step(d.RequeueAfter)
		}
	}
}
