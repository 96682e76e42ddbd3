package payloadapply

import (
	"context"
	"errors"
	"fmt"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// Decided is a result of the worker with the status it made.
type Decided struct {
	converge.Result
	Status payload.Status
}

// AwaitReconcile waits until the payload has been applied and then reconciled once,
// stepping an in-memory cluster's clock to each requeue. An apply runs in the state the
// decision before it published; persisted is the status the worker started from, which
// it prints first when there is one.
func AwaitReconcile(ctx context.Context, c *Cluster, persisted payload.Status, progress *Progress, results <-chan Decided) error {
	const maxFailures = 5
	if !persisted.Release.IsZero() {
		progress.Println("persisted status: release %s, %s, completed %s", persisted.Release.Version, persisted.State, count(int(persisted.Completed), "time"))
	}
	failures := 0
	last := persisted
	for {
		var d Decided
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting for the payload: %w", ctx.Err())
		case d = <-results:
		}
		ran, s := last.State, d.Status
		last = s
		switch {
		case d.RequeueAfter == 0:
			continue // the decision starts an apply
		case s.Failures > 0:
			failures++
			progress.Println("apply (%s) failed, retrying in %s: %s", ran, d.RequeueAfter, s.Failure.Message)
			if failures == maxFailures {
				return errors.New("too many failed applies")
			}
		default:
			progress.Println("apply (%s) done: %d/%d manifests, completed %s, next in %s", ran, s.Done, s.Total, count(int(s.Completed), "time"), d.RequeueAfter)
			if ran == payload.StateReconciling {
				return nil
			}
		}
		if c.Fake != nil {
			c.Fake.Step(d.RequeueAfter)
		}
	}
}
