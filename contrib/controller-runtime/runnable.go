package crconverge

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/converge-dev/converge"
)

// LeaderElected is a manager.Runnable that runs a long-lived worker only
// while the manager holds the leader lease, such as a payload worker:
//
//	err := mgr.Add(crconverge.LeaderElected(worker.Start))
//
// The manager calls Start once it is elected, with a context that ends when
// the manager stops. Start runs the worker in the calling goroutine, so it
// returns only once the worker has returned, and a manager that stops
// cleanly waits for it, up to its graceful shutdown timeout. A manager that
// loses the lease stops at once without waiting (controller-runtime skips
// the graceful shutdown then) and its process is meant to exit: the worker
// must leave, at any point, a persisted state that the next leader carries
// on from, as the payload worker does.
type LeaderElected func(ctx context.Context) error

var _ manager.LeaderElectionRunnable = LeaderElected(nil)

// Start runs the worker until it returns. The context's own error, returned
// by a worker that stopped because its context ended, is a clean stop (nil);
// any other error is returned, and stops the manager. A nil LeaderElected is
// an error wrapping converge.ErrInvalid.
func (f LeaderElected) Start(ctx context.Context) error {
	if f == nil {
		return converge.Invalidf("crconverge", "LeaderElected arguments", "nil worker")
	}
	err := f(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// NeedLeaderElection reports true: the worker runs only on the leader.
func (LeaderElected) NeedLeaderElection() bool { return true }
