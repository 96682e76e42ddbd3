package addon_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

// A host reconciles its object with one call; the Store persists the
// status, RequeueAfter goes to its work queue and the events to its recorder.
func ExampleMachine_Reconcile() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	driver := &fake.AddonDriver{}
	driver.Push(fake.AddonInstall, fake.AddonOutcome{Err: errors.New("image pull backoff")})
	store := &fake.AddonStore{}
	store.Put(addon.Object{Spec: addon.Spec{Name: "tke/mesh-manager", Generation: 1, Version: "v1"}})
	m, err := addon.NewMachine(addon.Config{
		Driver: driver,
		Store:  store,
		Owner:  "controller-0",
		Policy: addon.Policy{InstallRemediation: addon.RemediationNone},
		Clock:  clk,
		Jitter: func() float64 { return 0 },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for range 5 {
		obj, err := store.Get(ctx, "tke/mesh-manager")
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := m.Reconcile(ctx, obj)
		if err != nil {
			fmt.Println(err)
			return
		}
		obj, _ = store.Get(ctx, "tke/mesh-manager")
		fmt.Printf("%-14s after=%-6s %s\n", obj.Status.Phase, res.RequeueAfter, obj.Status.Reason)
		clk.Step(res.RequeueAfter)
	}
	// Output:
	// Reinitializing after=10s    InstallFailed
	// Checking       after=1ms    InstallSucceeded
	// Running        after=5m0s   Healthy
	// Running        after=5m0s   Healthy
	// Running        after=5m0s   Healthy
}

// Decide is usable alone: here a Failed add-on whose desired version changed
// upgrades onto the installed version.
func ExampleDecide() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d, err := addon.Decide(addon.Input{
		Spec:   addon.Spec{Name: "mesh", Generation: 3, Version: "v3"},
		Status: addon.Status{Phase: addon.PhaseFailed, InstalledVersion: "v1", FailedVersion: "v2", ObservedGeneration: 2, UpgradeFailures: 6},
		Now:    now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Status.Phase, d.Action, d.Status.UpgradeFailures, d.Status.InFlight.From, "->", d.Status.InFlight.To)
	fmt.Println(d.Events[0].Message)
	// Output:
	// Upgrading Upgrade 0 v1 -> v3
	// Failed -> Upgrading: desired version v3, installed v1; next: Upgrade
}

// Tables are data: they validate themselves and render as Mermaid.
func ExampleNewTable() {
	_, err := addon.NewTable([]addon.Row{
		{From: addon.PhaseInitializing, Trigger: addon.TriggerInstallSucceeded, To: addon.PhaseRunning},
	})
	fmt.Println(err)
	// Output:
	// addon: invalid table: phase Deleting has no UninstallSucceeded row to Deleted; phase Initializing has no DeletionRequested row to Deleting; phase Running cannot be left; phase Running has no DeletionRequested row to Deleting
}

// A Policy embeds in a custom resource. Here installs that keep failing
// are retried after 1s, 2s, 4s, then at the 5s cap: jitterPercent: 0 turns
// the jitter off, however large the jitter drawn.
func ExamplePolicy() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	driver := &fake.AddonDriver{}
	for range 4 {
		driver.Push(fake.AddonInstall, fake.AddonOutcome{Err: errors.New("image pull backoff")})
	}
	store := &fake.AddonStore{}
	store.Put(addon.Object{Spec: addon.Spec{Name: "tke/log-collector", Generation: 1, Version: "v1"}})
	m, err := addon.NewMachine(addon.Config{
		Driver: driver,
		Store:  store,
		Policy: addon.Policy{
			InstallRemediation: addon.RemediationNone,
			Backoff: converge.Backoff{
				Initial:       metav1.Duration{Duration: time.Second},
				Max:           metav1.Duration{Duration: 5 * time.Second},
				JitterPercent: ptr.To[int32](0),
			},
		},
		Clock:  clk,
		Jitter: func() float64 { return 0.99 },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for range 5 {
		obj, err := store.Get(ctx, "tke/log-collector")
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := m.Reconcile(ctx, obj)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.RequeueAfter)
		clk.Step(res.RequeueAfter)
	}
	// Output:
	// 1s
	// 2s
	// 4s
	// 5s
	// 1ms
}

func ExampleDefaultRedact() {
	fmt.Println(addon.DefaultRedact(`pull https://bot:hunter2@registry.example/mesh: token=abc123, status 401`))
	// Output:
	// pull https://[REDACTED]@registry.example/mesh: token=[REDACTED], status 401
}

// Maintenance windows hold an upgrade until they open: the hold says when,
// and the decision looks again then. A rollback or a deletion would still
// run.
func ExamplePolicy_windows() {
	now := time.Date(2026, 3, 28, 23, 0, 0, 0, time.UTC)
	policy := addon.Policy{Windows: []converge.Window{
		{Kind: converge.WindowAllow, Schedule: "30 2 * * *", Duration: metav1.Duration{Duration: time.Hour}, TimeZone: "Europe/Berlin"},
	}}
	zones, err := converge.Zones(nil).Load(policy.Windows) // the Machine does this once
	if err != nil {
		fmt.Println(err)
		return
	}
	d, err := addon.Decide(addon.Input{
		Spec: addon.Spec{Name: "tke/mesh-manager", Generation: 2, Version: "v2"},
		Status: addon.Status{Phase: addon.PhaseRunning, PendingAction: addon.ActionCheckHealth, InstalledVersion: "v1",
			LastGoodVersion: "v1", ObservedGeneration: 1, Health: addon.HealthHealthy, NextAttemptTime: &metav1.Time{Time: now.Add(time.Minute)}},
		Policy: policy, Zones: zones, Now: now,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Status.Phase, "pending", d.Status.PendingAction+", nothing started:", d.Action == addon.ActionNone)
	fmt.Println(d.Status.Holds[0].Reason+":", d.Status.Holds[0].Message)
	fmt.Println("look again after", d.RequeueAfter)
	// Output:
	// Upgrading pending Upgrade, nothing started: true
	// WindowClosed: the maintenance windows are closed until 2026-03-29T01:00:00Z
	// look again after 2h0m0s
}
