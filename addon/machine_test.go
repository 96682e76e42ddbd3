package addon_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

// healthOnly is a Driver that is neither a DriftDetector nor a Tester.
type healthOnly struct{}

func (healthOnly) Install(context.Context, addon.Request) (string, error) { return "", nil }
func (healthOnly) Upgrade(context.Context, addon.Request) (string, error) { return "", nil }
func (healthOnly) Uninstall(context.Context, addon.Request) error         { return nil }
func (healthOnly) Health(context.Context, addon.Request) (addon.Health, error) {
	return addon.HealthHealthy, nil
}

// hookDriver runs before on every mutating call, then delegates.
type hookDriver struct {
	*fake.AddonDriver
	before func(addon.Request)
}

func (d hookDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	d.before(req)
	return d.AddonDriver.Install(ctx, req)
}

func (d hookDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	d.before(req)
	return d.AddonDriver.Upgrade(ctx, req)
}

func TestReconcileRunsOneActionPerCallToRunning(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.reconcile()
	assert.Equal(t, addon.PhaseChecking, h.status().Phase)
	assert.Equal(t, addon.RequeueNow, h.last.RequeueAfter)
	h.until(addon.PhaseRunning, 1)
	assert.Equal(t, []fake.AddonCall{
		{Method: fake.AddonInstall, Name: meshSpec.Name, To: "v1", Fence: 1},
		{Method: fake.AddonHealth, Name: meshSpec.Name, From: "v1", To: "v1", Fence: 1},
	}, h.driver.Recorded(), "the install runs under fence 1; a read carries the newest fence")
	assert.Equal(t, []string{"Created", "InstallSucceeded", "Healthy"}, reasons(h.events))
}

func reasons(events []converge.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

func TestReconcileHandsTheHostObjectToTheDriver(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	var got []any
	drv := hookDriver{AddonDriver: h.driver, before: func(r addon.Request) { got = append(got, r.Host) }}
	m, err := addon.NewMachine(addon.Config{Driver: drv, Store: h.store, Clock: h.clock})
	require.NoError(t, err)
	obj := h.obj()
	obj.Host = "the host's object"
	_, err = m.Reconcile(context.Background(), obj)
	require.NoError(t, err)
	assert.Equal(t, []any{"the host's object"}, got, "one Machine serves every add-on: the object comes with the request")
}

func TestReconcileHangingActionFailsAtItsTimeout(t *testing.T) {
	h := newHarness(t, addon.Policy{ActionTimeout: dur(time.Millisecond), InstallRemediation: addon.RemediationNone})
	h.driver.Push(fake.AddonInstall, fake.AddonOutcome{Hang: true})
	h.reconcile()
	s := h.status()
	assert.Equal(t, addon.PhaseReinitializing, s.Phase)
	assert.Equal(t, int32(1), s.InstallFailures)
	assert.Nil(t, s.InFlight)
	assert.Contains(t, s.Message, "deadline exceeded")
}

// TestRuleConflictsLoseNothing: a conflict on the outcome's write re-reads
// and records the outcome on the fresh status: the counter, the backoff and
// the events are kept, with the apiserver's 409 as with ErrConflict.
func TestRuleConflictsLoseNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conflict func(h *harness) func(addon.Request)
	}{
		{"a spec change during the action", func(h *harness) func(addon.Request) {
			return func(addon.Request) { h.spec(func(s *addon.Spec) {}) }
		}},
		{"an injected conflict", func(h *harness) func(addon.Request) {
			return func(addon.Request) { h.store.Conflicts = 1 }
		}},
		{"more conflicts in a row than a look re-reads", func(h *harness) func(addon.Request) {
			return func(addon.Request) { h.store.Conflicts = 20 }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, addon.Policy{InstallRemediation: addon.RemediationNone})
			h.driver.Push(fake.AddonInstall, fake.AddonOutcome{Err: errBoom})
			m, err := addon.NewMachine(addon.Config{Driver: hookDriver{AddonDriver: h.driver, before: tc.conflict(h)}, Store: h.store, Clock: h.clock, Owner: "m1", Policy: h.policy})
			require.NoError(t, err)
			res, err := m.Reconcile(context.Background(), h.obj())
			require.NoError(t, err)
			s := h.status()
			assert.Equal(t, addon.PhaseReinitializing, s.Phase)
			assert.Equal(t, int32(1), s.InstallFailures, "the failure is counted")
			assert.Equal(t, int32(1), s.Failures)
			assert.Nil(t, s.InFlight)
			assert.GreaterOrEqual(t, res.RequeueAfter, defaultBackoffInitial, "a failing install backs off")
			assert.Equal(t, []string{"Created", "InstallFailed"}, reasons(res.Events))
			assert.Equal(t, 1, h.driver.Count(fake.AddonInstall))
		})
	}
}

// conflictStore answers every write with the apiserver's own 409.
type conflictStore struct{ *fake.AddonStore }

func (s conflictStore) UpdateStatus(context.Context, addon.Object, addon.Status) (addon.Object, error) {
	return addon.Object{}, apierrors.NewConflict(schema.GroupResource{Group: "example.com", Resource: "addons"}, "mesh", errors.New("changed"))
}

func TestReconcileRecognisesTheAPIServerConflict(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	m, err := addon.NewMachine(addon.Config{Driver: h.driver, Store: conflictStore{h.store}, Clock: h.clock})
	require.NoError(t, err)
	_, err = m.Reconcile(context.Background(), h.obj())
	require.ErrorIs(t, err, converge.ErrConflict)
	assert.True(t, apierrors.IsConflict(err), "the apiserver's error is kept")
	assert.Zero(t, h.driver.Count(fake.AddonInstall), "nothing runs without its claim written")
}

// blockingDriver blocks Install until release is closed.
type blockingDriver struct {
	*fake.AddonDriver
	started chan struct{}
	release chan struct{}
}

func (d blockingDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	close(d.started)
	<-d.release
	return d.AddonDriver.Install(ctx, req)
}

// TestRuleOneActionInFlightAcrossDeletion: while one Machine's install runs,
// a second Machine on the same add-on (deleted meanwhile) runs nothing; the
// install's outcome is recorded, and only then the uninstall runs.
func TestRuleOneActionInFlightAcrossDeletion(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	drv := blockingDriver{AddonDriver: h.driver, started: make(chan struct{}), release: make(chan struct{})}
	a, err := addon.NewMachine(addon.Config{Driver: drv, Store: h.store, Clock: h.clock, Owner: "a"})
	require.NoError(t, err)
	b, err := addon.NewMachine(addon.Config{Driver: h.driver, Store: h.store, Clock: h.clock, Owner: "b"})
	require.NoError(t, err)

	var wg sync.WaitGroup
	wg.Add(1)
	var resA addon.Result
	var errA error
	go func() {
		defer wg.Done()
		resA, errA = a.Reconcile(context.Background(), h.obj())
	}()
	<-drv.started
	h.spec(func(s *addon.Spec) { s.Deleting = true })
	resB, err := b.Reconcile(context.Background(), h.obj())
	require.NoError(t, err)
	assert.Greater(t, resB.RequeueAfter, defaultActionTimeout, "b waits for a's claim to be recorded or to expire")
	assert.Zero(t, h.driver.Count(fake.AddonUninstall), "no uninstall while the install runs")
	close(drv.release)
	wg.Wait()
	require.NoError(t, errA)
	assert.Contains(t, reasons(resA.Events), "InstallSucceeded", "a's outcome is recorded despite the deletion's write")

	h.until(addon.PhaseDeleted, 3)
	assert.Equal(t, 1, h.driver.Count(fake.AddonInstall))
	assert.Equal(t, 1, h.driver.Count(fake.AddonUninstall))
}

// TestRuleStaleSnapshotCannotReplay: a reconcile from a stale snapshot
// neither replays a request already handled nor rolls back past the last
// good version: its write conflicts and the fresh status decides.
func TestRuleStaleSnapshotCannotReplay(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.until(addon.PhaseRunning, 3)
	h.spec(func(s *addon.Spec) { s.ForceToken = "f1" })
	stale := h.obj()
	h.until(addon.PhaseRunning, 3)
	require.Equal(t, 1, h.driver.Count(fake.AddonUpgrade), "the force re-applied v1 once")

	h.spec(func(s *addon.Spec) { s.Generation, s.Version = 2, "v2" })
	beforeV2 := h.obj()
	h.until(addon.PhaseRunning, 3)
	require.Equal(t, "v2", h.status().LastGoodVersion)
	upgrades := h.driver.Count(fake.AddonUpgrade)

	for _, snap := range []addon.Object{stale, beforeV2} {
		_, err := h.m.Reconcile(context.Background(), snap)
		require.NoError(t, err)
	}
	assert.Equal(t, upgrades, h.driver.Count(fake.AddonUpgrade), "no request replayed, no upgrade re-run")
	s := h.status()
	assert.Equal(t, "v2", s.InstalledVersion)
	assert.Equal(t, "v2", s.LastGoodVersion, "never rolled back past the last good version")
	assert.Equal(t, "f1", s.LastForceToken)
}

// TestRuleCrashBetweenClaimAndWrite: a claim whose outcome was never
// written holds until it expires; then, the Inspector finding nothing
// applied, the attempt is lost, not failed, and runs again after the
// backoff.
func TestRuleCrashBetweenClaimAndWrite(t *testing.T) {
	h := newHarness(t, addon.Policy{InstallRemediation: addon.RemediationNone})
	obj := h.obj()
	d, err := addon.Decide(addon.Input{Spec: obj.Spec, Status: obj.Status, Now: h.clock.Now(), Owner: "crashed"})
	require.NoError(t, err)
	_, err = h.store.UpdateStatus(context.Background(), obj, d.Status)
	require.NoError(t, err)

	res := h.reconcile()
	assert.Zero(t, h.driver.Count(fake.AddonInstall), "the claim holds")
	h.clock.Step(res.RequeueAfter)
	h.reconcile()
	s := h.status()
	assert.Equal(t, addon.OutcomeLost, s.History[0].Outcome)
	assert.Equal(t, int32(1), s.LostAttempts)
	assert.Zero(t, s.InstallFailures, "a lost attempt is no failure")
	assert.Equal(t, 1, h.driver.Count(fake.AddonInspect), "the takeover asked what the cluster runs")
	h.until(addon.PhaseRunning, 4)
	assert.Equal(t, 1, h.driver.Count(fake.AddonInstall))
	assert.Zero(t, h.status().LostAttempts, "the outcome its owner recorded ends the lost attempts")
}

func TestReconcileCancelledContextIsNotAFailure(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.driver.Push(fake.AddonInstall, fake.AddonOutcome{Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	drv := hookDriver{AddonDriver: h.driver, before: func(addon.Request) { cancel() }}
	m, err := addon.NewMachine(addon.Config{Driver: drv, Store: h.store, Clock: h.clock})
	require.NoError(t, err)
	res, err := m.Reconcile(ctx, h.obj())
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"Created"}, reasons(res.Events), "what was persisted is returned beside the error")
	s := h.status()
	assert.Zero(t, s.InstallFailures)
	assert.NotNil(t, s.InFlight, "the claim stays and expires")
}

func TestReconcileWritesOnlyWhatChanged(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.until(addon.PhaseRunning, 3)
	writes := h.store.Writes
	h.reconcile()
	assert.Equal(t, writes, h.store.Writes, "a look that changes nothing writes nothing")
}

func TestAMachineNotMadeByNewMachineIsAnErrorNotAPanic(t *testing.T) {
	var nilMachine *addon.Machine
	for _, m := range []*addon.Machine{nilMachine, new(addon.Machine)} {
		_, err := m.Reconcile(context.Background(), addon.Object{Spec: addon.Spec{Name: "mesh", Version: "v1"}})
		require.ErrorIs(t, err, converge.ErrInvalid)
		assert.EqualError(t, err, "addon: invalid Machine: not made by NewMachine")
	}
}

// healthHook runs during on the first Health call, then delegates.
type healthHook struct {
	*fake.AddonDriver
	during func()
}

func (d *healthHook) Health(ctx context.Context, req addon.Request) (addon.Health, error) {
	h, err := d.AddonDriver.Health(ctx, req)
	if d.during != nil {
		d.during()
		d.during = nil
	}
	return h, err
}

// TestRuleHealthReadIsWrittenOnlyOverTheStatusItWasDecidedFrom: a health
// read is written with the look it was decided from; when another writer
// changed the status meanwhile (here: another Machine upgraded to v2 while
// v1 was read healthy), the read is dropped, not recorded on the fresh
// status, and the fresh status decides again and reads again.
func TestRuleHealthReadIsWrittenOnlyOverTheStatusItWasDecidedFrom(t *testing.T) {
	h := newHarness(t, addon.Policy{})
	h.reconcile()
	require.Equal(t, addon.PhaseChecking, h.status().Phase)
	h.driver.Push(fake.AddonHealth, fake.AddonOutcome{Health: addon.HealthHealthy}, fake.AddonOutcome{Health: addon.HealthUnhealthy})
	drv := &healthHook{AddonDriver: h.driver, during: func() {
		obj := h.obj()
		upgraded := *obj.Status.DeepCopy()
		upgraded.InstalledVersion, upgraded.Verifying, upgraded.LastTransitionTime = "v2", addon.ActionUpgrade, metav1.NewTime(h.clock.Now())
		_, err := h.store.UpdateStatus(context.Background(), obj, upgraded)
		require.NoError(t, err)
	}}
	m, err := addon.NewMachine(addon.Config{Driver: drv, Store: h.store, Clock: h.clock, Owner: "m1"})
	require.NoError(t, err)
	_, err = m.Reconcile(quiet, h.obj())
	require.NoError(t, err)
	s := h.status()
	assert.Equal(t, 2, h.driver.Count(fake.AddonHealth), "the fresh status reads again")
	assert.Equal(t, addon.PhaseChecking, s.Phase, "v2 is not taken for healthy on a read of v1")
	assert.Empty(t, s.LastGoodVersion)
	assert.Equal(t, addon.HealthUnhealthy, s.Health)
}
