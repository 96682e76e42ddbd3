package fake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

func TestAddonDriverScriptsOutcomesInOrder(t *testing.T) {
	boom := errors.New("boom")
	d := &fake.AddonDriver{}
	d.Push(fake.AddonInstall, fake.AddonOutcome{Err: boom})
	d.Push(fake.AddonHealth, fake.AddonOutcome{Health: addon.HealthUnhealthy}, fake.AddonOutcome{Err: boom})
	ctx := context.Background()
	spec := addon.Spec{Name: "mesh", Version: "v1"}

	require.ErrorIs(t, d.Install(ctx, spec), boom)
	require.NoError(t, d.Install(ctx, spec), "an empty queue succeeds")

	h, err := d.Health(ctx, spec)
	require.NoError(t, err)
	assert.Equal(t, addon.HealthUnhealthy, h)
	h, err = d.Health(ctx, spec)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, addon.HealthUnknown, h)
	h, err = d.Health(ctx, spec)
	require.NoError(t, err)
	assert.Equal(t, addon.HealthHealthy, h)

	require.NoError(t, d.Upgrade(ctx, spec, "v1", "v2"))
	require.NoError(t, d.Uninstall(ctx, spec))
	assert.Equal(t, []fake.AddonCall{
		{Method: fake.AddonInstall, Name: "mesh", Version: "v1"},
		{Method: fake.AddonInstall, Name: "mesh", Version: "v1"},
		{Method: fake.AddonHealth, Name: "mesh", Version: "v1"},
		{Method: fake.AddonHealth, Name: "mesh", Version: "v1"},
		{Method: fake.AddonHealth, Name: "mesh", Version: "v1"},
		{Method: fake.AddonUpgrade, Name: "mesh", Version: "v1", From: "v1", To: "v2"},
		{Method: fake.AddonUninstall, Name: "mesh", Version: "v1"},
	}, d.Recorded())
	assert.Equal(t, 3, d.Count(fake.AddonHealth))
}

func TestAddonDriverHangReturnsWhenContextEnds(t *testing.T) {
	d := &fake.AddonDriver{}
	d.Push(fake.AddonUpgrade, fake.AddonOutcome{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err := d.Upgrade(ctx, addon.Spec{Name: "mesh", Version: "v2"}, "v1", "v2")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestAddonDriverIsSafeForConcurrentUse(t *testing.T) {
	d := &fake.AddonDriver{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = d.Health(context.Background(), addon.Spec{Name: "mesh", Version: "v1"})
			d.Push(fake.AddonInstall, fake.AddonOutcome{})
		}()
	}
	wg.Wait()
	assert.Equal(t, 8, d.Count(fake.AddonHealth))
}

func TestAddonStatusStoreConflictsThenStores(t *testing.T) {
	s := &fake.AddonStatusStore{Conflicts: 1}
	spec := addon.Spec{Name: "mesh", Version: "v1"}
	st := addon.Status{Phase: addon.PhaseRunning}

	err := s.WriteStatus(context.Background(), spec, st)
	require.ErrorIs(t, err, addon.ErrConflict)
	_, ok := s.Get("mesh")
	assert.False(t, ok, "a refused write stores nothing")

	require.NoError(t, s.WriteStatus(context.Background(), spec, st))
	got, ok := s.Get("mesh")
	require.True(t, ok)
	assert.Equal(t, addon.PhaseRunning, got.Phase)
	assert.Equal(t, 1, s.Writes)
}
