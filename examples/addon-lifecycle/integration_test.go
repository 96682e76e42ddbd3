//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/converge-dev/converge/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

// TestRunOnTheAPIServer runs the program with -kubeconfig on a real
// kube-apiserver (no kube-controller-manager: the simulated deployment
// controller writes the Deployments' status). The scenario checks the real
// objects at every stage: the Addons install, run, upgrade and are
// deleted, each carries the finalizer while it lives, their objects have
// the version's image, labels and owner, the decided events are recorded
// on each, every Addon goes Initializing, Checking, Running, Upgrading,
// Checking, Running, Deleting, Deleted and is gone, and nothing of theirs
// is left. The run leaves no goroutine behind.
func TestRunOnTheAPIServer(t *testing.T) {
	tests := []struct {
		name      string
		namespace string
		addons    int
		workers   int
		timeout   string
	}{
		{name: "as the README shows it", namespace: "run", addons: 5, workers: 2, timeout: "1m"},
		{name: "two hundred Addons, eight workers", namespace: "fleet", addons: 200, workers: 8, timeout: "4m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), []string{"-kubeconfig", env.Kubeconfig, "-namespace", tt.namespace,
				"-addons", fmt.Sprint(tt.addons), "-workers", fmt.Sprint(tt.workers), "-timeout", tt.timeout}, &stdout, &stderr)
			require.Equal(t, 0, code, stdout.String()+stderr.String())
			t.Logf("%d Addons through their lifecycle in %s:\n%s", tt.addons, time.Since(start).Round(time.Millisecond), stdout.String())
			for _, stage := range []string{
				"simulating the deployment controller", fmt.Sprintf("created %d Addons at v1", tt.addons),
				"all Running at v1", "their objects at v1", "all Running at v2", "their objects at v2",
				"the decided events recorded on each", "all gone", "nothing left behind",
				"every Addon went through each phase in order", "0 other failed reconciles",
			} {
				assert.Contains(t, stdout.String(), stage)
			}

			// The program's client and the test's share client-go's transport
			// for the kubeconfig: a stream that was still closing when the
			// program ended kept its connection busy, so the test closes the
			// connections as they go idle.
			cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
			require.NoError(t, err)
			hc, err := rest.HTTPClientFor(cfg)
			require.NoError(t, err)
			client, err := kubernetes.NewForConfigAndClient(cfg, hc)
			require.NoError(t, err)
			ctx := context.Background()
			managed := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=addon-lifecycle"}
			deps, err := client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, managed)
			require.NoError(t, err)
			assert.Empty(t, deps.Items, "deployments")
			crbs, err := client.RbacV1().ClusterRoleBindings().List(ctx, managed)
			require.NoError(t, err)
			assert.Empty(t, crbs.Items, "cluster role bindings")
			_, err = client.CoreV1().Secrets(tt.namespace).Get(ctx, "mesh-manager-db", metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "the run removes its Secret: %v", err)

			assert.NoError(t, goroutinesBackTo(baseline, func() { utilnet.CloseIdleConnectionsFor(hc.Transport) }))

		})
	}
}

// goroutinesBackTo polls, calling closeIdle each time, until no more than
// baseline goroutines run; after 30 seconds it returns their stacks. It
// polls on the test's own goroutine, so that it counts none of its own.
func goroutinesBackTo(baseline int, closeIdle func()) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		closeIdle()
		n := runtime.NumGoroutine()
		if n <= baseline {
			return nil
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
			return fmt.Errorf("%d goroutines, %d before the run:\n%s", n, baseline, b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
