package addon_test

import (
	"context"
	"testing"
	"time"

	"github.com/converge-dev/converge/addon"
)

// benchInputs are the paths the cost targets name: a look at a
// Running add-on (≤ 1 µs, ≤ 2 allocations) and the failed-upgrade path
// (≤ 5 µs).
func benchInputs(b *testing.B) map[string]addon.Input {
	b.Helper()
	running := func() addon.Status {
		d, err := addon.Decide(addon.Input{Spec: meshSpec, Now: tNow, Status: st(addon.PhaseRunning, addon.ActionCheckHealth), Observation: health(addon.HealthHealthy, nil)})
		if err != nil {
			b.Fatal(err)
		}
		return d.Status
	}()
	v2 := addon.Spec{Name: meshSpec.Name, Generation: 2, Version: "v2"}
	upgrade, err := addon.Decide(addon.Input{Spec: v2, Now: tNow, Status: running})
	if err != nil || upgrade.Action != addon.ActionUpgrade {
		b.Fatalf("no upgrade: %v %v", upgrade.Action, err)
	}
	upgrading := upgrade.Status
	return map[string]addon.Input{
		"look/running-not-due":    {Spec: meshSpec, Now: tNow.Add(time.Second), Status: running},
		"outcome/running-healthy": {Spec: meshSpec, Now: tNow.Add(defaultRunningInterval), Status: running, Observation: health(addon.HealthHealthy, nil)},
		"outcome/upgrade-failed":  {Spec: v2, Now: tNow.Add(time.Second), Status: upgrading, Observation: ran(upgrading, errBoom)},
	}
}

func BenchmarkDecide(b *testing.B) {
	inputs := benchInputs(b)
	for _, name := range []string{"look/running-not-due", "outcome/running-healthy", "outcome/upgrade-failed"} {
		in := inputs[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := addon.Decide(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMachineRunningLook is a reconcile of a Running add-on whose next
// health check is not due: a Decide and no write.
func BenchmarkMachineRunningLook(b *testing.B) {
	h := newHarness(b, addon.Policy{})
	for range 3 {
		if _, err := h.m.Reconcile(context.Background(), h.obj()); err != nil {
			b.Fatal(err)
		}
	}
	obj := h.obj()
	if obj.Status.Phase != addon.PhaseRunning {
		b.Fatalf("phase %s", obj.Status.Phase)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.m.Reconcile(context.Background(), obj); err != nil {
			b.Fatal(err)
		}
	}
}
