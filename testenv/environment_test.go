package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := freePorts(5)
	require.NoError(t, err)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.Positive(t, p)
		assert.False(t, seen[p], "port %d twice", p)
		seen[p] = true
	}
}

func TestRemoveStale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(owner string) string {
		d, err := os.MkdirTemp(tmp, dirPrefix)
		require.NoError(t, err)
		if owner != "" {
			require.NoError(t, os.WriteFile(filepath.Join(d, ownerFile), []byte(owner), 0o644))
		}
		return d
	}
	dead := mk("999999999") // above any pid_max: no such process
	alive := mk(strconv.Itoa(os.Getpid()))
	unowned := mk("")
	garbage := mk("not a pid")
	removeStale()
	assert.NoDirExists(t, dead)
	assert.DirExists(t, alive)
	assert.DirExists(t, unowned, "a directory being created has no owner yet")
	assert.DirExists(t, garbage)
}

func TestWriteCredentialsAndKubeconfig(t *testing.T) {
	dir := t.TempDir()
	token, err := writeCredentials(dir)
	require.NoError(t, err)
	assert.Len(t, token, 32)
	tokens, err := os.ReadFile(filepath.Join(dir, "tokens.csv"))
	require.NoError(t, err)
	assert.Equal(t, token+`,admin,admin-uid,"system:masters"`+"\n", string(tokens))
	for _, f := range []string{"sa.key", "sa.pub"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}

	path := filepath.Join(dir, "kubeconfig")
	require.NoError(t, writeKubeconfig(path, "https://127.0.0.1:6443", token))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, token, cfg.BearerToken)
}

func TestProcessStartAndStop(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		bin  string
		args []string
		// exits says the process ends by itself; stop then finds it gone.
		exits   bool
		wantLog string
		wantErr string
	}{
		{
			name: "a running process is stopped and reaped",
			bin:  "/bin/sleep",
			args: []string{"3600"},
		},
		{
			name:    "a process that exited leaves its output in its log",
			bin:     "/bin/sh",
			args:    []string{"-c", "echo started; echo failed to listen"},
			exits:   true,
			wantLog: "started\nfailed to listen",
		},
		{
			name:    "a binary that cannot start is an error",
			bin:     filepath.Join(dir, "missing"),
			wantErr: "testenv: start fake",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := startProcess("fake", dir, tt.bin, tt.args...)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.exits {
				<-p.done
			}
			require.NoError(t, p.stop())
			assert.True(t, p.exited())
			assert.ErrorIs(t, syscall.Kill(p.cmd.Process.Pid, 0), syscall.ESRCH, "the process is gone")
			assert.Equal(t, tt.wantLog, p.logTail())
		})
	}
}
