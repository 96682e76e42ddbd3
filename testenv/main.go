package testenv

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// WithEnvironment wraps a test package's testing.M so that its Run starts one
// Environment for the whole package, stores it in *env, runs the tests, and
// stops it again, also when a test fails or the run is interrupted with
// SIGINT or SIGTERM. Use it inside goleak.VerifyTestMain, which checks for
// leaked goroutines after the environment is gone.
func WithEnvironment(m *testing.M, env **Environment) interface{ Run() int } {
	return &withEnvironment{m: m, env: env}
}

type withEnvironment struct {
	m   *testing.M
	env **Environment
}

// Run implements goleak.TestingM.
func (w *withEnvironment) Run() int {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	e, err := Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*w.env = e

	finished := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-ctx.Done():
			fmt.Fprintln(os.Stderr, "testenv: interrupted, stopping etcd and kube-apiserver")
			_ = e.Stop()
			os.Exit(130)
		case <-finished:
		}
	})
	code := w.m.Run()
	close(finished)
	wg.Wait()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
