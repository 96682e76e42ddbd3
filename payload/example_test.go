package payload_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing/fstest"
	"time"

	"k8s.io/utils/ptr"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

var exampleFS = fstest.MapFS{
	"0000_10_config_00_ns.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: config\n")},
	"0000_20_api_00_cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: api\n  namespace: config\n")},
	"0000_20_web_00_cm.yaml":    {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: config\n")},
	"0000_30_migrate_00_job.yaml": {Data: []byte(
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: config\n")},
	"0000_40_web_00_svc.yaml": {Data: []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: config\n")},
}

// Decide is the worker's loop as a pure function: here an update that has applied 512
// of 862 manifests when it is stopped.
func ExampleDecide() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	from := payload.Release{Version: "1.0.0", Image: "example.com/release@sha256:aaa"}
	to := payload.Release{Version: "1.1.0", Image: "example.com/release@sha256:bbb"}
	d, err := payload.Decide(payload.Input{
		Desired: to, Generation: 2, Now: now,
		Status: payload.Status{Release: from, State: payload.StateReconciling, Done: 862, Total: 862,
			History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: "1.0.0"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Apply, d.Status.State, d.CheckPreconditions, d.Events)

	d, err = payload.Decide(payload.Input{
		Desired: to, Generation: 2, Now: now.Add(time.Minute), Status: d.Status,
		Observation: payload.Observation{Release: to, State: payload.StateUpdating, Done: 512, Total: 862, Interrupted: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range d.Status.Conditions {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Message)))
	}
	fmt.Println("interrupted:", d.Status.Interrupted, "apply again at once:", d.Apply)
	for _, h := range d.Status.History {
		fmt.Println("history:", h.Version, h.State)
	}
	// Output:
	// true Updating true [{Normal UpdateStarted Updating from 1.0.0 to 1.1.0}]
	// Available=True Done applying 1.0.0
	// Progressing=True Working towards 1.1.0: 512 of 862 done (59% complete)
	// Failing=False
	// interrupted: true apply again at once: true
	// history: 1.1.0 Partial
	// history: 1.0.0 Completed
}

// Two pull specs of one digest are one release: pulling it through a mirror starts no
// update.
func ExampleRelease_Same() {
	const digest = "@sha256:5dd3c6bbd6a2ee5d7e7d1f0a1f2e4a0f5e6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d"
	upstream := payload.Release{Version: "4.15.1", Image: "quay.io/openshift-release-dev/ocp-release" + digest}
	mirror := payload.Release{Image: "mirror.example.com:5000/ocp/release" + digest}
	tag := payload.Release{Image: "quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64"}
	fmt.Println(upstream.Same(mirror), upstream.Same(tag))
	// Output: true false
}

// runExample starts a worker on a fake clock, sets release, and prints every decision
// that follows an apply until n applies have ended, stepping the clock in between.
func runExample(cfg payload.Config, n int, releases ...payload.Release) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	results := make(chan converge.Result, 100)
	cfg.Clock = clk
	cfg.Jitter = func() float64 { return 0 }
	cfg.OnResult = func(r converge.Result) {
		for _, e := range r.Events { // OnResult runs before the worker acts again
			fmt.Printf("event %s %s: %s\n", e.Type, e.Reason, e.Message)
		}
		results <- r
	}
	w, err := payload.NewWorker(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	done := make(chan error)
	go func() { done <- w.Start(ctx) }()
	for _, release := range releases {
		w.Update(1, release)
		for ended := 0; ended < n; {
			r := <-results
			if r.RequeueAfter == 0 {
				continue
			}
			ended++
			s := w.Status()
			fmt.Printf("%s %s: %d/%d, next in %s\n", s.Release, s.State, s.Done, s.Total, r.RequeueAfter)
			if ended < n || release != releases[len(releases)-1] {
				clk.Step(r.RequeueAfter) // nothing more runs after the last apply printed
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		fmt.Println(err)
	}
}

func ExampleWorker() {
	manifests, _ := manifest.Load(exampleFS, manifest.Options{})
	release := payload.Release{Version: "1.0.0", Image: "example.com/payload:1"}
	loader := &fake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: release, Manifests: manifests})
	applier := &fake.PayloadApplier{}
	applier.Push("ConfigMap/config/web", fake.PayloadOutcome{Err: errors.New("webhook not ready"), Times: 1})
	runExample(payload.Config{Loader: loader, Applier: applier, Policy: payload.Policy{ManifestAttempts: 1}}, 3, release)
	// Output:
	// event Normal InitializingStarted: Initializing 1.0.0
	// event Warning UpdatePayloadFailed: Could not update configmap "config/web" (3 of 5): webhook not ready
	// 1.0.0 Initializing: 2/5, next in 22.5s
	// event Normal PayloadApplied: Applied 5 manifests of 1.0.0
	// 1.0.0 Reconciling: 5/5, next in 3m0s
	// 1.0.0 Reconciling: 5/5, next in 3m0s
}

// A host names the release it wants when it makes the worker: restarted from the
// status of an update to 1.1.0 that the operator stopped in, while its resource went
// back to 1.0.0, the worker updates to 1.0.0 and applies nothing of 1.1.0, whenever
// the host's Update comes.
func ExampleConfig_desired() {
	manifests, _ := manifest.Load(exampleFS, manifest.Options{})
	loader := &fake.PayloadLoader{}
	for _, version := range []string{"1.0.0", "1.1.0"} {
		loader.Add(&payload.Payload{Release: payload.Release{Version: version}, Manifests: manifests})
	}
	from, to := payload.Release{Version: "1.1.0"}, payload.Release{Version: "1.0.0"}
	runExample(payload.Config{
		Loader: loader, Applier: &fake.PayloadApplier{},
		Status: payload.Status{Release: from, State: payload.StateUpdating, Interrupted: true, Total: 5,
			History: []payload.UpdateHistory{{State: payload.UpdatePartial, Version: "1.1.0"}, {State: payload.UpdateCompleted, Version: "1.0.0"}}},
		Desired: to, Generation: 2,
	}, 1, to)
	fmt.Println("loaded:", loader.Recorded())
	// Output:
	// event Normal UpdateStarted: Updating from 1.1.0 to 1.0.0
	// event Normal PayloadApplied: Applied 5 manifests of 1.0.0
	// 1.0.0 Reconciling: 5/5, next in 3m0s
	// loaded: [1.0.0]
}

// A manifest annotated release.openshift.io/delete: "true" is removed in graph order;
// an object already gone is success.
func ExampleDeleter() {
	manifests, _ := manifest.Load(fstest.MapFS{
		"0000_10_a_00_cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n  namespace: a\n")},
		"0000_10_a_01_cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: a\n  annotations:\n    release.openshift.io/delete: \"true\"\n")},
	}, manifest.Options{})
	release := payload.Release{Version: "1.0.0"}
	loader := &fake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: release, Manifests: manifests})
	cluster := &fake.PayloadApplier{}
	deleter := payload.DeleterFunc(func(ctx context.Context, m *manifest.Manifest) error {
		fmt.Println("delete", m.Ref())
		return cluster.Delete(ctx, m)
	})
	runExample(payload.Config{Loader: loader, Applier: cluster, Deleter: deleter}, 1, release)
	// Output:
	// event Normal InitializingStarted: Initializing 1.0.0
	// delete ConfigMap/a/old
	// event Normal ManifestsDeleted: Deleted 1 object of 1.0.0: configmap "a/old"
	// event Normal PayloadApplied: Applied 2 manifests of 1.0.0
	// 1.0.0 Reconciling: 2/2, next in 3m0s
}

// An update waits for every manifest to be ready before the next run level; a
// reconcile does not wait.
func ExampleReadiness() {
	manifests, _ := manifest.Load(exampleFS, manifest.Options{})
	from := payload.Release{Version: "1.0.0"}
	to := payload.Release{Version: "1.1.0"}
	loader := &fake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: to, Manifests: manifests})
	applier := payload.ApplierFunc(func(_ context.Context, m *manifest.Manifest, s payload.State) error {
		fmt.Println(s, "apply", m.Ref())
		return nil
	})
	ready := payload.ReadinessFunc(func(_ context.Context, m *manifest.Manifest) error {
		fmt.Println("  ready?", m.Ref())
		return nil
	})
	runExample(payload.Config{
		Loader: loader, Applier: applier, Readiness: ready,
		Policy: payload.Policy{Workers: 1, ReconcileWorkers: 1},
		Status: payload.Status{Release: from, State: payload.StateReconciling, NextApplyTime: ptr.To(converge.NewMicroTime(time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC)))},
	}, 1, to)
	// Output:
	// event Normal UpdateStarted: Updating from 1.0.0 to 1.1.0
	// Updating apply Namespace/config
	//   ready? Namespace/config
	// Updating apply ConfigMap/config/api
	//   ready? ConfigMap/config/api
	// Updating apply ConfigMap/config/web
	//   ready? ConfigMap/config/web
	// Updating apply Job/config/migrate
	//   ready? Job/config/migrate
	// Updating apply Service/config/web
	//   ready? Service/config/web
	// event Normal PayloadApplied: Applied 5 manifests of 1.1.0
	// 1.1.0 Reconciling: 5/5, next in 3m0s
}

// Preconditions block an update, as Upgradeable=False does, until the desired release
// is forced.
func ExamplePreconditions() {
	manifests, _ := manifest.Load(exampleFS, manifest.Options{})
	from := payload.Release{Version: "1.0.0"}
	to := payload.Release{Version: "1.1.0"}
	loader := &fake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: to, Manifests: manifests})
	forced := to
	forced.Force = true
	runExample(payload.Config{
		Loader: loader, Applier: &fake.PayloadApplier{},
		Preconditions: payload.PreconditionsFunc(func(context.Context, payload.Release, payload.Release) error {
			return errors.New("Cluster operator network is not upgradeable")
		}),
		Status: payload.Status{Release: from, State: payload.StateReconciling, NextApplyTime: ptr.To(converge.NewMicroTime(time.Date(2026, 1, 1, 13, 0, 0, 0, time.UTC)))},
	}, 1, to, forced)
	// Output:
	// event Normal UpdateStarted: Updating from 1.0.0 to 1.1.0
	// event Warning UpgradePreconditionCheckFailed: Preconditions failed for the update to 1.1.0: Cluster operator network is not upgradeable
	// 1.1.0 Updating: 0/5, next in 22.5s
	// event Normal PayloadApplied: Applied 5 manifests of 1.1.0
	// 1.1.0 Reconciling: 5/5, next in 3m0s
}

// An applier's UpdateErrors of one kind and reason that carry a plural form are one
// failure naming every object; EffectNone makes the update wait without failing.
func ExampleUpdateError() {
	manifests, _ := manifest.Load(exampleFS, manifest.Options{})
	release := payload.Release{Version: "1.0.0"}
	loader := &fake.PayloadLoader{}
	loader.Add(&payload.Payload{Release: release, Manifests: manifests})
	applier := payload.ApplierFunc(func(_ context.Context, m *manifest.Manifest, _ payload.State) error {
		if m.GVK.Kind != "ConfigMap" {
			return nil
		}
		return &payload.UpdateError{
			Effect: payload.EffectNone, Reason: "ConfigMapNotSynced", PluralReason: "ConfigMapsNotSynced",
			Message:             fmt.Sprintf("ConfigMap %s is not synced", m.Name()),
			PluralMessageFormat: "ConfigMaps %s are not synced", Name: m.Name(),
		}
	})
	runExample(payload.Config{Loader: loader, Applier: applier}, 1, release)
	// Output:
	// event Normal InitializingStarted: Initializing 1.0.0
	// event Warning ConfigMapsNotSynced: ConfigMaps api, web are not synced
	// 1.0.0 Initializing: 1/5, next in 22.5s
}
