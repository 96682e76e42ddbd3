package kube

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
)

// readStatus adapts a store's GetStatus to the read of
// fake.TestPayloadStatusWriter.
func readStatus[T any](s StatusReadWriter[T]) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) {
		st, _, err := s.GetStatus(ctx)
		return st, err
	}
}

// LatestStatusWriter keeps the payload worker's status writer contract over
// each store, on the fake clients with the API server's resource versions; a
// second writer on its own store stands for another replica.
func TestLatestStatusWriterPassesThePayloadConformanceCheck(t *testing.T) {
	tests := []struct {
		name     string
		newStore func(t *testing.T) func() StatusReadWriter[payload.Status]
	}{
		{name: "ConfigMap, created by the first write", newStore: func(t *testing.T) func() StatusReadWriter[payload.Status] {
			client := newConfigMaps(t)
			return func() StatusReadWriter[payload.Status] {
				s, err := NewConfigMapStatusStore[payload.Status](client.CoreV1(), "ns", "payload-status", "")
				require.NoError(t, err)
				return s
			}
		}},
		{name: "custom resource, whole status", newStore: func(t *testing.T) func() StatusReadWriter[payload.Status] {
			client := newWidgets(t, map[string]any{"other": "replaced"})
			return func() StatusReadWriter[payload.Status] {
				s, err := NewObjectStatusStore[payload.Status](client, widgets, "ns", "w")
				require.NoError(t, err)
				return s
			}
		}},
		{name: "custom resource, status.payload", newStore: func(t *testing.T) func() StatusReadWriter[payload.Status] {
			client := newWidgets(t, map[string]any{"other": "kept"})
			return func() StatusReadWriter[payload.Status] {
				s, err := NewObjectStatusStore[payload.Status](client, widgets, "ns", "w", "status", "payload")
				require.NoError(t, err)
				return s
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newStore := tt.newStore(t)
			w := LatestStatusWriter[payload.Status]{Store: newStore()}
			foreign := LatestStatusWriter[payload.Status]{Store: newStore()}
			require.NoError(t, fake.TestPayloadStatusWriter(context.Background(), w, foreign, readStatus(newStore())))
		})
	}
}
