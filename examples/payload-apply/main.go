// Command payload-apply applies an embedded payload of 30 manifests (5 run levels,
// 3 components, one Job) with the payload engine's sync worker: run levels in order,
// components of a level in parallel, the Job as a barrier, every manifest retried with
// backoff, a live progress line, then one reconcile pass.
//
// With no flags it uses client-go's fake dynamic client, in which one ConfigMap is
// refused twice before it is accepted, and a fake clock, and finishes in well under a
// second. -kubeconfig applies the payload to a real cluster in real time (namespace
// converge-payload-demo). -plan prints the dry-run plan and exits.
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
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/payload"
)

//go:embed manifests/*.yaml
var embedded embed.FS

var release = payload.Release{Version: "1.0.0", Image: "embedded://payload-apply/manifests"}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "apply to this cluster instead of an in-memory one")
	plan := flag.Bool("plan", false, "print the dry-run plan and exit")
	format := flag.String("format", "text", "plan format: text, mermaid or dot")
	flag.Parse()
	ctx := context.Background()
	var err error
	if *plan {
		err = printPlan(os.Stdout, *format)
	} else {
		err = run(ctx, *kubeconfig, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "payload-apply:", err)
		os.Exit(1)
	}
}

func loadManifests() ([]payload.Manifest, error) {
	sub, err := fs.Sub(embedded, "manifests")
	if err != nil {
		return nil, err
	}
	return payload.Load(sub)
}

// printPlan prints the graph the worker runs while updating.
func printPlan(out io.Writer, format string) error {
	manifests, err := loadManifests()
	if err != nil {
		return err
	}
	graph, err := payload.BuildGraph(payload.NewTasks(manifests, payload.DefaultBackoff), payload.ByNumberAndComponent)
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
	mu      sync.Mutex
	out     io.Writer
	live    bool
	last    string
	applier *clusterApplier
}

func newProgressLine(out io.Writer, applier *clusterApplier) *progressLine {
	live := false
	if f, ok := out.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			live = true
		}
	}
	return &progressLine{out: out, live: live, applier: applier}
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

func run(ctx context.Context, kubeconfig string, out io.Writer) error {
	manifests, err := loadManifests()
	if err != nil {
		return err
	}
	var (
		c        *cluster
		interval = 3 * time.Minute
		backoff  = wait.Backoff{Steps: 5, Duration: 2 * time.Second, Factor: 2}
		deadline = 60 * time.Second
	)
	if kubeconfig != "" {
		if c, err = realCluster(kubeconfig); err != nil {
			return err
		}
		interval, deadline = 30*time.Second, 10*time.Minute
		backoff = wait.Backoff{Steps: 12, Duration: 2 * time.Second, Factor: 1.5, Cap: 20 * time.Second}
		fmt.Fprintf(out, "applying %d manifests to the cluster of %s\n", len(manifests), kubeconfig)
	} else {
		c = memoryCluster(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		fmt.Fprintf(out, "applying %d manifests to an in-memory cluster (ConfigMap %s is refused twice)\n", len(manifests), flakyConfigMap)
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, logr.Discard()), deadline)
	defer cancel()

	applier := &clusterApplier{client: c.client, mapper: c.mapper}
	progress := newProgressLine(out, applier)
	applier.onError = func(m *payload.Manifest, err error) {
		progress.println("attempt failed: %s: %v", m.Ref(), err)
	}
	results := make(chan payload.ApplyResult, 16)
	worker, err := payload.NewWorker(payload.WorkerConfig{
		Loader: payload.PayloadLoaderFunc(func(context.Context, payload.Release) (*payload.Payload, error) {
			return &payload.Payload{Release: release, Manifests: manifests}, nil
		}),
		Applier:          applier,
		Clock:            c.clock,
		Interval:         interval,
		Backoff:          backoff,
		Workers:          4,
		ReconcileWorkers: 2,
		OnStatus:         progress.show,
		AfterApply:       func(r payload.ApplyResult) { results <- r },
		Events: payload.EventRecorderFunc(func(eventType, reason, message string) {
			progress.println("event: %s %s: %s", eventType, reason, message)
		}),
	})
	if err != nil {
		return err
	}

	stopClock := c.runClock(ctx)
	defer stopClock()
	workerCtx, stopWorker := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- worker.Start(workerCtx) }()
	defer func() {
		stopWorker()
		<-done
	}()

	worker.Update(1, release)
	if err := awaitReconcile(ctx, c, worker, progress, results); err != nil {
		return err
	}

	n, err := c.present(ctx, manifests)
	if err != nil {
		return err
	}
	progress.println("%d of %d objects are in the cluster", n, len(manifests))
	if c.flakyCreates != nil {
		creates := c.flakyCreates.Load()
		progress.println("ConfigMap %s was created on attempt %d", flakyConfigMap, creates)
		if creates != 3 {
			return fmt.Errorf("ConfigMap %s: %d create calls, want 3", flakyConfigMap, creates)
		}
	}
	return nil
}

// awaitReconcile waits until the payload has been applied and then reconciled once.
func awaitReconcile(ctx context.Context, c *cluster, worker *payload.Worker, progress *progressLine, results <-chan payload.ApplyResult) error {
	const maxFailures = 5
	failures := 0
	for {
		var r payload.ApplyResult
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for the payload: %w", ctx.Err())
		case r = <-results:
		}
		s := worker.Status()
		if r.Err != nil {
			failures++
			progress.println("apply (%s) failed, retrying in %s: %v", r.State, r.RetryAfter, r.Err)
			if failures == maxFailures {
				return errors.New("too many failed applies")
			}
		} else {
			progress.println("apply (%s) done: %d/%d manifests, completed %d time(s), next in %s", r.State, s.Done, s.Total, s.Completed, r.RetryAfter)
		}
		if r.Err == nil && r.State == payload.StateReconciling {
			return nil
		}
		if c.fake != nil {
			c.fake.Step(r.RetryAfter)
		}
	}
}
