//go:build integration

package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/examples/internal/e2e/staticpodrollout"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

// TestSimulateOnRealAPIServer plays the simulated cluster through the
// program's flags on a real kube-apiserver (real pod and ConfigMap
// validation, real resource versions, real informers) and checks the real
// objects it leaves.
func TestSimulateOnRealAPIServer(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"-kubeconfig", env.Kubeconfig, "-simulate-kubelet", "-namespace", "simulated"}, &out, &errOut)
	require.Equal(t, 0, code, out.String()+errOut.String())
	s := out.String()
	assert.Contains(t, s, "creating installer installer-2-retry-1-master-1")
	assert.Contains(t, s, "converged on revision 3")

	cs := realClient(t)
	assert.True(t, assertConverged(t, cs, "simulated").Converged())
	store, err := staticpodrollout.NewStatusStore(cs, "simulated", "operand")
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
	rc.QPS = staticpodrollout.SimulateQPS(len(scenarioNodes))
	rc.Burst = int(2 * rc.QPS)
	cs, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	return cs
}

// TestClusterModeCreatesInstallers runs the -kubeconfig mode (no simulated
// kubelet) on nodes without a kubelet: it must create the first installer pod
// and wait for it until its timeout, which it names.
func TestClusterModeCreatesInstallers(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	require.NoError(t, staticpodrollout.Seed(ctx, cs, []string{"master-0", "master-1"}, "seeded", "operand", clock.RealClock{}))

	var out, errOut bytes.Buffer
	code := run(ctx, []string{"-kubeconfig", env.Kubeconfig, "-namespace", "real", "-revision", "1", "-timeout", "5s"}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "-timeout 5s passed: context deadline exceeded", out.String())
	pod, err := cs.CoreV1().Pods("real").Get(ctx, "installer-1-master-0", metav1.GetOptions{})
	require.NoError(t, err, out.String())
	assert.Equal(t, "master-0", pod.Spec.NodeName)
	assert.Equal(t, map[string]string{"app": "installer", "revision": "1", "node": "master-0"}, pod.Labels)
	assert.Contains(t, out.String(), `Updating node "master-0" from revision 0 to 1`)
}
