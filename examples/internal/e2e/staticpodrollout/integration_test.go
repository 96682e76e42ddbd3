//go:build integration

package staticpodrollout

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
	"github.com/converge-dev/converge/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

// TestStatusStoreOnRealAPIServer checks the example's ConfigMap status
// store against the rollout.StatusStore contract on a real kube-apiserver:
// real resource versions and real 409 Conflicts.
func TestStatusStoreOnRealAPIServer(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	require.NoError(t, Seed(ctx, cs, []string{"master-0"}, "store", "operand", clock.RealClock{}))
	store, err := NewStatusStore(cs, "store", "operand")
	require.NoError(t, err)
	_, err = store.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1,
		NodeStatuses: []rollout.NodeStatus{{NodeName: "master-0", CurrentRevision: 1}}}, "")
	require.NoError(t, err)
	require.NoError(t, fake.TestRolloutStatusStore(ctx, store))
}
