package addonlifecycle

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/converge-dev/converge/addon"
)

func TestRunTellsTheWholeStory(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, Run(context.Background(), "", ClusterOptions{}, &out))
	var reasons []string
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] != "--" && f[1] != "reason" && f[0] != "done:" {
			reasons = append(reasons, f[1])
		}
	}
	assert.Equal(t, []string{
		"Created", "InstallFailed", "UninstallSucceeded", "InstallSucceeded", "Healthy",
		"VersionChanged", "UpgradeSucceeded", "Healthy",
		"VersionChanged", "UpgradeSucceeded", "UpgradeFailed", "RollbackSucceeded", "Healthy",
		"DeletionRequested", "UninstallSucceeded",
	}, reasons)
	assert.Contains(t, out.String(), "11s  InstallSucceeded", "the retry waited for the backoff")
	assert.Contains(t, out.String(), "rollback from v3 to v2")
}

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
