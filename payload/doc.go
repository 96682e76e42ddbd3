// Package payload keeps a cluster at a release of many manifests: a sync worker that
// initializes, updates and then reconciles, applying the manifests as a task graph, as
// OpenShift's cluster-version operator does.
//
// A host implements a Loader, which reads the manifests of a release (manifest.Load),
// and an Applier (kube.Applier is one, and its Deleter and Readiness too), makes a
// Worker with NewWorker from the status it persisted and the release it wants
// (Config.Status, Config.Desired), runs Start and names each later release with
// Update; it persists the Status through a StatusWriter and emits the events of the
// converge.Result it gets in Config.OnResult (ExampleWorker). The task graph is
// package payload/graph's, the loader package payload/manifest's.
//
// # The worker
//
// Every decision of the worker's loop is the pure Decide(Input) (Decision, error)
// (ExampleDecide): it folds the Observation of the apply that just ended (what the
// host's loader, appliers, deleter and readiness checks returned) into the Status,
// and says what to apply next, in which State, after which delay and with which
// events. The shell only waits and acts.
//
//   - The first release is Initializing: every component at once, the component with
//     the most manifests left first (graph.CriticalPathFirst), so that a fresh cluster
//     is done in about max(N/w, critical path) manifest latencies. A release after a
//     completed one is Updating: run levels in order, waiting for each manifest to be
//     ready (Config.Readiness) before the next run level, in the cluster-version
//     operator's order (graph.LowestIndexFirst). Then the worker is Reconciling every
//     Policy.Interval, without readiness waits, in an order that changes with every
//     pass (graph.BuildShuffled), so that a manifest that always fails cannot starve
//     the others. Every state runs a bounded pool (Policy.InitializingWorkers 16,
//     Workers 8, ReconcileWorkers 2): a payload of 10,000 manifests never starts
//     10,000 goroutines.
//   - No pass starts before its interval or its backoff has elapsed, whatever their
//     precision: Status.NextApplyTime keeps the due time to the microsecond, rounded
//     up (a converge.MicroTime, which reads back a time written with seconds too), and
//     the loop waits exactly until then. A failed apply is retried after
//     Policy.Backoff (by default Interval/8, /4, /2, then Interval, plus up to 20 %
//     jitter), each manifest attempt after Policy.ManifestBackoff (by default 10 s ·
//     1.3ⁿ up to 30 s, no jitter), as the cluster-version operator waits.
//   - No wait is longer than its own length, whatever the clock reads: a due time
//     further from now than its interval, or its backoff at the largest jitter (the
//     clock stepped back, or the status comes from a replica whose clock runs ahead),
//     is pulled back to now plus that length (Decide); the loop's wait, the readiness
//     timeout and the apply timeout run on the clock's timers, which measure the time
//     that passes, so a clock that steps back meanwhile does not stretch them.
//   - A worker given a persisted Status carries on from it at once, without waiting
//     for Update: an interrupted apply in its state, a reconcile when it is due. Its
//     release is Config.Desired when the host names it, else the status's own; a later
//     Update may replace it. A host that knows the release it wants names it in the
//     Config, so that nothing of a release it no longer wants is applied, whatever the
//     order of Start and Update. A restart neither extends nor shortens a wait.
//   - A stop (the end of Start's context) is no failure and no warning: the status
//     says Interrupted, Start writes it and waits for that write up to
//     Config.FlushTimeout (10 s), and the next start resumes the apply at once, in its
//     state.
//     Update to another release (Release.Same: two images of one digest are one
//     release, whatever registry serves them) cancels the apply in flight before it
//     returns, and no host call of the replaced release starts once Update has
//     returned: the worker checks, right before each call (load, preconditions,
//     apply, delete, every readiness check), that its apply still runs. Only a
//     goroutine preempted between that check and its call can still start one;
//     closing that instant would make Update wait behind hung calls. A call in
//     flight that ignores its context keeps its pool slot until it returns.
//   - Policy.Paused and closed Policy.Windows (converge.Window) keep a desired release
//     that is not Status.Release from starting, the first one included: the worker
//     goes on with the release it has (its reconcile passes, which restore it, and an
//     update already started, retries included), lets the apply in flight finish
//     (Update cancels nothing then), holds (Status.Holds: converge.PausedHold,
//     converge.WindowClosedHold naming the opening; Progressing's reason Paused or
//     WindowClosed, Available and Failing unchanged, no event), and, held by the
//     windows, decides again when they open. A pause needs no wake: the host makes a
//     worker with the new Policy. The Worker loads the windows' time zones once
//     (converge.Zones.Load) and hands them to Decide (Input.Zones), which does no
//     I/O; a zone that does not load is invalid config (TestDecideHolds,
//     TestDecideWakesAtTheOpeningAcrossDST, TestWorkerPausedLetsTheApplyInFlightFinish).
//   - A delete that finds its object gone (the API server's NotFound) is done, not a
//     deletion: ReasonManifestsDeleted names only the objects a pass removed.
//   - A failed manifest says why in the operator's words, then the error: `Could not
//     update deployment "ns/web" (3 of 7): resource may have been deleted: deployments.apps
//     "web" not found`, with the operator's reason. A kind the server does not know
//     fails its pass at once, naming the kind, and the next pass tries it again (a CRD
//     of the payload may register it). Errors are summarized as the operator does:
//     UpdateErrors of one kind and reason with a plural form are condensed into one,
//     several unrelated errors are sorted bullets (ReasonMultipleErrors), errors of
//     one text are one error, the one with the strongest Effect. An Effect is acted
//     on: EffectReport completes the apply, EffectNone retries without failing
//     (Progressing says what the update waits on), EffectFailAfterInterval fails once
//     no progress was made for an interval, EffectFail fails at once.
//   - Progress never goes back within a release (Status.Done is the most any apply
//     of the release reached), in memory nor in what is persisted: the notifier
//     writes the status as it is when it writes, never a copy handed over earlier.
//     The worker tells it of a change right before it blocks (a host call, a wait),
//     so that no write catches the status between the progress of an apply's last
//     manifest and the decision that ends the apply.
//   - Nothing crashes the host: a panic or runtime.Goexit in any host hook fails what
//     it was doing; in a manifest's hooks, it fails that manifest and names it. A bad
//     Config, a Worker not made by NewWorker, and an Input with a bad Policy, Status
//     or Observation or a zero Now are errors matching converge.ErrInvalid, in the
//     wording every engine uses.
//   - The worker writes the reasons Reasons lists, and the reasons of the UpdateErrors
//     a host's appliers return; its conditions are the cluster-version operator's
//     (conditions.TypeAvailable, TypeProgressing and TypeFailing).
//
// # Tested under faults
//
// TestSimPayload runs the worker, its pools of one, two and three for real, in a
// synctest bubble, where every host call blocks until the seeded schedule answers it,
// in any order, with failures, hangs past their context, panics, unknown kinds,
// readiness waits, Updates, restarts and crashes between any two host calls (right
// after a status write too), the status persisted through encoding/json, clocks that
// jump an hour and replicas whose clocks are off, maintenance windows and pauses
// drawn per seed (no call of a release the worker had not started comes while it is
// paused or its windows are closed, and once they open an idle worker has started
// the release it was told); it checks the rules above against
// the world after every step, and every failure a decision records against what
// failed in the world. A seed replays step for step, whatever GOMAXPROCS (go test
// ./payload -run 'TestSimPayload$' -seed N -v). hack/mutants/payload keeps the bug
// classes it must catch.
package payload
