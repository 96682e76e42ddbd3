package addon_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// harness drives one add-on through a Machine with a fake driver and clock.
type harness struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	driver *fake.AddonDriver
	policy addon.Policy
	m      *addon.Machine
	spec   addon.Spec
	status addon.Status
	last   addon.Result
	trace  []string
}

func newHarness(t *testing.T, policy addon.Policy) *harness {
	t.Helper()
	h := &harness{t: t, clock: clocktesting.NewFakeClock(t0), driver: &fake.AddonDriver{}, policy: policy,
		spec: addon.Spec{Name: "tke/mesh-manager", Generation: 1, Version: "v1"}}
	h.restart()
	return h
}

// restart replaces the Machine: only the status carries over.
func (h *harness) restart() {
	h.t.Helper()
	m, err := addon.NewMachine(addon.Config{Driver: h.driver, Policy: h.policy, Clock: h.clock, Jitter: func() float64 { return 0 }})
	require.NoError(h.t, err)
	h.m = m
}

// reconcile runs one Reconcile and records the phase it ends in.
func (h *harness) reconcile() addon.Result {
	h.t.Helper()
	st, res, err := h.m.Reconcile(context.Background(), h.spec, h.status)
	require.NoError(h.t, err)
	h.status, h.last = st, res
	h.trace = append(h.trace, string(st.Phase))
	return res
}

// wait advances the clock by what the last result asked for.
func (h *harness) wait() {
	if h.last.RequeueAfter > 0 {
		h.clock.Step(h.last.RequeueAfter)
	}
}

// until reconciles (waiting as asked) until the phase is p, at most n times.
func (h *harness) until(p addon.Phase, n int) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		h.wait()
		h.reconcile()
		if h.status.Phase == p {
			return
		}
	}
	require.Failf(h.t, "phase not reached", "want %s after %d reconciles, trace %v, status %+v", p, n, h.trace, h.status)
}
