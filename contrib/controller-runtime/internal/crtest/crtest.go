// Package crtest starts controller-runtime's envtest on the etcd and
// kube-apiserver binaries of the repository's internal/testenv, which builds
// them from source (envtest would download them), for the module's
// integration tests.
package crtest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge/internal/testenv"
)

// Start starts an envtest.Environment on testenv's binaries with the CRDs
// found in crdDirs installed, and returns it running; Stop it when done.
func Start(ctx context.Context, crdDirs ...string) (*envtest.Environment, error) {
	bins, err := testenv.EnsureBinaries(ctx)
	if err != nil {
		return nil, fmt.Errorf("crtest: %w", err)
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     crdDirs,
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.GetAPIServer().Path = bins.KubeAPIServer
	env.ControlPlane.Etcd = &envtest.Etcd{Path: bins.Etcd}
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("crtest: starting envtest: %w", err)
	}
	return env, nil
}

// Main is a test package's TestMain body for integration tests: it starts the
// environment into *env, runs the tests, stops it, and returns the exit code
// for goleak.VerifyTestMain (wrap m with Run).
func Main(m *testing.M, env **envtest.Environment, crdDirs ...string) interface{ Run() int } {
	return runner{m: m, env: env, crdDirs: crdDirs}
}

type runner struct {
	m       *testing.M
	env     **envtest.Environment
	crdDirs []string
}

// Run implements goleak.TestingM.
func (r runner) Run() int {
	env, err := Start(context.Background(), r.crdDirs...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*r.env = env
	code := r.m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "crtest: stopping envtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
