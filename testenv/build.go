package testenv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// supervisor is the shell program that runs a build. It starts its
// arguments as a background job and waits for it, so that the trap runs as
// soon as SIGTERM arrives. SIGTERM comes from the kernel when the process
// that started the supervisor dies (Pdeathsig); the trap then kills the whole
// process group: the supervisor, the go command and every compiler and
// linker it started. Pdeathsig on the go command alone would leave those
// running.
const supervisor = `trap 'kill -KILL 0' TERM; "$@" & wait $!`

// buildWaitDelay bounds how long a build's output is read after the build
// exited or was killed, should a process outside its group hold the pipe.
const buildWaitDelay = 5 * time.Second

// buildCommand returns the command that builds pkg of the build module in
// dir into out with the linker flags ldflags. Tests replace it with a fake
// build.
var buildCommand = goBuildCommand

// goBuildCommand builds with the go command on $PATH, in module mode
// whatever the caller's environment says: no workspace, the build module's
// go.sum as it is.
func goBuildCommand(dir, out, pkg, ldflags string) *exec.Cmd {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags="+ldflags, "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off")
	return cmd
}

// build builds b from the build module in dir, atomically: the build
// writes b.out.tmp, which is renamed to b.out once it is complete. The
// caller holds the build lock.
func build(ctx context.Context, dir string, b binary) error {
	out, pkg := b.out, b.pkg
	tmp := out + ".tmp"
	// A build killed with its test process may have left a partial file,
	// which go build refuses to overwrite.
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("testenv: %w", err)
	}
	fmt.Fprintf(os.Stderr, "testenv: building %s into %s (the first build compiles Kubernetes and takes minutes)\n", pkg, out)
	if outb, err := runInGroup(ctx, buildCommand(dir, tmp, pkg, b.ldflags)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("testenv: go build %s: %w\n%s", pkg, err, outb)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// runInGroup runs cmd under the supervisor in a new process group and
// returns its combined output. The group never outlives the calling
// process: when ctx ends the group is killed, and when the calling process
// dies the kernel tells the supervisor, which kills the group. The error
// wraps ctx's cause when ctx ended the command.
func runInGroup(ctx context.Context, cmd *exec.Cmd) ([]byte, error) {
	args := append([]string{"-c", supervisor, "supervisor", cmd.Path}, cmd.Args[1:]...)
	sup := exec.CommandContext(ctx, "/bin/sh", args...)
	sup.Dir, sup.Env, sup.ExtraFiles = cmd.Dir, cmd.Env, cmd.ExtraFiles
	var out bytes.Buffer
	sup.Stdout, sup.Stderr = &out, &out
	sup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	sup.Cancel = func() error { return syscall.Kill(-sup.Process.Pid, syscall.SIGKILL) }
	sup.WaitDelay = buildWaitDelay

	// The kernel sends Pdeathsig when the thread that started the child
	// exits, not the process. Holding this goroutine on its thread until
	// the child is reaped keeps the Go runtime from retiring that thread
	// while the build runs.
	runtime.LockOSThread()
	err := sup.Run()
	runtime.UnlockOSThread()
	if ctx.Err() != nil {
		return out.Bytes(), fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return out.Bytes(), err
}
