package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Environment variables that point at existing binaries and skip the build.
const (
	EnvKubeAPIServer = "CONVERGE_KUBE_APISERVER"
	EnvEtcd          = "CONVERGE_ETCD"
	// EnvCache moves the cache of built binaries out of the repository, so
	// that several checkouts (CI's fresh clones) share one build.
	EnvCache = "CONVERGE_TESTBIN_CACHE"
)

// Binaries are the paths of the two programs an Environment runs.
type Binaries struct {
	KubeAPIServer string
	Etcd          string
}

// sourceDir is the directory of this file; the tools module and the cache
// are found from it, so the package works from any working directory.
func sourceDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// ToolsDir is the tools module the binaries are built from.
func ToolsDir() string { return filepath.Join(sourceDir(), "tools") }

// CacheDir is the directory that holds built binaries, one sub-directory per
// version key: $CONVERGE_TESTBIN_CACHE when set, else .cache/testbin at the
// top of the repository, which git ignores.
func CacheDir() string {
	if dir := os.Getenv(EnvCache); dir != "" {
		return dir
	}
	return filepath.Join(sourceDir(), "..", "..", ".cache", "testbin")
}

// versionKey identifies the pinned versions: a digest of the tools module's
// go.mod, go.sum and etcd main.
func versionKey() (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")} {
		b, err := os.ReadFile(filepath.Join(ToolsDir(), name))
		if err != nil {
			return "", fmt.Errorf("testenv: version key: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// EnsureBinaries returns the binaries named by the environment variables,
// or those in the cache for the current version key, building them first
// when they are missing. Concurrent callers, in this process or others, build
// once: the builder holds a file lock, and a caller that waited for it finds
// the binaries built. A build never outlives the process that started it,
// and ends with ctx.
func EnsureBinaries(ctx context.Context) (Binaries, error) {
	if api, etcd := os.Getenv(EnvKubeAPIServer), os.Getenv(EnvEtcd); api != "" || etcd != "" {
		if api == "" || etcd == "" {
			return Binaries{}, fmt.Errorf("testenv: set both %s and %s, or neither", EnvKubeAPIServer, EnvEtcd)
		}
		for _, p := range []string{api, etcd} {
			if err := executable(p); err != nil {
				return Binaries{}, err
			}
		}
		return Binaries{KubeAPIServer: api, Etcd: etcd}, nil
	}
	key, err := versionKey()
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(CacheDir(), key)
	bins := Binaries{KubeAPIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}
	if executable(bins.KubeAPIServer) == nil && executable(bins.Etcd) == nil {
		return bins, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Binaries{}, fmt.Errorf("testenv: %w", err)
	}
	lockPath := filepath.Join(dir, ".lock")
	unlock, err := lock(ctx, lockPath, func() {
		fmt.Fprintf(os.Stderr, "testenv: waiting for another process to build the binaries (it holds %s)\n", lockPath)
	})
	if err != nil {
		return Binaries{}, err
	}
	defer unlock()
	for _, b := range []struct{ out, pkg string }{
		{bins.Etcd, "./etcd"},
		{bins.KubeAPIServer, "k8s.io/kubernetes/cmd/kube-apiserver"},
	} {
		if executable(b.out) == nil {
			continue // built by the process that held the lock before us
		}
		if err := build(ctx, b.out, b.pkg); err != nil {
			return Binaries{}, err
		}
	}
	return bins, nil
}

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("testenv: binary %s: %w", path, err)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("testenv: binary %s is not an executable file", path)
	}
	return nil
}
