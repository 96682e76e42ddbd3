//go:build integration

package testenv

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestStartStopLeavesNothing starts a real etcd and kube-apiserver, uses
// them through both the rest.Config and the kubeconfig file, stops them, and
// checks that no process and no temporary directory is left.
func TestStartStopLeavesNothing(t *testing.T) {
	ctx := context.Background()
	env, err := Start(ctx)
	require.NoError(t, err)
	pids, dir := env.Pids(), env.Dir
	require.Len(t, pids, 2)

	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testenv"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	fromFile, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	require.NoError(t, err)
	cs2, err := kubernetes.NewForConfig(fromFile)
	require.NoError(t, err)
	ns, err := cs2.CoreV1().Namespaces().Get(ctx, "testenv", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "testenv", ns.Name)
	require.NoError(t, env.Stop())
	require.NoError(t, env.Stop(), "Stop is idempotent")

	for _, pid := range pids {
		assert.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "process %d is still there", pid)
	}
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "temporary directory %s is still there", dir)
}
