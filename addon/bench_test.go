package addon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

func BenchmarkDecide(b *testing.B) {
	running := st(addon.PhaseRunning, addon.ActionCheckHealth)
	for _, bc := range []struct {
		name string
		in   addon.Input
	}{
		{"look/running-not-due", addon.Input{Spec: meshSpec, Now: tNow,
			Status: st(addon.PhaseRunning, addon.ActionCheckHealth, func(s *addon.Status) { s.NextAttemptTime = at(tNow.Add(time.Minute)) })}},
		{"outcome/running-healthy", addon.Input{Spec: meshSpec, Now: tNow, Status: running, Observation: health(addon.HealthHealthy, nil)}},
		{"outcome/upgrade-failed", addon.Input{Spec: addon.Spec{Name: "mesh", Generation: 2, Version: "v2"}, Now: tNow,
			Status: st(addon.PhaseUpgrading, addon.ActionUpgrade, func(s *addon.Status) { s.ObservedGeneration = 2 }), Observation: ran(addon.ActionUpgrade, errBoom)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := addon.Decide(bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMachineManyAddons reconciles 10,000 add-ons with one Machine from
// nothing to Running (three reconciles each) and checks that no goroutine is
// left behind.
func BenchmarkMachineManyAddons(b *testing.B) {
	const n = 10000
	specs := make([]addon.Spec, n)
	for i := range specs {
		specs[i] = addon.Spec{Name: fmt.Sprintf("cluster-%05d/mesh-manager", i), Generation: 1, Version: "v1"}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		clk := clocktesting.NewFakeClock(t0)
		m, err := addon.NewMachine(addon.Config{Driver: &fake.AddonDriver{}, Clock: clk, Jitter: func() float64 { return 0 }})
		if err != nil {
			b.Fatal(err)
		}
		statuses := make([]addon.Status, n)
		before := runtime.NumGoroutine()
		for round := 0; round < 3; round++ {
			for i := range specs {
				if statuses[i], _, err = m.Reconcile(ctx, specs[i], statuses[i]); err != nil {
					b.Fatal(err)
				}
			}
			clk.Step(time.Second)
		}
		if after := runtime.NumGoroutine(); after != before {
			b.Fatalf("goroutines: %d before, %d after", before, after)
		}
		for i := range statuses {
			if statuses[i].Phase != addon.PhaseRunning {
				b.Fatalf("%s: phase %s", specs[i].Name, statuses[i].Phase)
			}
		}
		b.ReportMetric(float64(runtime.NumGoroutine()-before), "goroutines-added")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n*3), "ns/reconcile")
}

// BenchmarkStatusJSON measures the size of a Running add-on's status.
func BenchmarkStatusJSON(b *testing.B) {
	d, err := addon.Decide(addon.Input{Spec: meshSpec, Now: tNow, Status: st(addon.PhaseChecking, addon.ActionCheckHealth,
		func(s *addon.Status) { s.Verifying = addon.ActionInstall }), Observation: health(addon.HealthHealthy, nil)})
	if err != nil {
		b.Fatal(err)
	}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		out, err := json.Marshal(d.Status)
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "bytes/status")
}
