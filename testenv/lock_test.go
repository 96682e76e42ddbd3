package testenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLockExcludesOtherOpenFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lock(context.Background(), path, func() { t.Error("the first lock waited") })
	require.NoError(t, err)

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	require.ErrorIs(t, err, syscall.EWOULDBLOCK, "another lock was taken while the first is held")

	unlock()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB), "the lock is free after unlock")
}

func TestLockWaitsForTheHolderOrTheContext(t *testing.T) {
	errGaveUp := errors.New("gave up")
	tests := []struct {
		name string
		// end ends the wait, by unlocking the holder or cancelling the waiter.
		end     func(unlockHolder func(), cancelWaiter context.CancelCauseFunc)
		wantErr error
	}{
		{
			name: "the waiter gets the lock once the holder unlocks",
			end:  func(unlockHolder func(), _ context.CancelCauseFunc) { unlockHolder() },
		},
		{
			name:    "the waiter gives up with the cause when its context ends",
			end:     func(_ func(), cancelWaiter context.CancelCauseFunc) { cancelWaiter(errGaveUp) },
			wantErr: errGaveUp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "lock")
			unlockHolder, err := lock(context.Background(), path, func() { t.Error("the holder waited") })
			require.NoError(t, err)
			defer unlockHolder()

			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			waiting := make(chan struct{})
			type result struct {
				unlock func()
				err    error
			}
			got := make(chan result, 1)
			go func() {
				unlock, err := lock(ctx, path, func() { close(waiting) })
				got <- result{unlock, err}
			}()
			<-waiting
			tt.end(unlockHolder, cancel)
			r := <-got
			if tt.wantErr != nil {
				require.ErrorIs(t, r.err, tt.wantErr)
				return
			}
			require.NoError(t, r.err)
			r.unlock()
		})
	}
}
