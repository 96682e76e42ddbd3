package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// lockRetryInterval is how often a process that waits for the build lock
// tries to take it again.
const lockRetryInterval = 200 * time.Millisecond

// lock takes an exclusive flock on path. The kernel releases a flock when the
// process that holds it dies, so a test process killed mid-build never blocks
// the next one. While another process holds the lock, lock calls onWait once
// and tries again every lockRetryInterval until it gets the lock or ctx ends.
// unlock may be called more than once.
func lock(ctx context.Context, path string, onWait func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testenv: lock: %w", err)
	}
	err = tryLock(f)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		onWait()
		err = waitLock(ctx, f)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("testenv: lock %s: %w", path, err)
	}
	return sync.OnceFunc(func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}), nil
}

// waitLock tries to take the flock on f every lockRetryInterval until it
// gets it or ctx ends.
func waitLock(ctx context.Context, f *os.File) error {
	tick := time.NewTicker(lockRetryInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
		if err := tryLock(f); !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
	}
}

// tryLock takes an exclusive flock on f without waiting; it fails with
// EWOULDBLOCK when another open file holds one.
func tryLock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
