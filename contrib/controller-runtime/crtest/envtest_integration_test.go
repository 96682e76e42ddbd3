//go:build integration

package crtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start serves a working API server on testenv's binaries, and Stop ends it.
func TestStartServesAndStops(t *testing.T) {
	env := &envtest.Environment{}
	cfg, err := Start(context.Background(), env)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = client.Discovery().ServerVersion()
	require.NoError(t, err, "the API server answers")
	require.NoError(t, env.Stop())
}
