package payload_test

import (
	"context"
	"errors"
	"fmt"
	"testing/fstest"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
)

var exampleFS = fstest.MapFS{
	"0000_10_config_00_ns.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: config\n")},
	"0000_20_api_00_cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\n  namespace: config\n")},
	"0000_20_web_00_cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: config\n")},
	"0000_30_migrate_00_job.yaml": {Data: []byte(
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: config\n")},
	"0000_40_web_00_svc.yaml": {Data: []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: config\n")},
}

func ExampleBuildGraph() {
	manifests, err := payload.Load(exampleFS)
	if err != nil {
		fmt.Println(err)
		return
	}
	tasks := payload.NewTasks(manifests, wait.Backoff{Steps: 3, Duration: time.Second, Factor: 2})
	graph, err := payload.BuildGraph(tasks, payload.ByNumberAndComponent)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(graph)
	// Output:
	// node 1: 0 manifests
	// node 3: 10-config, 1 manifests, after 1
	//   0000_10_config_00_ns.yaml namespace "config" (1 of 5)
	// node 4: 20-api, 1 manifests, after 3
	//   0000_20_api_00_cm.yaml configmap "config/api" (2 of 5)
	// node 5: 20-web, 1 manifests, after 3
	//   0000_20_web_00_cm.yaml configmap "config/web" (3 of 5)
	// node 6: 0 manifests, after 4, 5
	// node 0: 30-migrate, 1 manifests, after 6
	//   0000_30_migrate_00_job.yaml job "config/migrate" (4 of 5)
	// node 2: 40-web, 1 manifests, after 0
	//   0000_40_web_00_svc.yaml service "config/web" (5 of 5)
}

func ExampleRunGraph() {
	manifests, _ := payload.Load(exampleFS)
	graph, _ := payload.BuildGraph(payload.NewTasks(manifests, wait.Backoff{Steps: 1}), payload.ByNumberAndComponent)
	errs := payload.RunGraph(context.Background(), graph, 1, func(ctx context.Context, tasks []*payload.Task) error {
		for _, t := range tasks {
			if t.Manifest.Name() == "api" {
				return errors.New("api is broken")
			}
			fmt.Println("applied", t.Manifest.Ref())
		}
		return nil
	})
	fmt.Println(errs)
	// Output:
	// applied Namespace/config
	// applied ConfigMap/config/web
	// [api is broken]
}

func ExampleSummarize() {
	operator := func(name string) error {
		return &payload.UpdateError{
			Reason:              "ClusterOperatorUpdating",
			PluralReason:        "ClusterOperatorsUpdating",
			Message:             fmt.Sprintf("Cluster operator %s is updating versions", name),
			PluralMessageFormat: "Cluster operators %s are updating versions",
			Name:                name,
			Effect:              payload.EffectNone,
			Task:                &payload.Task{Manifest: &payload.Manifest{GVK: schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "ClusterOperator"}}},
		}
	}
	err := payload.Summarize([]error{operator("network"), context.Canceled, operator("dns"), errors.New("Could not update service \"a/b\" (7 of 9)")})
	fmt.Println(err)
	// Output:
	// Multiple errors are preventing progress:
	// * Cluster operators dns, network are updating versions
	// * Could not update service "a/b" (7 of 9)
}

func ExampleNextStatus() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	failed := payload.Status{Done: 60, Total: 100, Failure: &payload.Failure{Message: "boom"}, Actual: payload.Release{Version: "1.0.0"}}
	retry := payload.Status{Done: 10, Total: 100, Actual: payload.Release{Version: "1.0.0"}}
	_, ok := payload.NextStatus(failed, retry, now)
	fmt.Println("a retry behind the failure is published:", ok)
	retry.Done = 61
	s, ok := payload.NextStatus(failed, retry, now)
	fmt.Println("past the failure:", ok, s.LastProgress.UTC().Format(time.RFC3339))
	// Output:
	// a retry behind the failure is published: false
	// past the failure: true 2026-01-01T12:00:00Z
}

func ExampleWorker() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	manifests, _ := payload.Load(exampleFS)
	release := payload.Release{Version: "1.0.0", Image: "example.com/payload:1"}
	loader := &fake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: release, Manifests: manifests})
	applier := &fake.PayloadApplier{}
	applier.FailTimes("ConfigMap/config/web", 1, errors.New("webhook not ready"))

	results := make(chan payload.ApplyResult, 10)
	w, err := payload.NewWorker(payload.WorkerConfig{
		Loader: loader, Applier: applier, Clock: clk,
		Interval:   3 * time.Minute,
		Backoff:    wait.Backoff{Steps: 1},
		Jitter:     func(d time.Duration) time.Duration { return d },
		AfterApply: func(r payload.ApplyResult) { results <- r },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()

	w.Update(1, release)
	for range 3 {
		r := <-results
		s := w.Status()
		fmt.Printf("%s: err=%v done=%d/%d reconciling=%t, next in %s\n", r.State, r.Err, s.Done, s.Total, s.Reconciling, r.RetryAfter)
		clk.Step(r.RetryAfter)
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// Initializing: err=Could not update configmap "config/web" (3 of 5) done=2/5 reconciling=false, next in 22.5s
	// Initializing: err=<nil> done=5/5 reconciling=true, next in 3m0s
	// Reconciling: err=<nil> done=5/5 reconciling=true, next in 3m0s
	// <nil>
}
