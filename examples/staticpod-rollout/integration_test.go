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

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

// TestSimulateOnRealAPIServer plays the in-memory scenario on a real
// kube-apiserver: real pod and ConfigMap validation, real resource versions,
// real informers.
func TestSimulateOnRealAPIServer(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"-kubeconfig", env.Kubeconfig, "-simulate-kubelet", "-namespace", "simulated"}, &out)
	require.NoError(t, err, out.String())
	s := out.String()
	assert.Contains(t, s, "creating installer installer-2-retry-1-master-1")
	assert.Contains(t, s, "converged on revision 3")

	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	st := assertConverged(t, cs, "simulated")
	assert.True(t, st.Converged())
	store := &configMapStatus{client: cs, ns: "simulated", name: "operand-rollout-status"}
	require.NoError(t, fake.TestRolloutStatusStore(context.Background(), store), "the adapter passes the conformance check on a real apiserver")
}

// TestConflictsLoseNoTransitionOnRealAPIServer races every node
// transition's status write with another writer's update of the status
// ConfigMap on a real kube-apiserver, whose 409 Conflict the engine must
// answer by reading and planning again.
func TestConflictsLoseNoTransitionOnRealAPIServer(t *testing.T) {
	testConflictsLoseNoTransition(t, func() kubernetes.Interface {
		rc := rest.CopyConfig(env.Config)
		rc.QPS, rc.Burst = simulateQPS, 2*simulateQPS
		cs, err := kubernetes.NewForConfig(rc)
		require.NoError(t, err)
		return cs
	}, env.Kubeconfig)
}

// TestClusterModeCreatesInstallers runs the -kubeconfig mode (no simulated
// kubelet) on nodes without a kubelet: it must create the first installer pod
// and wait for it until its timeout.
func TestClusterModeCreatesInstallers(t *testing.T) {
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	require.NoError(t, seed(ctx, cs, []string{"master-0", "master-1"}, "seeded", "operand", clock.RealClock{}))

	var out bytes.Buffer
	err = run(ctx, []string{"-kubeconfig", env.Kubeconfig, "-namespace", "real", "-revision", "1", "-timeout", "5s"}, &out)
	require.ErrorIs(t, err, context.DeadlineExceeded, out.String())
	pod, err := cs.CoreV1().Pods("real").Get(ctx, "installer-1-master-0", metav1.GetOptions{})
	require.NoError(t, err, out.String())
	assert.Equal(t, "master-0", pod.Spec.NodeName)
	assert.Contains(t, out.String(), `Updating node "master-0" from revision 0 to 1`)
}
