package addon_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

// A host reconciles its object with one call and persists the status it
// gets back; RequeueAfter goes to its work queue.
func ExampleMachine_Reconcile() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	driver := &fake.AddonDriver{}
	driver.Push(fake.AddonInstall, fake.AddonOutcome{Err: errors.New("image pull backoff")})
	m, err := addon.NewMachine(addon.Config{
		Driver: driver,
		Policy: addon.Policy{InstallRemediation: addon.RemediationNone},
		Clock:  clk,
		Jitter: func() float64 { return 0 },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := addon.Spec{Name: "tke/mesh-manager", Generation: 1, Version: "v1"}
	var status addon.Status
	for i := 0; i < 4; i++ {
		var res addon.Result
		status, res, err = m.Reconcile(context.Background(), spec, status)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%-11s -> %-14s requeue=%v after=%s\n", res.Action, status.Phase, res.Requeue, res.RequeueAfter)
		clk.Step(res.RequeueAfter)
	}
	// Output:
	// Install     -> Reinitializing requeue=false after=10s
	// Install     -> Checking       requeue=true after=0s
	// CheckHealth -> Running        requeue=false after=5m0s
	// CheckHealth -> Running        requeue=false after=5m0s
}

// Decide is usable alone: here a Failed add-on whose desired version changed.
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
	fmt.Println(d.Status.Phase, d.Action, d.Status.UpgradeFailures)
	fmt.Println(d.Events[0].Message)
	// Output:
	// Upgrading Upgrade 0
	// Failed -> Upgrading: desired version v3, installed v1; next: Upgrade
}

// Tables are data: they validate themselves and render as Mermaid.
func ExampleNewTable() {
	_, err := addon.NewTable([]addon.Row{
		{From: addon.PhaseInitializing, Event: addon.EventInstallSucceeded, To: addon.PhaseRunning},
	})
	fmt.Println(err)
	// Output:
	// addon: invalid table: 4 problems: ["phase Deleting has no UninstallSucceeded row to Deleted" "phase Initializing has no DeletionRequested row to Deleting" "phase Running cannot be left" "phase Running has no DeletionRequested row to Deleting"]
}

func ExampleBackoff_Delay() {
	b := addon.Backoff{Base: 10 * time.Second, Cap: time.Minute, Jitter: 0.2}
	for n := 1; n <= 4; n++ {
		fmt.Println(b.Delay(n, 0), b.Delay(n, 0.5))
	}
	// Output:
	// 10s 11s
	// 20s 22s
	// 40s 44s
	// 1m0s 1m6s
}
