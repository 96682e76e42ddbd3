//go:build integration

package testenv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/discovery"
)

// kube-apiserver reports the Kubernetes version the build module pins, as a
// release build does, so that a chart's kubeVersion constraint and a client
// that checks the server's version accept it.
func TestAPIServerReportsThePinnedVersion(t *testing.T) {
	ctx := context.Background()
	env, err := Start(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, env.Stop()) }()
	pinned, err := pinnedKubernetes()
	require.NoError(t, err)
	require.Equal(t, "v1.37.2", pinned)

	client, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	info, err := client.ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, pinned, info.GitVersion)
	assert.Equal(t, "1", info.Major)
	assert.Equal(t, "37", info.Minor)
	assert.Equal(t, "clean", info.GitTreeState)
	assert.NotEqual(t, "1970-01-01T00:00:00Z", info.BuildDate, "the build date is the build's")
}
