package testenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The version key names the cache directory every machine's binaries are
// in: it changes with the build module's files and kube-apiserver's linker
// flags (the version it reports) and with nothing else, so that moving or
// rewriting this package never makes every machine rebuild kube-apiserver.
// A change of versions changes it; then write the new key here.
func TestVersionKeyIsTheBuildModulesDigest(t *testing.T) {
	key, err := versionKey()
	require.NoError(t, err)
	assert.Equal(t, "b12b1840cd46fa5f", key)
}

// The build module written out is the embedded one, file for file, and
// nothing else.
func TestWriteToolsModule(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writeToolsModule(dir))
	var written []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			written = append(written, rel)
		}
		return err
	}))
	assert.ElementsMatch(t, []string{"go.mod", "go.sum", filepath.Join("etcd", "main.go")}, written)
	for _, f := range toolsFiles {
		want, err := os.ReadFile(f.embedded)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dir, f.name))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), f.name)
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "\tk8s.io/kubernetes v", "the module pins the kube-apiserver it builds")
}

func TestCacheDir(t *testing.T) {
	tests := []struct {
		name             string
		cache, xdg, home string
		want, wantErr    string
	}{
		{name: "the environment variable wins", cache: "/var/cache/converge", xdg: "/xdg", home: "/home/u", want: "/var/cache/converge"},
		{name: "else the user's cache directory", xdg: "/xdg", home: "/home/u", want: "/xdg/converge/testbin"},
		{name: "which defaults to ~/.cache", home: "/home/u", want: "/home/u/.cache/converge/testbin"},
		{name: "without any, an error says what to set", wantErr: "set CONVERGE_TESTBIN_CACHE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvCache, tt.cache)
			t.Setenv("XDG_CACHE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			got, err := CacheDir()
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
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

// The helper processes: this test binary, started again with helperEnv set,
// runs EnsureBinaries with a fake build and prints the binaries' paths.
const (
	helperEnv   = "CONVERGE_TESTENV_HELPER"
	buildLogEnv = "CONVERGE_TESTENV_BUILD_LOG"
)

// fakeBuild stands for go build in a helper process. It fails unless it
// runs in the build module. Like go, it starts a child of its own; it says so
// on fd 3 and waits for that child, which reads fd 4 until a line or the end.
// Then it logs the package it built and writes an executable out.
const fakeBuild = `test -f go.mod -a -f go.sum -a -f etcd/main.go || { echo "not in the build module: $PWD"; exit 9; }
head -n 1 <&4 >/dev/null & echo started >&3
wait $! && echo "$2" >>"$` + buildLogEnv + `" && printf '#!/bin/sh\n' >"$1" && chmod +x "$1"`

// ensureHelper is the whole helper process; it returns the exit status.
func ensureHelper() int {
	buildCommand = func(dir, out, pkg, _ string) *exec.Cmd {
		cmd := shell(fakeBuild, out, pkg)
		cmd.Dir = dir
		cmd.ExtraFiles = []*os.File{os.NewFile(3, "started"), os.NewFile(4, "release")}
		return cmd
	}
	bins, err := EnsureBinaries(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s\n%s\n", bins.Etcd, bins.KubeAPIServer)
	return 0
}

// helper is a running helper process.
type helper struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr chan string // its lines; closed at the end
}

// startHelper starts a helper process that shares the cache dir and build
// log, with started as its fd 3 and release as its fd 4.
func startHelper(t *testing.T, cache, buildLog string, started, release *os.File) *helper {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	h := &helper{stderr: make(chan string, 100)}
	h.cmd = exec.Command(exe, "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, EnvKubeAPIServer+"=") && !strings.HasPrefix(kv, EnvEtcd+"=") {
			h.cmd.Env = append(h.cmd.Env, kv)
		}
	}
	h.cmd.Env = append(h.cmd.Env, helperEnv+"=ensure", EnvCache+"="+cache, buildLogEnv+"="+buildLog)
	h.cmd.ExtraFiles = []*os.File{started, release}
	h.cmd.Stdout = &h.stdout
	r, w := pipe(t)
	h.cmd.Stderr = w
	require.NoError(t, h.cmd.Start())
	require.NoError(t, w.Close())
	go func() {
		defer close(h.stderr)
		lines := bufio.NewScanner(r)
		for lines.Scan() {
			h.stderr <- lines.Text()
		}
	}()
	return h
}

// requireNextLine fails unless the helper's next line on stderr contains want.
func (h *helper) requireNextLine(t *testing.T, want string) {
	t.Helper()
	line, ok := <-h.stderr
	require.True(t, ok, "the helper exited without saying %q", want)
	require.Contains(t, line, want)
}

// wait waits for the helper to exit and returns its remaining stderr lines.
func (h *helper) wait(t *testing.T) (rest []string, err error) {
	t.Helper()
	for line := range h.stderr {
		rest = append(rest, line)
	}
	return rest, h.cmd.Wait()
}

// TestBuildDiesWithTheProcessThatStartedIt kills a process in the middle of
// its build, as go test kills a test binary that times out, and checks that
// the build and the build's own child die with it, and that the next process
// gets the lock and builds.
func TestBuildDiesWithTheProcessThatStartedIt(t *testing.T) {
	cache, buildLog := t.TempDir(), filepath.Join(t.TempDir(), "builds")
	startedR, startedW := pipe(t)
	releaseR, _ := pipe(t) // its write end stays open: the build waits until killed
	killed := startHelper(t, cache, buildLog, startedW, releaseR)
	require.NoError(t, startedW.Close())
	require.NoError(t, releaseR.Close())
	killed.requireNextLine(t, "testenv: building ./etcd")
	started := bufio.NewReader(startedR)
	line, err := started.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "started\n", line)

	require.NoError(t, killed.cmd.Process.Kill())
	_, err = killed.wait(t)
	require.ErrorContains(t, err, "killed")
	requireAllWritersGone(t, started, "the build or its child")
	require.NoFileExists(t, buildLog, "the killed build finished")
	left, err := filepath.Glob(filepath.Join(cache, "*", srcPrefix+"*"))
	require.NoError(t, err)
	require.Len(t, left, 1, "the killed build leaves its build module")

	_, nextStartedW := pipe(t)
	nextReleaseR, nextReleaseW := pipe(t)
	require.NoError(t, nextReleaseW.Close())
	next := startHelper(t, cache, buildLog, nextStartedW, nextReleaseR)
	require.NoError(t, nextStartedW.Close())
	require.NoError(t, nextReleaseR.Close())
	stderr, err := next.wait(t)
	require.NoError(t, err, "stderr: %q", stderr)
	builds, err := os.ReadFile(buildLog)
	require.NoError(t, err)
	assert.Equal(t, "./etcd\nk8s.io/kubernetes/cmd/kube-apiserver\n", string(builds))
	assertNoBuildModuleLeft(t, cache, "the next process removes what the killed build left")
}

// assertNoBuildModuleLeft fails if a build module is left in the cache.
func assertNoBuildModuleLeft(t *testing.T, cache, msg string) {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(cache, "*", srcPrefix+"*"))
	require.NoError(t, err)
	assert.Empty(t, left, msg)
}

// TestConcurrentProcessesBuildOnce starts a second process while a first one
// builds, and checks that the second waits for the first and then uses what
// it built.
func TestConcurrentProcessesBuildOnce(t *testing.T) {
	cache, buildLog := t.TempDir(), filepath.Join(t.TempDir(), "builds")
	startedR, startedW := pipe(t)
	releaseR, releaseW := pipe(t)
	first := startHelper(t, cache, buildLog, startedW, releaseR)
	first.requireNextLine(t, "testenv: building ./etcd")
	line, err := bufio.NewReader(startedR).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "started\n", line, "the first build runs, holding the lock")

	second := startHelper(t, cache, buildLog, startedW, releaseR)
	require.NoError(t, startedW.Close())
	require.NoError(t, releaseR.Close())
	second.requireNextLine(t, "testenv: waiting for another process to build the binaries")

	require.NoError(t, releaseW.Close())
	firstStderr, err := first.wait(t)
	require.NoError(t, err, "stderr: %q", firstStderr)
	secondStderr, err := second.wait(t)
	require.NoError(t, err, "stderr: %q", secondStderr)
	assert.Empty(t, secondStderr, "the second process built nothing")
	assert.Equal(t, first.stdout.String(), second.stdout.String(), "both use the same binaries")
	builds, err := os.ReadFile(buildLog)
	require.NoError(t, err)
	assert.Equal(t, "./etcd\nk8s.io/kubernetes/cmd/kube-apiserver\n", string(builds), "each binary was built once")
	assertNoBuildModuleLeft(t, cache, "the build module is removed once built")
}
