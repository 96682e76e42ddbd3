// Package converge is a library of reconciliation engines for Kubernetes
// operator authors.
//
// Each engine takes a control loop that operators keep writing by hand and
// makes it a small, tested, pure engine that an operator drives with its own
// clients:
//
//   - [github.com/converge-dev/converge/rollout]: node-by-node revision
//     rollout: which node goes next, which revision it gets, what an
//     installer's outcome means, and Available / Progressing / Degraded.
//   - [github.com/converge-dev/converge/addon]: an add-on lifecycle as a
//     phase transition table with a retry and remediation policy.
//   - [github.com/converge-dev/converge/payload]: an ordered, parallel apply
//     of many manifests as a task graph, inside a sync worker that knows
//     Initializing, Updating and Reconciling.
//   - [github.com/converge-dev/converge/conditions]: status conditions on
//     []metav1.Condition, shared by all engines.
//   - [github.com/converge-dev/converge/fake]: fakes of every host interface.
//
// Every engine has the same shape: observe → decide → act.
//
//  1. Observe: the host fills plain Go structs from its informers, listers or
//     clients; an engine never reaches into the cluster itself.
//  2. Decide: a pure function turns the observation, the persisted status,
//     a policy and the current time into a decision: the new status, the
//     actions to take, the events to emit, and when to look again. It does no
//     I/O, reads no clock and starts no goroutine, so every rule is tested with
//     tables.
//  3. Act: a thin shell calls the host's small interfaces to observe, runs the
//     decision, performs the actions, writes the status with optimistic
//     concurrency, and returns a result with RequeueAfter, the contract of
//     controller-runtime's reconcile.Result.
//
// Everything an engine needs to continue lives in the status the host
// persists, so a restarted operator carries on where it stopped. Both layers
// are public: an operator can adopt the pure decision functions alone
// (rollout.Decide, addon.Decide, payload.Decide: each Decide(Input)
// (Decision, error)), or the whole shell.
//
// This package is the vocabulary the engines share, and imports none of
// them: the Event a decision asks the host to emit, the Result a shell
// returns, the Backoff every policy spaces its retries with, the Window
// (maintenance window) every policy lets work start in, the Hold that says
// what keeps an engine from moving, MicroTime for a time persisted to the
// microsecond that reads back one written with seconds, ErrConflict for a
// status write that lost a race, and ErrInvalid for bad input anywhere in
// converge.
package converge
