//go:build integration

package crtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Start serves a working API server on testenv's binaries, and Stop ends it.
func TestStartServesAndStops(t *testing.T) {
	env, err := Start(context.Background())
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	_, err = client.Discovery().ServerVersion()
	require.NoError(t, err, "the API server answers")
	require.NoError(t, env.Stop())
}
