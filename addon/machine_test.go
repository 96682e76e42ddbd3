package addon_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"go.uber.org/goleak"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

var meshSpec = addon.Spec{Name: "tke/mesh-manager", Generation: 1, Version: "v1"}

func newMachine(t *testing.T, cfg addon.Config) *addon.Machine {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = clocktesting.NewFakeClock(t0)
	}
	if cfg.Jitter == nil {
		cfg.Jitter = func() float64 { return 0 }
	}
	m, err := addon.NewMachine(cfg)
	require.NoError(t, err)
	return m
}

func TestReconcileRunsAtMostOneActionPerCall(t *testing.T) {
	drv := &fake.AddonDriver{}
	m := newMachine(t, addon.Config{Driver: drv})
	st, res, err := m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.NoError(t, err)
	assert.Equal(t, []fake.AddonCall{{Method: fake.AddonInstall, Name: meshSpec.Name, Version: "v1"}}, drv.Recorded())
	assert.Equal(t, addon.ActionInstall, res.Action)
	assert.True(t, res.Requeue, "the health check is due at once, in the next call")
	assert.Equal(t, addon.PhaseChecking, st.Phase)
	require.Len(t, res.Events, 2)
	assert.Equal(t, "Created", res.Events[0].Reason)
	assert.Equal(t, "InstallSucceeded", res.Events[1].Reason)
}

func TestReconcileHangingActionFailsAtItsTimeout(t *testing.T) {
	drv := &fake.AddonDriver{}
	drv.Push(fake.AddonInstall, fake.AddonOutcome{Hang: true})
	m := newMachine(t, addon.Config{Driver: drv, Policy: addon.Policy{ActionTimeout: 5 * time.Millisecond}})
	st, _, err := m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.NoError(t, err, "a failed action is recorded, not returned")
	assert.Equal(t, addon.PhaseReinitializing, st.Phase)
	assert.Equal(t, 1, st.InstallFailures)
	assert.Contains(t, st.Message, context.DeadlineExceeded.Error())
}

func TestReconcileConflictBeforeTheActionRunsNothing(t *testing.T) {
	drv := &fake.AddonDriver{}
	store := &fake.AddonStatusStore{Conflicts: 1}
	m := newMachine(t, addon.Config{Driver: drv, Writer: store})
	st, res, err := m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.ErrorIs(t, err, addon.ErrConflict)
	assert.Empty(t, drv.Recorded(), "another writer won: this one must not install too (seed bug 2)")
	assert.Equal(t, addon.ActionNone, res.Action)
	assert.Equal(t, addon.ActionInstall, st.PendingAction, "the decision is still returned")

	st, _, err = m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.NoError(t, err)
	assert.Equal(t, addon.PhaseChecking, st.Phase)
	stored, ok := store.Get(meshSpec.Name)
	require.True(t, ok)
	assert.Equal(t, st, stored)
	assert.Equal(t, 2, store.Writes, "claimed before the action, recorded after it")
}

func TestReconcileConflictAfterTheActionLosesNothing(t *testing.T) {
	drv := &fake.AddonDriver{}
	var writes int
	var stored addon.Status
	writer := addon.StatusWriterFunc(func(_ context.Context, _ addon.Spec, st addon.Status) error {
		writes++
		if writes == 2 {
			return apierrors.NewConflict(schema.GroupResource{Group: "mesh.tkestack.io", Resource: "meshmanagers"}, "mesh-manager", errors.New("changed"))
		}
		stored = st
		return nil
	})
	m := newMachine(t, addon.Config{Driver: drv, Writer: writer, IsConflict: apierrors.IsConflict})
	st, _, err := m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.ErrorIs(t, err, addon.ErrConflict, "seed bug 3: the conflict surfaces instead of being logged")
	assert.True(t, apierrors.IsConflict(errors.Unwrap(err)))
	assert.Equal(t, addon.PhaseChecking, st.Phase, "the outcome is in the returned status")

	// The host retries with a fresh read (the claim written before the
	// install): the idempotent install runs again and reaches the same place.
	require.Equal(t, addon.ActionInstall, stored.PendingAction)
	st2, _, err := m.Reconcile(context.Background(), meshSpec, stored)
	require.NoError(t, err)
	assert.Equal(t, st.Phase, st2.Phase)
	assert.Equal(t, 2, drv.Count(fake.AddonInstall))
}

func TestReconcileWriteErrorIsWrapped(t *testing.T) {
	boom := errors.New("etcd down")
	m := newMachine(t, addon.Config{Driver: &fake.AddonDriver{}, Writer: addon.StatusWriterFunc(func(context.Context, addon.Spec, addon.Status) error { return boom })})
	_, _, err := m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, addon.ErrConflict)
	assert.Contains(t, err.Error(), "addon: write status")
}

func TestReconcileBadInputIsAnErrorNotAPanic(t *testing.T) {
	drv := &fake.AddonDriver{}
	m := newMachine(t, addon.Config{Driver: drv})
	_, _, err := m.Reconcile(context.Background(), addon.Spec{}, addon.Status{Phase: "Bogus"})
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Empty(t, drv.Recorded())
}

func TestReconcileRestartMidActionRerunsIt(t *testing.T) {
	drv := &fake.AddonDriver{}
	store := &fake.AddonStatusStore{}
	var claimed addon.Status
	writer := addon.StatusWriterFunc(func(ctx context.Context, spec addon.Spec, st addon.Status) error {
		if claimed.Phase == "" {
			claimed = *st.DeepCopy() // the process dies after this write
		}
		return store.WriteStatus(ctx, spec, st)
	})
	m := newMachine(t, addon.Config{Driver: drv, Writer: writer})
	_, _, err := m.Reconcile(context.Background(), meshSpec, addon.Status{})
	require.NoError(t, err)
	require.Equal(t, addon.ActionInstall, claimed.PendingAction, "the claim records the action before it runs")

	restarted := newMachine(t, addon.Config{Driver: drv})
	st, res, err := restarted.Reconcile(context.Background(), meshSpec, claimed)
	require.NoError(t, err)
	assert.Equal(t, addon.ActionInstall, res.Action, "the lost outcome is recovered by running the idempotent action again")
	assert.Equal(t, addon.PhaseChecking, st.Phase)
	assert.Equal(t, 2, drv.Count(fake.AddonInstall))
}

func TestDeletedAddonIsNeverReinstalled(t *testing.T) {
	drv := &fake.AddonDriver{}
	clk := clocktesting.NewFakeClock(t0)
	m := newMachine(t, addon.Config{Driver: drv, Clock: clk})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent()) // no goroutine per object or phase
	spec := meshSpec
	st, _, err := m.Reconcile(context.Background(), spec, addon.Status{})
	require.NoError(t, err)
	spec.Deleting = true
	st, res, err := m.Reconcile(context.Background(), spec, st)
	require.NoError(t, err)
	require.True(t, res.Deleted)
	for range 10 {
		clk.Step(time.Hour)
		st, res, err = m.Reconcile(context.Background(), spec, st)
		require.NoError(t, err)
		assert.True(t, res.Deleted)
		assert.Equal(t, addon.ActionNone, res.Action)
	}
	assert.Equal(t, 1, drv.Count(fake.AddonInstall), "seed bug 1: nothing left running re-installs a deleted add-on")
}

func TestReconcileCancelledContextIsNotAFailure(t *testing.T) {
	drv := &fake.AddonDriver{}
	drv.Push(fake.AddonInstall, fake.AddonOutcome{Hang: true})
	m := newMachine(t, addon.Config{Driver: drv})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, res, err := m.Reconcile(ctx, meshSpec, addon.Status{})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, addon.ActionInstall, res.Action)
	assert.Zero(t, st.InstallFailures, "shutting down says nothing about the add-on")
	assert.Equal(t, addon.ActionInstall, st.PendingAction, "the install runs again next time")
}

func TestReconcileWritesOnlyWhatChanged(t *testing.T) {
	store := &fake.AddonStatusStore{}
	clk := clocktesting.NewFakeClock(t0)
	m := newMachine(t, addon.Config{Driver: &fake.AddonDriver{}, Writer: store, Clock: clk})
	st := addon.Status{}
	var err error
	for range 2 { // install, then health: Running
		st, _, err = m.Reconcile(context.Background(), meshSpec, st)
		require.NoError(t, err)
	}
	require.Equal(t, addon.PhaseRunning, st.Phase)
	writes := store.Writes
	clk.Step(time.Minute) // the next health check is not due yet
	again, res, err := m.Reconcile(context.Background(), meshSpec, st)
	require.NoError(t, err)
	assert.Equal(t, st, again)
	assert.Equal(t, 4*time.Minute, res.RequeueAfter)
	assert.Equal(t, writes, store.Writes, "a look that changes nothing writes nothing")
}

func TestNewMachineReportsPolicyProblems(t *testing.T) {
	_, err := addon.NewMachine(addon.Config{Driver: &fake.AddonDriver{}, Policy: addon.Policy{MaxRetries: -3}})
	require.ErrorIs(t, err, addon.ErrInvalid)
	assert.Equal(t, "addon: invalid config: policy: maxRetries -3 is below -1", err.Error())
}

// versionedStore persists one status with a version, like an object's
// resourceVersion: a write from a reader of an older version conflicts.
type versionedStore struct {
	mu      sync.Mutex
	version int
	status  addon.Status
}

// reader returns a Writer for a reconcile that read the store at its
// current version; each of its successful writes moves its version on.
func (s *versionedStore) reader() (addon.Status, addon.StatusWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	read, st := s.version, *s.status.DeepCopy()
	return st, addon.StatusWriterFunc(func(_ context.Context, _ addon.Spec, st addon.Status) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.version != read {
			return fmt.Errorf("store: version %d, written from %d: %w", s.version, read, addon.ErrConflict)
		}
		s.version++
		read = s.version
		s.status = *st.DeepCopy()
		return nil
	})
}

// blockingDriver holds Install until release is closed.
type blockingDriver struct {
	*fake.AddonDriver
	started chan struct{}
	release chan struct{}
}

func (d *blockingDriver) Install(ctx context.Context, spec addon.Spec) error {
	close(d.started)
	<-d.release
	return d.AddonDriver.Install(ctx, spec)
}

// Seed bug 2 across workers: two Machines reconcile the same add-on from the
// same read while the first one's install is in flight. The Writer's claim
// makes the second one lose: the install runs once.
func TestTwoMachinesRacingRunTheActionOnce(t *testing.T) {
	store := &versionedStore{}
	drv := &blockingDriver{AddonDriver: &fake.AddonDriver{}, started: make(chan struct{}), release: make(chan struct{})}

	statusA, writerA := store.reader()
	statusB, writerB := store.reader()
	a := newMachine(t, addon.Config{Driver: drv, Writer: writerA})
	b := newMachine(t, addon.Config{Driver: drv, Writer: writerB})

	type outcome struct {
		st  addon.Status
		res addon.Result
		err error
	}
	done := make(chan outcome)
	go func() {
		st, res, err := a.Reconcile(context.Background(), meshSpec, statusA)
		done <- outcome{st, res, err}
	}()
	<-drv.started // A has claimed the install and is running it

	_, resB, errB := b.Reconcile(context.Background(), meshSpec, statusB)
	close(drv.release)
	gotA := <-done

	require.NoError(t, gotA.err)
	assert.Equal(t, addon.ActionInstall, gotA.res.Action)
	assert.Equal(t, addon.PhaseChecking, gotA.st.Phase)
	require.ErrorIs(t, errB, addon.ErrConflict, "the second claim is refused")
	assert.Equal(t, addon.ActionNone, resB.Action, "the loser runs nothing")
	assert.Equal(t, 1, drv.Count(fake.AddonInstall), "one install, not two")
	assert.Equal(t, gotA.st, store.status, "the winner's outcome is stored")
}
