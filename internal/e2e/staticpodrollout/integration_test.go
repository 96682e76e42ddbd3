//go:build integration

package staticpodrollout

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

// TestSimulateOnRealAPIServer plays the scenario on a real kube-apiserver:
// real pod and ConfigMap validation, real resource versions, real informers.
func TestSimulateOnRealAPIServer(t *testing.T) {
	cs := realClient(t)
	_, ctx := ktesting.NewTestContext(t)
	var out bytes.Buffer
	require.NoError(t, Simulate(ctx, scenarioConfig("scenario", env.Kubeconfig), cs, &out, nil), out.String())
	s := out.String()
	assert.Contains(t, s, "creating installer installer-2-retry-1-master-1")
	assert.Contains(t, s, "converged on revision 3")

	st := assertConverged(t, cs, "scenario")
	assert.True(t, st.Converged())
	store, err := NewStatusStore(cs, "scenario", "operand")
	require.NoError(t, err)
	require.NoError(t, fake.TestRolloutStatusStore(context.Background(), store), "the store passes the conformance check on a real apiserver")
}

// TestConflictsLoseNoTransitionOnRealAPIServer races every node
// transition's status write with another writer's update of the status
// ConfigMap on a real kube-apiserver, whose 409 Conflict the engine must
// answer by reading and planning again.
func TestConflictsLoseNoTransitionOnRealAPIServer(t *testing.T) {
	testConflictsLoseNoTransition(t, func() kubernetes.Interface { return realClient(t) }, env.Kubeconfig)
}

// realClient is a clientset of the test apiserver with the -simulate-kubelet rate limit.
func realClient(t *testing.T) kubernetes.Interface {
	rc := rest.CopyConfig(env.Config)
	rc.QPS = SimulateQPS(len(scenarioNodes))
	rc.Burst = int(2 * rc.QPS)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return cs
}
