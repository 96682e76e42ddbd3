package testenv

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deathBound bounds the wait for killed processes to exit. It is reached only
// when a process survived the kill, which is the failure the tests look for.
const deathBound = time.Minute

// pipe returns an os.Pipe whose ends are closed when the test ends.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = r.Close()
		_ = w.Close()
	})
	return r, w
}

// requireAllWritersGone reads r to the end, which comes once every process
// holding the pipe's write end has exited.
func requireAllWritersGone(t *testing.T, r io.Reader, what string) {
	t.Helper()
	eof := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, r)
		eof <- err
	}()
	select {
	case err := <-eof:
		require.NoError(t, err)
	case <-time.After(deathBound):
		t.Fatalf("%s still running %v after it should have been killed", what, deathBound)
	}
}

func shell(script string, args ...string) *exec.Cmd {
	return exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
}

func TestRunInGroup(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		cmd     *exec.Cmd
		want    string
		wantErr string
	}{
		{
			name: "returns stdout and stderr",
			cmd:  shell(`echo out; echo err >&2`),
			want: "out\nerr\n",
		},
		{
			name: "passes arguments unchanged",
			cmd:  shell(`printf '[%s]' "$@"`, "a b", "", "-o"),
			want: "[a b][][-o]",
		},
		{
			name: "runs in the command's directory with its environment",
			cmd: func() *exec.Cmd {
				c := shell(`pwd; echo "$CONVERGE_TEST_VALUE"`)
				c.Dir, c.Env = dir, []string{"CONVERGE_TEST_VALUE=42"}
				return c
			}(),
			want: dir + "\n42\n",
		},
		{
			name:    "a failing build returns its exit status and output",
			cmd:     shell(`echo broken; exit 3`),
			want:    "broken\n",
			wantErr: "exit status 3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runInGroup(context.Background(), tt.cmd)
			assert.Equal(t, tt.want, string(out))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
		})
	}
}

// TestRunInGroupKillsTheWholeGroupWhenTheContextEnds starts a build that
// starts a child of its own, as go build starts compilers, and checks that
// both are gone once the context ends.
func TestRunInGroupKillsTheWholeGroupWhenTheContextEnds(t *testing.T) {
	startedR, startedW := pipe(t)
	cmd := shell(`sleep 3600 & echo started >&3; wait`)
	cmd.ExtraFiles = []*os.File{startedW}

	errTimedOut := errors.New("test timed out")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		_, err := runInGroup(ctx, cmd)
		_ = startedW.Close() // only the build's processes hold the pipe now
		done <- err
	}()
	started := bufio.NewReader(startedR)
	line, err := started.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "started\n", line)

	cancel(errTimedOut)
	require.ErrorIs(t, <-done, errTimedOut)
	requireAllWritersGone(t, started, "the build or its child")
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name string
		// leftover is the content of out.tmp before the build, if any.
		leftover string
		script   string
		wantErr  string
		want     string
	}{
		{
			name:   "the output is renamed into place",
			script: `printf binary >"$1"`,
			want:   "binary",
		},
		{
			name:     "a partial file of a killed build is removed before building",
			leftover: "partial",
			script:   `if [ -e "$1" ]; then echo "refusing to overwrite $1"; exit 1; fi; printf binary >"$1"`,
			want:     "binary",
		},
		{
			name:    "a failed build leaves no file and says why",
			script:  `printf half >"$1"; echo "undefined: x" >&2; exit 2`,
			wantErr: "undefined: x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "etcd")
			if tt.leftover != "" {
				require.NoError(t, os.WriteFile(out+".tmp", []byte(tt.leftover), 0o644))
			}
			saved := buildCommand
			t.Cleanup(func() { buildCommand = saved })
			buildCommand = func(_, out, pkg, _ string) *exec.Cmd { return shell(tt.script, out, pkg) }

			err := build(context.Background(), t.TempDir(), binary{out: out, pkg: "./etcd", ldflags: "-s -w"})
			assert.NoFileExists(t, out+".tmp")
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				assert.ErrorContains(t, err, "go build ./etcd")
				assert.NoFileExists(t, out)
				return
			}
			require.NoError(t, err)
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}
