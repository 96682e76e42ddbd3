// Command payload-apply applies an embedded payload of 30 manifests (5 run levels,
// 3 components, one Job) and one removal with the payload engine's sync worker and
// package kube: kube.Applier applies with server-side apply, deletes the ConfigMap
// marked release.openshift.io/delete and waits for the Job (readiness);
// kube.ConfigMapStatusStore keeps the worker's status in the ConfigMap
// payload-apply-status of -namespace, and kube.RecordEvents records its events there.
// A first install applies every component at once, an update runs level by level.
//
// With no flags it runs in memory (client-go's fakes, one ConfigMap refused twice, a
// fake clock) in well under a second. -kubeconfig applies to a real cluster, so a second
// run reconciles and a run with a new -release updates; -simulate-job-controller
// completes the Job on an apiserver without kube-controller-manager; -leader-elect
// applies only while holding the Lease payload-apply; -plan prints the dry-run plan.
// The harness around the engine is internal/e2e/payloadapply.
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	e2e "github.com/converge-dev/converge/internal/e2e/payloadapply"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

//go:embed manifests/*.yaml removed/*.yaml
var embedded embed.FS

func main() {
	o, err := e2e.ParseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "payload-apply:", err)
		os.Exit(1)
	}
}

// run prints the plan, or applies the payload (under leader election when o asks).
func run(ctx context.Context, o e2e.Options, out io.Writer) error {
	manifests, removals, err := e2e.Load(embedded)
	if err != nil || o.Plan {
		return errors.Join(err, e2e.PrintPlan(out, manifests, o.Format))
	}
	progress := e2e.NewProgress(out)
	if o.Kubeconfig == "" {
		c, err := e2e.MemoryCluster(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
		if err != nil {
			return err
		}
		progress.Println("applying %d manifests to an in-memory cluster (ConfigMap %s is refused twice)", len(manifests), e2e.FlakyConfigMap)
		return apply(ctx, c, o, manifests, removals, progress)
	}
	c, err := e2e.RealCluster(o.Kubeconfig)
	if err != nil {
		return err
	}
	defer c.Close()
	work := func(ctx context.Context) error {
		progress.Println("applying %d manifests of release %s to the cluster of %s", len(manifests), o.Release, o.Kubeconfig)
		return apply(ctx, c, o, manifests, removals, progress)
	}
	if !o.LeaderElect {
		return work(ctx)
	}
	return e2e.RunElected(ctx, e2e.Election{
		Leases: c.Typed.CoordinationV1(), Namespace: o.Namespace, Identity: o.Identity,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Report: progress.Println,
	}, work)
}

// apply runs the sync worker until the payload has been applied and reconciled once.
func apply(ctx context.Context, c *e2e.Cluster, o e2e.Options, manifests, removals []payload.Manifest, progress *e2e.Progress) error {
	// Real time on a cluster; in memory the policy is in virtual time.
	policy := payload.Policy{
		Interval: metav1.Duration{Duration: 30 * time.Second}, ApplyTimeout: metav1.Duration{Duration: 5 * time.Minute},
		ManifestAttempts: 12, ManifestBackoff: payload.Backoff{Initial: metav1.Duration{Duration: 2 * time.Second}, Max: metav1.Duration{Duration: 20 * time.Second}, FactorPercent: 150},
		Workers: 4, ReconcileWorkers: 2, ReadinessPoll: metav1.Duration{Duration: time.Second}, ReadinessTimeout: metav1.Duration{Duration: 5 * time.Minute},
	}
	deadline := c.InVirtualTime(&policy, 10*time.Minute)
	if o.Interval > 0 {
		policy.Interval.Duration = o.Interval
	}
	ctx, cancel := context.WithTimeout(klog.NewContext(ctx, logr.Discard()), deadline)
	defer cancel()

	store, err := kube.NewConfigMapStatusStoreFor[payload.Status](e2e.ConfigMap{Client: c.Typed, Namespace: o.Namespace, FieldManager: o.FieldManager()}, o.Namespace, e2e.StatusConfigMap, "")
	if err != nil {
		return err
	}
	persisted, _, err := store.GetStatus(ctx)
	if err != nil {
		return err
	}
	if !persisted.Release.IsZero() {
		progress.Println("persisted status: release %s, %s, completed %d time(s)", persisted.Release.Version, persisted.State, persisted.Completed)
	}
	ka, err := kube.NewApplier(kube.ApplierConfig{Client: c.Client, Mapper: c.Mapper, FieldManager: o.FieldManager(), Force: true})
	if err != nil {
		return err
	}
	applier := &e2e.Applier{Kube: ka, Cluster: c, FieldManager: o.FieldManager(), SimulateJobs: c.Fake != nil || o.SimulateJobs,
		OnError: func(m *payload.Manifest, err error) { progress.Println("attempt failed: %s: %v", m.Ref(), err) },
		OnWait:  func(m *payload.Manifest, err error) { progress.Println("waiting for %s to be ready: %v", m.Ref(), err) },
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.Typed.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, "payload-apply")
	regarding := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: e2e.StatusConfigMap}}

	results := make(chan e2e.Decided, 16)
	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	statusWriter := kube.LatestStatusWriter[payload.Status]{Store: store}
	var worker *payload.Worker
	worker, err = payload.NewWorker(payload.Config{
		Loader: payload.LoaderFunc(func(_ context.Context, desired payload.Release) (*payload.Payload, error) {
			return e2e.ReleasePayload(manifests, removals, desired), nil
		}),
		Applier: applier, Deleter: applier, Readiness: applier, Clock: c.Clock, Policy: policy, Status: persisted,
		StatusWriter: payload.StatusWriterFunc(func(ctx context.Context, s payload.Status) error {
			progress.Show(s, applier.Level())
			return statusWriter.WriteStatus(ctx, s)
		}),
		OnResult: func(r payload.Result) {
			kube.RecordEvents(recorder, regarding, "Apply", r.Events)
			for _, e := range r.Events {
				progress.Println("event: %s %s: %s", e.Type, e.Reason, e.Message)
			}
			select {
			case results <- e2e.Decided{Result: r, Status: worker.Status()}:
			case <-workerCtx.Done():
			}
		},
	})
	if err != nil {
		return err
	}
	stopClock := c.RunClock(ctx)
	defer stopClock()
	done := make(chan error, 1)
	go func() { done <- worker.Start(workerCtx) }()
	worker.Update(1, payload.Release{Version: o.Release, Image: "embedded://payload-apply/manifests"})
	err = e2e.AwaitReconcile(ctx, c, persisted, progress, results)
	// The worker is stopped before its last status is saved, so that nothing overwrites it.
	stopWorker()
	if err = errors.Join(err, <-done); err != nil {
		return err
	}
	if err = statusWriter.WriteStatus(ctx, worker.Status()); err != nil {
		return err
	}
	return c.Verify(ctx, manifests, progress)
}
