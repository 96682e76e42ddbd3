package fake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/rollout"
)

// Every conformance checker answers a missing store or context with an
// error, never a panic.
func TestConformanceCheckersRefuseNilStores(t *testing.T) {
	var typedNilRollout *RolloutStatusStore
	var typedNilAddon *AddonStore
	var nilCtx context.Context
	tests := []struct {
		name  string
		check func() error
	}{
		{name: "a nil rollout store", check: func() error { return TestRolloutStatusStore(context.Background(), nil) }},
		{name: "a typed-nil rollout store", check: func() error {
			return TestRolloutStatusStore(context.Background(), rollout.StatusStore(typedNilRollout))
		}},
		{name: "a rollout check without context", check: func() error { return TestRolloutStatusStore(nilCtx, &RolloutStatusStore{}) }},
		{name: "a nil add-on store", check: func() error { return TestAddonStore(context.Background(), nil, "a") }},
		{name: "a typed-nil add-on store", check: func() error {
			return TestAddonStore(context.Background(), addon.Store(typedNilAddon), "a")
		}},
		{name: "an add-on check without context", check: func() error { return TestAddonStore(nilCtx, &AddonStore{}, "a") }},
		{name: "a payload check without context", check: func() error {
			v := &payloadStatusVersions{}
			return TestPayloadStatusWriter(nilCtx, latestWriter{v}, latestWriter{v}, v.read)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			assert.NotPanics(t, func() { err = tt.check() })
			assert.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
}
