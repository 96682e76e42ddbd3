package kube

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
)

func newConfigMaps(t *testing.T) *k8sfake.Clientset {
	t.Helper()
	client := k8sfake.NewClientset()
	fake.EnforceResourceVersions(client)
	return client
}

func TestConfigMapStatusStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	client := newConfigMaps(t)
	s, err := NewConfigMapStatusStore[engineStatus](client.CoreV1(), "ns", "engine-status", "")
	require.NoError(t, err)

	got, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Zero(t, got, "no ConfigMap is the zero status")
	assert.Empty(t, rv)

	rv1, err := s.UpdateStatus(ctx, engineStatus{Revision: 1, Nodes: []string{"a"}}, rv)
	require.NoError(t, err, "version \"\" creates the ConfigMap")
	require.NotEmpty(t, rv1)

	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 9}, "")
	assert.True(t, apierrors.IsConflict(err), "a second create is a 409: %v", err)

	cm, err := client.CoreV1().ConfigMaps("ns").Get(ctx, "engine-status", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Labels = map[string]string{"owner": "someone"}
	cm.Data["other"] = "kept"
	_, err = client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv1)
	assert.True(t, apierrors.IsConflict(err), "a write over another writer's change is a 409: %v", err)

	got, rv2, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, engineStatus{Revision: 1, Nodes: []string{"a"}}, got)
	rv3, err := s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv2)
	require.NoError(t, err)
	assert.NotEqual(t, rv2, rv3)

	rv4, err := s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv3)
	require.NoError(t, err)
	assert.Equal(t, rv3, rv4, "an unchanged status writes nothing")

	cm, err = client.CoreV1().ConfigMaps("ns").Get(ctx, "engine-status", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kept", cm.Data["other"])
	assert.Equal(t, "someone", cm.Labels["owner"])
	assert.JSONEq(t, `{"revision":2}`, cm.Data["status.json"])
}

func TestConfigMapStatusStoreDeletedMeanwhileIsAConflict(t *testing.T) {
	ctx := context.Background()
	client := newConfigMaps(t)
	s, err := NewConfigMapStatusStore[engineStatus](client.CoreV1(), "ns", "engine-status", "status")
	require.NoError(t, err)
	rv, err := s.UpdateStatus(ctx, engineStatus{Revision: 1}, "")
	require.NoError(t, err)
	require.NoError(t, client.CoreV1().ConfigMaps("ns").Delete(ctx, "engine-status", metav1.DeleteOptions{}))
	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 2}, rv)
	assert.True(t, apierrors.IsConflict(err), "%v", err)
}

func TestConfigMapStatusStoreReportsUndecodableData(t *testing.T) {
	ctx := context.Background()
	client := newConfigMaps(t)
	_, err := client.CoreV1().ConfigMaps("ns").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "engine-status"}, Data: map[string]string{"status.json": "{not json"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	s, err := NewConfigMapStatusStore[engineStatus](client.CoreV1(), "ns", "engine-status", "")
	require.NoError(t, err)
	_, _, err = s.GetStatus(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ConfigMap ns/engine-status key "status.json"`)
}

func TestNewConfigMapStatusStoreRejectsBadInput(t *testing.T) {
	var typedNil *k8sfake.Clientset
	tests := []struct {
		name   string
		client corev1client.ConfigMapsGetter
		ns     string
		obj    string
	}{
		{name: "nil client", ns: "ns", obj: "a"},
		{name: "typed-nil client", client: typedNilGetter(typedNil), ns: "ns", obj: "a"},
		{name: "empty namespace", client: k8sfake.NewClientset().CoreV1(), obj: "a"},
		{name: "empty name", client: k8sfake.NewClientset().CoreV1(), ns: "ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewConfigMapStatusStore[engineStatus](tt.client, tt.ns, tt.obj, "")
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

func TestNewConfigMapStatusStoreForRejectsBadInput(t *testing.T) {
	var typedNil *typedConfigMap
	good := typedConfigMap{client: k8sfake.NewClientset().CoreV1().ConfigMaps("ns"), name: "a"}
	tests := []struct {
		name   string
		client ConfigMapClient
		ns     string
		obj    string
	}{
		{name: "nil client", ns: "ns", obj: "a"},
		{name: "typed-nil client", client: typedNil, ns: "ns", obj: "a"},
		{name: "empty namespace", client: good, obj: "a"},
		{name: "empty name", client: good, ns: "ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewConfigMapStatusStoreFor[engineStatus](tt.client, tt.ns, tt.obj, "")
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}

// typedNilGetter is a ConfigMapsGetter interface holding a nil pointer.
func typedNilGetter(*k8sfake.Clientset) corev1client.ConfigMapsGetter {
	var c *corev1client.CoreV1Client
	return c
}
