package addonlifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/converge-dev/converge/addon"
)

func TestCheckNoSecretInArgsCatchesAPasswordArgument(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	d := &meshDriver{client: client, dbHost: "db"}
	dep := d.deployment(addonRef{namespace, name}, addon.Request{To: "v1"}, "img")
	dep.Spec.Template.Spec.Containers[0].Args = append(dep.Spec.Template.Spec.Containers[0].Args, "--db-password=hunter2")
	_, err := client.AppsV1().Deployments(namespace).Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)
	err = checkNoSecretInArgs(ctx, client)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--db-password")
}
