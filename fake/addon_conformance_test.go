package fake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/addon"
)

// staleAddonStore is a broken store that accepts writes at any version.
type staleAddonStore struct{ *AddonStore }

func (s staleAddonStore) UpdateStatus(ctx context.Context, obj addon.Object, st addon.Status) (addon.Object, error) {
	cur, err := s.Get(ctx, obj.Spec.Name)
	if err != nil {
		return addon.Object{}, err
	}
	obj.ResourceVersion = cur.ResourceVersion
	return s.AddonStore.UpdateStatus(ctx, obj, st)
}

func TestTestAddonStore(t *testing.T) {
	ctx := context.Background()
	newStore := func() *AddonStore {
		s := &AddonStore{}
		s.Put(addon.Object{Spec: addon.Spec{Name: "tke/mesh", Generation: 1, Version: "v1"}})
		return s
	}
	require.NoError(t, TestAddonStore(ctx, newStore(), "tke/mesh"), "the fake keeps the contract")
	assert.ErrorContains(t, TestAddonStore(ctx, staleAddonStore{newStore()}, "tke/mesh"), "want a conflict", "a store without optimistic concurrency fails the check")
	assert.Error(t, TestAddonStore(ctx, newStore(), "tke/missing"), "a missing add-on fails the check")
}
