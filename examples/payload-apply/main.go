// Command payload-apply applies an embedded payload of 31 manifests, 30 objects
// (5 run levels, a Job, two Deployments) and one removal, with the payload engine's
// sync worker, kube.Applier (server-side apply, deletion, readiness),
// kube.ConfigMapStatusStore and kube.RecordEvents. With no flags it runs in
// memory (client-go's fakes, simulated job and deployment controllers, a
// fake clock); -kubeconfig applies to a real cluster, where a second run
// reconciles and a new -release updates.
package main

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"flag"
	"io"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge"
	e2e "github.com/converge-dev/converge/examples/internal/e2e/payloadapply"
	"github.com/converge-dev/converge/internal/cli"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

//go:embed manifests/*.yaml removed/*.yaml
var embedded embed.FS

func main() { cli.Main(run) }

// options are the command line; the leader election's flags fill election.
type options struct {
	kubeconfig, release, namespace, format string
	interval                               time.Duration
	simulate, leaderElect, plan            bool
	election                               e2e.Election
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("payload-apply", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "apply to the cluster of this kubeconfig file instead of an in-memory one")
	fs.StringVar(&o.release, "release", "1.0.0", "version of the release; every object is annotated with it, so a new version updates every object")
	fs.DurationVar(&o.interval, "interval", 0, "time between two reconciles (default 30s on a cluster, 3m in memory)")
	fs.StringVar(&o.namespace, "namespace", "default", "namespace of the status ConfigMap and of the leader-election Lease")
	fs.BoolVar(&o.simulate, "simulate-controllers", false, "complete the Job and roll the Deployments out, for an apiserver without kube-controller-manager (needs -kubeconfig)")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "apply only while holding the Lease payload-apply (needs -kubeconfig); the field manager becomes payload-apply/<identity>")
	fs.StringVar(&o.election.Identity, "identity", e2e.DefaultIdentity(), "name of this instance in the Lease (-leader-elect only)")
	fs.DurationVar(&o.election.LeaseDuration, "lease-duration", 15*time.Second, "how long a follower waits before it takes a Lease that is not renewed (-leader-elect only)")
	fs.DurationVar(&o.election.RenewDeadline, "renew-deadline", 10*time.Second, "how long the leader tries to renew the Lease before it stops acting (-leader-elect only)")
	fs.DurationVar(&o.election.RetryPeriod, "retry-period", 2*time.Second, "time between two tries to acquire or renew the Lease (-leader-elect only)")
	fs.BoolVar(&o.plan, "plan", false, "print the dry-run plan and exit")
	fs.StringVar(&o.format, "format", "text", "plan format: text, mermaid or dot")
	err := cli.Parse(fs, args, stderr)
	if err == nil { // the first flag that is wrong
		err = cmp.Or(cli.Requires(fs, "kubeconfig", "simulate-controllers", "leader-elect"),
			cli.Requires(fs, "leader-elect", "identity", "lease-duration", "renew-deadline", "retry-period"),
			e2e.CheckOptions(o.release, o.interval, o.format, o.election))
	}
	if err == nil {
		err = apply(ctx, o, stdout)
	}
	return cli.Exit(stderr, fs.Name(), err)
}

// apply prints the plan, or applies the payload (under leader election when o asks).
func apply(ctx context.Context, o options, out io.Writer) error {
	manifests, removals, err := e2e.Load(embedded)
	if err != nil || o.plan {
		return errors.Join(err, e2e.PrintPlan(out, manifests, o.format))
	}
	progress := e2e.NewProgress(out)
	c, err := e2e.Connect(o.kubeconfig)
	if err != nil {
		return err
	}
	defer c.Close()
	work := func(ctx context.Context) error {
		progress.Println("applying %d manifests of release %s (%d objects to apply, %d to delete) to %s",
			len(manifests)+len(removals), o.release, len(manifests), len(removals), c)
		return runWorker(ctx, c, o, manifests, removals, progress)
	}
	if !o.leaderElect {
		return work(ctx)
	}
	o.election.Leases, o.election.Namespace, o.election.Report = c.Typed.CoordinationV1(), o.namespace, progress.Println
	return e2e.RunElected(ctx, o.election, work)
}

// runWorker runs the sync worker until the payload has been applied and reconciled once.
func runWorker(ctx context.Context, c *e2e.Cluster, o options, manifests, removals []manifest.Manifest, progress *e2e.Progress) error {
	policy, deadline := c.Policy(o.interval)
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, logr.Discard()), deadline)
	defer cancel()
	fieldManager := e2e.FieldManager(o.leaderElect, o.election.Identity)
	store, err := kube.NewConfigMapStatusStoreFor[payload.Status](e2e.ConfigMap{Client: c.Typed, Namespace: o.namespace, FieldManager: fieldManager}, o.namespace, e2e.StatusConfigMap, "")
	if err != nil {
		return err
	}
	persisted, _, err := store.GetStatus(ctx)
	if err != nil {
		return err
	}
	ka, err := kube.NewApplier(kube.ApplierConfig{Client: c.Client, Mapper: c.Mapper, FieldManager: fieldManager, Force: true})
	if err != nil {
		return err
	}
	applier := e2e.NewApplier(ka, c, fieldManager, o.simulate, progress)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.Typed.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, "payload-apply")
	regarding := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, Name: e2e.StatusConfigMap}}
	statusWriter := kube.LatestStatusWriter[payload.Status]{Store: store}
	results := make(chan e2e.Decided, 16)
	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	var worker *payload.Worker
	// The worker is told the release it must apply when it is made, so that it never
	// resumes a release the persisted status names and the operator no longer wants.
	worker, err = payload.NewWorker(payload.Config{
		Desired: payload.Release{Version: o.release, Image: "embedded://payload-apply/manifests"}, Generation: 1,
		Loader: payload.LoaderFunc(func(_ context.Context, desired payload.Release) (*payload.Payload, error) {
			return e2e.ReleasePayload(manifests, removals, desired), nil
		}),
		Applier: applier, Deleter: applier, Readiness: applier, Clock: c.Clock, Policy: policy, Status: persisted,
		StatusWriter: payload.StatusWriterFunc(func(ctx context.Context, s payload.Status) error {
			progress.Show(s, applier.Level())
			return statusWriter.WriteStatus(ctx, s)
		}),
		OnResult: func(r converge.Result) {
			kube.RecordEvents(recorder, regarding, "Apply", r.Events)
			progress.Events(r.Events)
			select {
			case results <- e2e.Decided{Result: r, Status: worker.Status()}:
			case <-workerCtx.Done():
			}
		},
	})
	if err != nil {
		return err
	}
	defer c.RunClock(ctx)()
	done := make(chan error, 1)
	go func() { done <- worker.Start(workerCtx) }()
	err = e2e.AwaitReconcile(ctx, c, persisted, progress, results)
	stopWorker() // before the last status is saved, so that nothing overwrites it
	if err = errors.Join(err, <-done); err != nil {
		return err
	}
	if err = statusWriter.WriteStatus(ctx, worker.Status()); err != nil {
		return err
	}
	return c.Verify(ctx, manifests, progress)
}
