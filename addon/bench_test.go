package addon_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

// benchInputs are the paths the cost targets name: a look at a Running
// add-on, Decide's fastest path (≤ 1 µs, no allocation), and the
// failed-upgrade path (≤ 5 µs).
func benchInputs(b testing.TB) map[string]addon.Input {
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

// TestDecideFastPathAllocatesNothing: a look at a Running add-on whose next
// health check is not due allocates nothing.
func TestDecideFastPathAllocatesNothing(t *testing.T) {
	in := benchInputs(t)["look/running-not-due"]
	d, err := addon.Decide(in)
	require.NoError(t, err)
	require.Equal(t, addon.ActionNone, d.Action)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = addon.Decide(in) }))
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
