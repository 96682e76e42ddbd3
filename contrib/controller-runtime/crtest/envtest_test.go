package crtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/testenv"
)

// executable writes an executable file at dir/name and returns its path.
func executable(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755))
	return path
}

// Configure fills envtest's binaries from testenv's and leaves the rest of
// the environment as the caller set it.
func TestConfigure(t *testing.T) {
	shared, apiDir, etcdDir := t.TempDir(), t.TempDir(), t.TempDir()
	tests := []struct {
		name          string
		api, etcd     string
		wantAssetsDir string
	}{
		{name: "binaries in one directory (testenv's cache) name it as the assets directory",
			api: executable(t, shared, "kube-apiserver"), etcd: executable(t, shared, "etcd"), wantAssetsDir: shared},
		{name: "binaries in two directories set the paths alone",
			api: executable(t, apiDir, "kube-apiserver"), etcd: executable(t, etcdDir, "etcd")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(testenv.EnvKubeAPIServer, tt.api)
			t.Setenv(testenv.EnvEtcd, tt.etcd)
			t.Setenv("KUBEBUILDER_ASSETS", t.TempDir()) // setup-envtest's, which must not win
			env := &envtest.Environment{CRDDirectoryPaths: []string{"testdata"}}
			env.ControlPlane.Etcd = &envtest.Etcd{Args: []string{"--quota-backend-bytes=1000000"}}

			require.NoError(t, Configure(context.Background(), env))
			assert.Equal(t, tt.wantAssetsDir, env.BinaryAssetsDirectory)
			assert.Equal(t, tt.api, env.ControlPlane.GetAPIServer().Path)
			assert.Equal(t, tt.etcd, env.ControlPlane.Etcd.Path)
			assert.Equal(t, []string{"--quota-backend-bytes=1000000"}, env.ControlPlane.Etcd.Args, "the caller's etcd settings stay")
			assert.Equal(t, []string{"testdata"}, env.CRDDirectoryPaths)
		})
	}
}

func TestConfigureRejectsWhatItCannotFill(t *testing.T) {
	t.Run("a nil environment", func(t *testing.T) {
		assert.ErrorIs(t, Configure(context.Background(), nil), converge.ErrInvalid)
		_, err := Start(context.Background(), nil)
		assert.ErrorIs(t, err, converge.ErrInvalid)
	})
	t.Run("binaries testenv cannot provide", func(t *testing.T) {
		t.Setenv(testenv.EnvKubeAPIServer, executable(t, t.TempDir(), "kube-apiserver"))
		t.Setenv(testenv.EnvEtcd, "")
		env := &envtest.Environment{}
		err := Configure(context.Background(), env)
		require.ErrorContains(t, err, "crtest: testenv: set both")
		assert.Empty(t, env.ControlPlane.GetAPIServer().Path, "nothing is filled")
	})
}
