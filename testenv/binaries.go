package testenv

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The environment variables testenv reads.
const (
	// EnvKubeAPIServer and EnvEtcd name existing binaries to run instead of
	// building them; set both or neither.
	EnvKubeAPIServer = "CONVERGE_KUBE_APISERVER"
	EnvEtcd          = "CONVERGE_ETCD"
	// EnvCache names the directory that caches the built binaries instead
	// of the user's cache directory (see CacheDir).
	EnvCache = "CONVERGE_TESTBIN_CACHE"
)

// Binaries are the paths of the two programs an Environment runs.
type Binaries struct {
	KubeAPIServer string
	Etcd          string
}

// The build module: the go.mod and go.sum that pin k8s.io/kubernetes and the
// etcd server, and etcd's main. They are embedded as text files, so that they
// travel in this module's zip to an adopter's module cache (a go.mod in a
// subdirectory would make it a nested module, which the zip leaves out), and
// are written to a temporary directory to build from. The version key is a
// digest of their bytes, module path included (a name nothing imports), and
// of kube-apiserver's linker flags (the version it reports), so any edit of
// them rebuilds the binaries on every machine; hack/update-testenv.sh
// changes their versions.
//
//go:embed tools/go.mod.txt tools/go.sum.txt tools/etcd/main.go.txt
var toolsFS embed.FS

// toolsFiles are the build module's files, each one's name in the module
// and its embedded source, in the order the version key hashes them.
var toolsFiles = []struct{ name, embedded string }{
	{name: "go.mod", embedded: "tools/go.mod.txt"},
	{name: "go.sum", embedded: "tools/go.sum.txt"},
	{name: filepath.Join("etcd", "main.go"), embedded: "tools/etcd/main.go.txt"},
}

// writeToolsModule writes the build module into dir.
func writeToolsModule(dir string) error {
	for _, f := range toolsFiles {
		b, err := toolsFS.ReadFile(f.embedded)
		if err != nil {
			return fmt.Errorf("testenv: build module: %w", err)
		}
		path := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("testenv: build module: %w", err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return fmt.Errorf("testenv: build module: %w", err)
		}
	}
	return nil
}

// CacheDir is the directory that holds built binaries, one sub-directory per
// version key: $CONVERGE_TESTBIN_CACHE when set, else converge/testbin in
// the user's cache directory (os.UserCacheDir: $XDG_CACHE_HOME or
// ~/.cache on Linux, ~/Library/Caches on macOS).
func CacheDir() (string, error) {
	if dir := os.Getenv(EnvCache); dir != "" {
		return dir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testenv: no cache directory for the binaries (set %s): %w", EnvCache, err)
	}
	return filepath.Join(dir, "converge", "testbin"), nil
}

// versionKey identifies the pinned versions and how they are built: a
// digest of the build module's go.mod, go.sum and etcd main, and of
// kube-apiserver's linker flags less the build date.
func versionKey() (string, error) {
	h := sha256.New()
	for _, f := range toolsFiles {
		b, err := toolsFS.ReadFile(f.embedded)
		if err != nil {
			return "", fmt.Errorf("testenv: version key: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f.name, len(b))
		h.Write(b)
	}
	flags, err := apiserverLdflags("")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "kube-apiserver -ldflags=%s\n", flags)
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
	cache, err := CacheDir()
	if err != nil {
		return Binaries{}, err
	}
	dir := filepath.Join(cache, key)
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
	apiserverFlags, err := apiserverLdflags(buildDate(time.Now()))
	if err != nil {
		return Binaries{}, err
	}
	var missing []binary
	for _, b := range []binary{{bins.Etcd, "./etcd", "-s -w"}, {bins.KubeAPIServer, "k8s.io/kubernetes/cmd/kube-apiserver", apiserverFlags}} {
		if executable(b.out) != nil { // else built by the process that held the lock before us
			missing = append(missing, b)
		}
	}
	if err := buildAll(ctx, dir, missing); err != nil {
		return Binaries{}, err
	}
	return bins, nil
}

// srcPrefix names the temporary directories the build module is written to.
const srcPrefix = "src-"

// binary is a program to build: its output path, its package in the build
// module and its linker flags.
type binary struct{ out, pkg, ldflags string }

// buildAll writes the build module into a temporary directory of dir and
// builds each binary from it; with none to build it does nothing. The caller
// holds the build lock, so a directory a killed build left is no one's and
// is removed first.
func buildAll(ctx context.Context, dir string, bins []binary) error {
	if len(bins) == 0 {
		return nil
	}
	left, _ := filepath.Glob(filepath.Join(dir, srcPrefix+"*"))
	for _, d := range left {
		_ = os.RemoveAll(d)
	}
	src, err := os.MkdirTemp(dir, srcPrefix)
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	defer os.RemoveAll(src)
	if err := writeToolsModule(src); err != nil {
		return err
	}
	for _, b := range bins {
		if err := build(ctx, src, b); err != nil {
			return err
		}
	}
	return nil
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
