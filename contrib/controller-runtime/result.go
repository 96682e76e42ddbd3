package crconverge

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
)

// ConflictRequeueAfter bounds how long Result waits before it reconciles again
// an object whose status write lost a race.
const ConflictRequeueAfter = time.Second

// Result maps what an engine returns, its Result.RequeueAfter and its error,
// to what a reconcile.Reconciler returns:
//
//	res, err := machine.Reconcile(ctx, obj)
//	return crconverge.Result(res.RequeueAfter, err)
//
// Without an error, the object is reconciled again after requeueAfter (never,
// when it is zero or less), unless a watch event comes first.
//
// A conflict (converge.IsConflict) is not an error: the engine has already read the
// object again and decided again with the outcome it had, so nothing it did
// is lost; what is left is a race with another writer that is still going on.
// Result requeues after the shorter of requeueAfter and ConflictRequeueAfter,
// without an error, so the controller does not log a failure or grow the
// object's backoff for a race; the other writer's change usually queues the
// object even sooner.
//
// Any other error is returned as it is, with an empty reconcile.Result:
// controller-runtime then retries with its rate limiter (and ignores a
// RequeueAfter beside an error). Wrap an error in reconcile.TerminalError
// before calling Result to stop the retries.
func Result(requeueAfter time.Duration, err error) (reconcile.Result, error) {
	switch {
	case err == nil:
		return reconcile.Result{RequeueAfter: max(requeueAfter, 0)}, nil
	case converge.IsConflict(err):
		after := ConflictRequeueAfter
		if requeueAfter > 0 {
			after = min(after, requeueAfter)
		}
		return reconcile.Result{RequeueAfter: after}, nil
	default:
		return reconcile.Result{}, err
	}
}
