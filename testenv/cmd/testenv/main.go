// Command testenv starts package testenv's etcd and kube-apiserver on
// loopback, so that a program can run against a real apiserver:
//
//	go run ./testenv/cmd/testenv -- sh -c 'go run ./examples/payload-apply -kubeconfig "$KUBECONFIG" -simulate-controllers'
//
// (from another module: go run github.com/converge-dev/converge/testenv/cmd/testenv@VERSION -- ...).
//
// With a command after "--" it runs the command with KUBECONFIG set, stops
// the environment, and exits with the command's status. Without one it
// prints the kubeconfig path and waits for an interrupt.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/converge-dev/converge/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, startEnvironment)
	stop()
	os.Exit(code)
}

// starter starts an environment and returns its kubeconfig and how to stop it.
type starter func(ctx context.Context) (kubeconfig string, stop func() error, err error)

func startEnvironment(ctx context.Context) (string, func() error, error) {
	env, err := testenv.Start(ctx)
	if err != nil {
		return "", nil, err
	}
	return env.Kubeconfig, env.Stop, nil
}

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, start starter) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintln(stdout, "usage: testenv [-- command [args...]]")
		return 0
	}
	kubeconfig, stop, err := start(ctx)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintln(stderr, err)
		}
	}()
	fmt.Fprintf(stderr, "testenv: etcd and kube-apiserver are up; KUBECONFIG=%s\n", kubeconfig)
	if len(args) == 0 {
		fmt.Fprintf(stdout, "export KUBECONFIG=%s\n", kubeconfig)
		<-ctx.Done()
		return 0
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		return exit.ExitCode()
	default:
		fmt.Fprintln(stderr, "testenv:", err)
		return 1
	}
}
