//go:build !integration

package payloadapply

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

func statusStore(t *testing.T, c *Cluster, fieldManager string) *kube.ConfigMapStatusStore[payload.Status] {
	t.Helper()
	store, err := kube.NewConfigMapStatusStoreFor[payload.Status](ConfigMap{Client: c.Typed, Namespace: "default", FieldManager: fieldManager}, "default", StatusConfigMap, "")
	require.NoError(t, err)
	return store
}

func TestStatusStore(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).Local()) // as metav1.Time unmarshals it
	applied := payload.Status{
		ObservedGeneration: 1, State: payload.StateReconciling, Done: 30, Total: 30, Completed: 2,
		LastProgressTime: &at, Release: payload.Release{Version: "1.0.0", Image: "embedded://payload-apply/manifests"},
	}
	failing := payload.Status{
		ObservedGeneration: 2, State: payload.StateUpdating, Done: 12, Total: 30, Failures: 1,
		Failure:          &payload.Failure{Reason: "UpdatePayloadFailed", Message: "Could not update job", Effect: payload.EffectFail},
		LastProgressTime: &at, Release: payload.Release{Version: "1.1.0", Image: "embedded://payload-apply/manifests"},
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
			c, err := MemoryCluster(at.Time)
			require.NoError(t, err)
			store := statusStore(t, c, "test")
			writer := kube.LatestStatusWriter[payload.Status]{Store: store}
			for _, s := range tt.saves {
				require.NoError(t, writer.WriteStatus(context.Background(), s))
			}
			got, _, err := store.GetStatus(context.Background())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			if len(tt.saves) > 0 {
				cm, err := c.Typed.CoreV1().ConfigMaps("default").Get(context.Background(), StatusConfigMap, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Contains(t, cm.Data, "status.json", "the status is JSON under status.json")
			}
		})
	}
}

func TestStatusStoreRejectsAnUnreadableStatus(t *testing.T) {
	c, err := MemoryCluster(time.Now())
	require.NoError(t, err)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: StatusConfigMap, Namespace: "default"},
		Data:       map[string]string{"status.json": "{not json"},
	}
	_, err = c.Typed.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
	require.NoError(t, err)
	_, _, err = statusStore(t, c, "test").GetStatus(context.Background())
	assert.ErrorContains(t, err, "ConfigMap default/payload-apply-status")
}
