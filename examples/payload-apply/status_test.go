package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/converge-dev/converge/payload"
)

func TestStatusStore(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Local()) // as metav1.Time unmarshals it
	applied := payload.Status{
		ObservedGeneration: 1, State: payload.StateReconciling, Done: 30, Total: 30, Completed: 2,
		LastProgressTime: &at, Release: payload.Release{Version: "1.0.0", Image: releaseImage},
	}
	failing := payload.Status{
		ObservedGeneration: 2, State: payload.StateUpdating, Done: 12, Total: 30, Failures: 1,
		Failure:          &payload.Failure{Reason: "UpdatePayloadFailed", Message: "Could not update job", Effect: payload.EffectFail},
		LastProgressTime: &at, Release: payload.Release{Version: "1.1.0", Image: releaseImage},
	}
	tests := []struct {
		name  string
		saves []payload.Status
		want  payload.Status
	}{
		{"nothing saved is the zero status", nil, payload.Status{}},
		{"the saved status", []payload.Status{applied}, applied},
		{"the last saved status", []payload.Status{applied, failing}, failing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := memoryCluster(at.Time)
			require.NoError(t, err)
			store := newStatusStore(c.client, "default", "test")
			for _, s := range tt.saves {
				require.NoError(t, store.save(context.Background(), s))
			}
			got, err := store.load(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestStatusStoreRejectsAnUnreadableStatus(t *testing.T) {
	c, err := memoryCluster(time.Now())
	require.NoError(t, err)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": statusConfigMap, "namespace": "default"},
		"data":     map[string]any{statusKey: "{not json"},
	}}
	_, err = c.client.Resource(configMaps).Namespace("default").Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = newStatusStore(c.client, "default", "test").load(context.Background())
	assert.ErrorContains(t, err, "reading the status of ConfigMap default/payload-apply-status")
}
