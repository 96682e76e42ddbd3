//go:build integration

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge/contrib/controller-runtime/crtest"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
)

// env is the etcd and kube-apiserver of the command's integration test,
// with the sample's generated CRDs installed.
var env = &envtest.Environment{CRDDirectoryPaths: []string{"../config/crd/bases"}, ErrorIfCRDPathMissing: true}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(crtest.WithEnvironment(m, env))
}

// TestRunServesEveryEngineUntilCancelled starts the operator as main does,
// on the test's API server, and checks that an Addon, a Rollout and the
// Payload created meanwhile each get a status from their engine, and that
// run returns without an error once its context is cancelled.
func TestRunServesEveryEngineUntilCancelled(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	bg := context.Background()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cmd-"}}
	require.NoError(t, c.Create(bg, nsObj))
	ns := nsObj.Name
	releases := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(releases, "1.0"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(releases, "1.0", "0000_10_settings.yaml"), []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: "+ns+"\n  name: settings\ndata:\n  version: \"1.0\"\n"), 0o644))

	ctx, cancel := context.WithCancel(bg)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-rollout-namespace=" + ns, "-operand=etcd", "-payload=" + ns + "/cluster",
			"-releases=" + releases, "-zap-log-level=error"}, io.Discard, env.Config)
	}()
	defer func() {
		cancel()
		require.NoError(t, <-done, "run stops cleanly when its context ends")
	}()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-node"}}
	require.NoError(t, c.Create(bg, node))
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	require.NoError(t, c.Status().Update(bg, node))
	require.NoError(t, c.Create(bg, &v1alpha1.Addon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mesh"}, Spec: v1alpha1.AddonSpec{Version: "1.0"}}))
	require.NoError(t, c.Create(bg, &v1alpha1.Rollout{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.RolloutSpec{Revision: 1}}))
	require.NoError(t, c.Create(bg, &v1alpha1.Payload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"}, Spec: v1alpha1.PayloadSpec{Release: "1.0"}}))

	err = wait.PollUntilContextTimeout(bg, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		a, ro, p := &v1alpha1.Addon{}, &v1alpha1.Rollout{}, &v1alpha1.Payload{}
		for key, obj := range map[client.ObjectKey]client.Object{{Namespace: ns, Name: "mesh"}: a, {Name: ns}: ro, {Namespace: ns, Name: "cluster"}: p} {
			if err := c.Get(ctx, key, obj); err != nil {
				return false, err
			}
		}
		return a.Status.Phase != "" && ro.Status.LatestAvailableRevision == 1 && p.Status.Release.Version == "1.0", nil
	})
	require.NoError(t, err, "the Addon, the Rollout and the Payload get a status")
}
