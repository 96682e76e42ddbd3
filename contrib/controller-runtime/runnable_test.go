package crconverge

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
)

func TestLeaderElectedStart(t *testing.T) {
	boom := errors.New("worker failed")
	tests := []struct {
		name string
		// worker is run by Start with a context that is already cancelled
		// when cancelled is true.
		worker    LeaderElected
		cancelled bool
		wantErr   error
	}{
		{name: "a worker stopped by its context is a clean stop", cancelled: true,
			worker: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }},
		{name: "a wrapped context error is a clean stop too", cancelled: true,
			worker: func(ctx context.Context) error { <-ctx.Done(); return fmt.Errorf("payload: %w", ctx.Err()) }},
		{name: "a worker that returns nil", cancelled: true,
			worker: func(ctx context.Context) error { <-ctx.Done(); return nil }},
		{name: "a worker's own error stops the manager", cancelled: true,
			worker: func(context.Context) error { return boom }, wantErr: boom},
		{name: "a context error before the context ended is the worker's own",
			worker: func(context.Context) error { return context.Canceled }, wantErr: context.Canceled},
		{name: "nil worker", wantErr: converge.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			err := tt.worker.Start(ctx)
			if tt.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.wantErr)
			}
		})
	}
}

func TestLeaderElectedStartWaitsForTheWorker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started, stopped := make(chan struct{}), make(chan struct{})
	worker := LeaderElected(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	})
	done := make(chan error)
	go func() { done <- worker.Start(ctx) }()
	<-started
	cancel()
	require.NoError(t, <-done)
	select {
	case <-stopped:
	default:
		t.Fatal("Start returned before the worker did")
	}
}

func TestLeaderElectedNeedsLeaderElection(t *testing.T) {
	assert.True(t, LeaderElected(nil).NeedLeaderElection())
}
