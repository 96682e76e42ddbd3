package addon_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

var (
	t0      = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tNow    = t0.Add(time.Minute)
	errBoom = errors.New("boom")
	// meshSpec is the add-on most tests drive: v1, generation 1.
	meshSpec = addon.Spec{Name: "tke/mesh-manager", Generation: 1, Version: "v1"}
)

// The defaults of a zero Policy, as its documentation gives them: the
// tests that use them pin them.
const (
	defaultBackoffInitial       = 10 * time.Second
	defaultBackoffMax           = 5 * time.Minute
	defaultCheckInterval        = 5 * time.Second
	defaultRunningInterval      = 5 * time.Minute
	defaultCheckTimeout         = 5 * time.Minute
	defaultActionTimeout        = 2 * time.Minute
	defaultHealthUnknownTimeout = 5 * time.Minute
	defaultInstallTimeout       = 10 * time.Minute
	defaultUpgradeTimeout       = 10 * time.Minute
	defaultRemediationTimeout   = 10 * time.Minute
	defaultDeleteTimeout        = 10 * time.Minute
	maxHistoryLimit             = 10
)

// defaultTimeouts are the deadlines a zero Policy gives the phases that
// wait (TestPolicyTimeoutsAreThePhaseDeadlines pins them).
var defaultTimeouts = map[addon.Phase]time.Duration{
	addon.PhaseInitializing: defaultInstallTimeout, addon.PhaseReinitializing: defaultInstallTimeout,
	addon.PhaseChecking: defaultCheckTimeout, addon.PhaseUpgrading: defaultUpgradeTimeout,
	addon.PhaseRemediating: defaultRemediationTimeout, addon.PhaseDeleting: defaultDeleteTimeout,
}

// allPhases lists every phase.
var allPhases = []addon.Phase{
	addon.PhaseInitializing, addon.PhaseReinitializing, addon.PhaseChecking, addon.PhaseRunning, addon.PhaseUpgrading,
	addon.PhaseRemediating, addon.PhaseFailed, addon.PhaseDeleting, addon.PhaseDeleted,
}

// quiet is a context whose logger discards what the Machine logs, such as
// the stacks of panics the tests provoke.
var quiet = klog.NewContext(context.Background(), logr.Discard())

func at(t time.Time) *metav1.Time { m := metav1.NewTime(t); return &m }

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

// st builds a status in phase p with pending action a, entered at t0 with
// its deadline, with v1 installed and good, observing generation 1, last
// read healthy. A Checking status verifies an upgrade.
func st(p addon.Phase, a addon.Action, mods ...func(*addon.Status)) addon.Status {
	s := addon.Status{Phase: p, PendingAction: a, LastTransitionTime: metav1.NewTime(t0),
		InstalledVersion: "v1", LastGoodVersion: "v1", ObservedGeneration: 1, Health: addon.HealthHealthy}
	if d := defaultTimeouts[p]; d > 0 {
		s.Deadline = at(t0.Add(d))
	}
	if p == addon.PhaseChecking {
		s.Verifying = addon.ActionUpgrade
	}
	for _, m := range mods {
		m(&s)
	}
	return s
}

// claimed puts action a (from → to) in flight, started at t0+30s by "m1".
func claimed(a addon.Action, from, to string) func(*addon.Status) {
	return func(s *addon.Status) {
		s.PendingAction = a
		s.InFlight = &addon.Claim{Action: a, Owner: "m1", From: from, To: to,
			Started: metav1.NewTime(t0.Add(30 * time.Second)), Expires: metav1.NewTime(t0.Add(30*time.Second + defaultActionTimeout + addon.ClaimGrace))}
	}
}

// ran is the outcome of the action in flight in s.
func ran(s addon.Status, err error) addon.Observation {
	return addon.Observation{Action: s.InFlight.Action, Claim: s.InFlight, Err: err}
}

func health(h addon.Health, err error) addon.Observation {
	return addon.Observation{Action: addon.ActionCheckHealth, Health: h, Err: err}
}

// harness drives one add-on through a Machine with a fake driver, store
// and clock.
type harness struct {
	t      testing.TB
	clock  *clocktesting.FakeClock
	driver *fake.AddonDriver
	store  *fake.AddonStore
	policy addon.Policy
	m      *addon.Machine
	last   addon.Result
	events []converge.Event
	trace  []string
}

func newHarness(t testing.TB, policy addon.Policy) *harness {
	t.Helper()
	h := &harness{t: t, clock: clocktesting.NewFakeClock(t0), driver: &fake.AddonDriver{}, store: &fake.AddonStore{}, policy: policy}
	h.store.Put(addon.Object{Spec: meshSpec})
	h.restart()
	return h
}

// restart replaces the Machine: only the stored status carries over.
func (h *harness) restart() {
	h.t.Helper()
	m, err := addon.NewMachine(addon.Config{Driver: h.driver, Store: h.store, Owner: "m1", Policy: h.policy, Clock: h.clock, Jitter: func() float64 { return 0 }})
	require.NoError(h.t, err)
	h.m = m
}

func (h *harness) obj() addon.Object {
	h.t.Helper()
	obj, err := h.store.Get(context.Background(), meshSpec.Name)
	require.NoError(h.t, err)
	return obj
}

func (h *harness) status() addon.Status { return h.obj().Status }

// spec changes the stored spec with f.
func (h *harness) spec(f func(*addon.Spec)) {
	_, ok := h.store.Update(meshSpec.Name, f)
	require.True(h.t, ok)
}

// reconcile runs one Reconcile on the stored add-on and records the phase it ends in.
func (h *harness) reconcile() addon.Result {
	h.t.Helper()
	res, err := h.m.Reconcile(quiet, h.obj())
	require.NoError(h.t, err)
	h.last = res
	h.events = append(h.events, res.Events...)
	h.trace = append(h.trace, string(h.status().Phase))
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
		if h.status().Phase == p {
			return
		}
	}
	require.Failf(h.t, "phase not reached", "want %s after %d reconciles, trace %v, status %+v", p, n, h.trace, h.status())
}
