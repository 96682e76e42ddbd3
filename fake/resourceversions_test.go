package fake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
)

func TestEnforceResourceVersions(t *testing.T) {
	ctx := context.Background()
	client := k8sfake.NewClientset()
	EnforceResourceVersions(client)
	cms := client.CoreV1().ConfigMaps("ns")

	created, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, created.ResourceVersion, "a create stamps a version")

	read, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, created.ResourceVersion, read.ResourceVersion, "a read returns the stored version")

	read.Data = map[string]string{"k": "v1"}
	updated, err := cms.Update(ctx, read, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, created.ResourceVersion, updated.ResourceVersion, "an update stamps a new version")

	stale := read.DeepCopy()
	stale.Data = map[string]string{"k": "lost"}
	_, err = cms.Update(ctx, stale, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "an update with an old version is a 409: %v", err)

	unconditional := read.DeepCopy()
	unconditional.ResourceVersion = ""
	unconditional.Data = map[string]string{"k": "v2"}
	_, err = cms.Update(ctx, unconditional, metav1.UpdateOptions{})
	require.NoError(t, err, "an update without a version is unconditional")

	final, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v2", final.Data["k"])
}
