package fake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

// TestAddonDriverInspectsWhatItLastApplied: Inspect reports the version
// and revision of the last Install or Upgrade that returned without error,
// nothing after such an Uninstall, and a scripted answer first; every call
// records its fencing token.
func TestAddonDriverInspectsWhatItLastApplied(t *testing.T) {
	boom := errors.New("boom")
	d := &fake.AddonDriver{}
	ctx := context.Background()
	spec := addon.Spec{Name: "mesh", Version: "v2"}
	inspect := func() addon.Installed {
		t.Helper()
		inst, err := d.Inspect(ctx, addon.Request{Spec: spec, Fence: 3})
		require.NoError(t, err)
		return inst
	}
	assert.Equal(t, addon.Installed{}, inspect(), "nothing applied yet")
	_, err := d.Install(ctx, addon.Request{Spec: spec, To: "v1", Fence: 1})
	require.NoError(t, err)
	assert.Equal(t, addon.Installed{Version: "v1", Revision: "1"}, inspect())
	d.Push(fake.AddonUpgrade, fake.AddonOutcome{Err: boom})
	_, err = d.Upgrade(ctx, addon.Request{Spec: spec, From: "v1", To: "v2", Fence: 2})
	require.ErrorIs(t, err, boom)
	assert.Equal(t, addon.Installed{Version: "v1", Revision: "1"}, inspect(), "a failed upgrade applied nothing")
	d.Push(fake.AddonInspect, fake.AddonOutcome{Installed: &addon.Installed{Version: "v9"}}, fake.AddonOutcome{Err: boom})
	assert.Equal(t, addon.Installed{Version: "v9"}, inspect(), "a scripted answer")
	_, err = d.Inspect(ctx, addon.Request{Spec: spec})
	require.ErrorIs(t, err, boom)
	require.NoError(t, d.Uninstall(ctx, addon.Request{Spec: spec, From: "v1", Fence: 4}))
	assert.Equal(t, addon.Installed{}, inspect())
	var fences []int64
	for _, c := range d.Recorded() {
		fences = append(fences, c.Fence)
	}
	assert.Equal(t, []int64{3, 1, 3, 2, 3, 3, 0, 4, 3}, fences)
}

func TestAddonDriverScriptsOutcomesInOrder(t *testing.T) {
	boom := errors.New("boom")
	d := &fake.AddonDriver{}
	d.Push(fake.AddonInstall, fake.AddonOutcome{Err: boom}, fake.AddonOutcome{Revision: "r7"})
	d.Push(fake.AddonHealth, fake.AddonOutcome{Health: addon.HealthUnhealthy}, fake.AddonOutcome{Err: boom})
	d.Push(fake.AddonDrift, fake.AddonOutcome{Drifted: true, Detail: "replicas"})
	ctx := context.Background()
	req := addon.Request{Spec: addon.Spec{Name: "mesh", Version: "v1"}, To: "v1"}

	rev, err := d.Install(ctx, req)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, "1", rev, "a failed call has a revision of its own too")
	rev, err = d.Install(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "r7", rev, "a scripted revision is returned as is")
	rev, err = d.Install(ctx, req)
	require.NoError(t, err, "an empty queue succeeds")
	assert.Equal(t, "2", rev, "the driver's own revisions count its calls without a scripted revision")

	h, err := d.Health(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, addon.HealthUnhealthy, h)
	h, err = d.Health(ctx, req)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, addon.HealthUnknown, h)
	h, err = d.Health(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, addon.HealthHealthy, h)

	drifted, detail, err := d.Drift(ctx, req)
	require.NoError(t, err)
	assert.True(t, drifted)
	assert.Equal(t, "replicas", detail)
	require.NoError(t, d.Test(ctx, req))

	rev, err = d.Upgrade(ctx, addon.Request{Spec: req.Spec, From: "v1", To: "v2"})
	require.NoError(t, err)
	assert.Equal(t, "3", rev)
	_, err = d.Upgrade(ctx, addon.Request{Spec: req.Spec, From: "v2", To: "v1", Rollback: true, Revision: "2"})
	require.NoError(t, err)
	require.NoError(t, d.Uninstall(ctx, addon.Request{Spec: req.Spec, From: "v2"}))
	assert.Equal(t, []fake.AddonCall{
		{Method: fake.AddonInstall, Name: "mesh", To: "v1"},
		{Method: fake.AddonInstall, Name: "mesh", To: "v1"},
		{Method: fake.AddonInstall, Name: "mesh", To: "v1"},
		{Method: fake.AddonHealth, Name: "mesh", To: "v1"},
		{Method: fake.AddonHealth, Name: "mesh", To: "v1"},
		{Method: fake.AddonHealth, Name: "mesh", To: "v1"},
		{Method: fake.AddonDrift, Name: "mesh", To: "v1"},
		{Method: fake.AddonTest, Name: "mesh", To: "v1"},
		{Method: fake.AddonUpgrade, Name: "mesh", From: "v1", To: "v2"},
		{Method: fake.AddonUpgrade, Name: "mesh", From: "v2", To: "v1", Rollback: true, Revision: "2"},
		{Method: fake.AddonUninstall, Name: "mesh", From: "v2"},
	}, d.Recorded())
	assert.Equal(t, 3, d.Count(fake.AddonHealth))
}

func TestAddonDriverHangReturnsWhenContextEnds(t *testing.T) {
	d := &fake.AddonDriver{}
	d.Push(fake.AddonUpgrade, fake.AddonOutcome{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, err := d.Upgrade(ctx, addon.Request{Spec: addon.Spec{Name: "mesh", Version: "v2"}, From: "v1", To: "v2"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestAddonDriverPanicPanicsAfterRecordingTheCall(t *testing.T) {
	d := &fake.AddonDriver{}
	d.Push(fake.AddonHealth, fake.AddonOutcome{Panic: "nil map"})
	req := addon.Request{Spec: addon.Spec{Name: "mesh", Version: "v1"}}
	assert.PanicsWithValue(t, "nil map", func() { _, _ = d.Health(context.Background(), req) })
	assert.Equal(t, 1, d.Count(fake.AddonHealth))
	h, err := d.Health(context.Background(), req)
	require.NoError(t, err, "the panic was the one scripted")
	assert.Equal(t, addon.HealthHealthy, h)
}

func TestAddonDriverIsSafeForConcurrentUse(t *testing.T) {
	d := &fake.AddonDriver{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = d.Health(context.Background(), addon.Request{Spec: addon.Spec{Name: "mesh", Version: "v1"}})
			d.Push(fake.AddonInstall, fake.AddonOutcome{})
		}()
	}
	wg.Wait()
	assert.Equal(t, 8, d.Count(fake.AddonHealth))
}

func TestAddonStoreRefusesStaleWritesAndInjectedConflicts(t *testing.T) {
	ctx := context.Background()
	s := &fake.AddonStore{Conflicts: 1}
	obj := s.Put(addon.Object{Spec: addon.Spec{Name: "mesh", Generation: 1, Version: "v1"}})
	running := addon.Status{Phase: addon.PhaseRunning}

	_, err := s.UpdateStatus(ctx, obj, running)
	require.ErrorIs(t, err, converge.ErrConflict, "an injected conflict")
	got, err := s.Get(ctx, "mesh")
	require.NoError(t, err)
	assert.Empty(t, got.Status.Phase, "a refused write stores nothing")

	written, err := s.UpdateStatus(ctx, obj, running)
	require.NoError(t, err)
	assert.NotEqual(t, obj.ResourceVersion, written.ResourceVersion)
	_, err = s.UpdateStatus(ctx, obj, addon.Status{Phase: addon.PhaseFailed})
	require.ErrorIs(t, err, converge.ErrConflict, "a write from a stale read")

	updated, ok := s.Update("mesh", func(spec *addon.Spec) { spec.Generation, spec.Version = 2, "v2" })
	require.True(t, ok)
	assert.Equal(t, addon.PhaseRunning, updated.Status.Phase, "a spec update keeps the status")
	_, err = s.UpdateStatus(ctx, written, running)
	require.ErrorIs(t, err, converge.ErrConflict, "the spec changed since the read")
	assert.Equal(t, 1, s.Writes)
	_, err = s.Get(ctx, "other")
	require.Error(t, err)
}

// AddonStore.Update moves the generation as the API server does: on a
// change of the spec or a deletion, unless the update sets it itself; not
// on a request token (an annotation) or no change at all.
func TestAddonStoreUpdateMovesTheGenerationAsTheAPIServerDoes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*addon.Spec)
		want   int64
	}{
		{name: "a new version", change: func(s *addon.Spec) { s.Version = "v2" }, want: 4},
		{name: "a deletion", change: func(s *addon.Spec) { s.Deleting = true }, want: 4},
		{name: "a generation set by the update is kept", change: func(s *addon.Spec) { s.Generation, s.Version = 7, "v2" }, want: 7},
		{name: "a reset request is an annotation", change: func(s *addon.Spec) { s.ResetToken = "r1" }, want: 3},
		{name: "a force request is an annotation", change: func(s *addon.Spec) { s.ForceToken = "f1" }, want: 3},
		{name: "no change", change: func(*addon.Spec) {}, want: 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &fake.AddonStore{}
			s.Put(addon.Object{Spec: addon.Spec{Name: "mesh", Generation: 3, Version: "v1"}})
			updated, ok := s.Update("mesh", tt.change)
			require.True(t, ok)
			assert.Equal(t, tt.want, updated.Spec.Generation)
		})
	}
}
