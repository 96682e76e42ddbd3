package crtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/testenv"
)

// Configure points env at testenv's etcd and kube-apiserver, building them
// first when they are not built yet (testenv.EnsureBinaries): it sets
// BinaryAssetsDirectory to the directory that holds both, and the two
// binaries' paths themselves, so that KUBEBUILDER_ASSETS or TEST_ASSET_*
// left in the environment by setup-envtest do not swap them. The rest of env
// (CRDs, webhooks, flags) is left as the caller set it. It does not start
// env; ctx bounds a build.
func Configure(ctx context.Context, env *envtest.Environment) error {
	if env == nil {
		return converge.Invalidf("crtest", "Configure arguments", "nil envtest.Environment")
	}
	bins, err := testenv.EnsureBinaries(ctx)
	if err != nil {
		return fmt.Errorf("crtest: %w", err)
	}
	if dir := filepath.Dir(bins.KubeAPIServer); dir == filepath.Dir(bins.Etcd) {
		env.BinaryAssetsDirectory = dir
	}
	env.ControlPlane.GetAPIServer().Path = bins.KubeAPIServer
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.Path = bins.Etcd
	return nil
}

// Start configures env (Configure) and starts it; it returns env's
// rest.Config, as envtest.Environment.Start does. Stop env when done.
func Start(ctx context.Context, env *envtest.Environment) (*rest.Config, error) {
	if err := Configure(ctx, env); err != nil {
		return nil, err
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("crtest: starting envtest: %w", err)
	}
	return cfg, nil
}

// WithEnvironment wraps a test package's testing.M so that its Run starts env
// (Start) for the whole package, runs the tests, and stops env again, also
// when a test fails. Use it inside goleak.VerifyTestMain, which checks for
// leaked goroutines after the environment is gone.
func WithEnvironment(m *testing.M, env *envtest.Environment) interface{ Run() int } {
	return runner{m: m, env: env}
}

type runner struct {
	m   *testing.M
	env *envtest.Environment
}

// Run implements goleak.TestingM.
func (r runner) Run() int {
	if _, err := Start(context.Background(), r.env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := r.m.Run()
	if err := r.env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "crtest: stopping envtest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
