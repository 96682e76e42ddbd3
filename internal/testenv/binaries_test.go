package testenv

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionKeyIsStable(t *testing.T) {
	a, err := versionKey()
	require.NoError(t, err)
	b, err := versionKey()
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Len(t, a, 16)
}

func TestCacheDir(t *testing.T) {
	t.Setenv(EnvCache, "")
	gitignore, err := os.ReadFile(filepath.Join(sourceDir(), "..", "..", ".gitignore"))
	require.NoError(t, err)
	assert.Contains(t, string(gitignore), "/.cache/")
	assert.Equal(t, "testbin", filepath.Base(CacheDir()))
	assert.Equal(t, ".cache", filepath.Base(filepath.Dir(CacheDir())))

	t.Setenv(EnvCache, "/var/cache/converge")
	assert.Equal(t, "/var/cache/converge", CacheDir())
}

func TestEnsureBinariesFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("data"), 0o644))

	tests := []struct {
		name      string
		api, etcd string
		wantErr   string
	}{
		{name: "both executable", api: exe, etcd: exe},
		{name: "only one set", api: exe, wantErr: "set both"},
		{name: "missing file", api: exe, etcd: filepath.Join(dir, "missing"), wantErr: "no such file"},
		{name: "not executable", api: plain, etcd: exe, wantErr: "not an executable"},
		{name: "a directory", api: dir, etcd: exe, wantErr: "not an executable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvKubeAPIServer, tt.api)
			t.Setenv(EnvEtcd, tt.etcd)
			got, err := EnsureBinaries(context.Background())
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Binaries{KubeAPIServer: tt.api, Etcd: tt.etcd}, got)
		})
	}
}

func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lock(path)
	require.NoError(t, err)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	require.ErrorIs(t, err, syscall.EWOULDBLOCK, "another lock was taken while the first is held")

	unlock()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "the lock is free after unlock")
}
