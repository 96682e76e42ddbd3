// Package payload applies a payload of manifests as a dependency graph of tasks, inside a
// sync worker that initializes, updates and reconciles, as OpenShift's cluster-version
// operator does.
//
// # The worker
//
// A Worker keeps a cluster at the release Update names; Start runs its loop, whose every
// decision is the pure Decide(Input) (Decision, error): it folds the Observation of the
// apply that just ended (what the host's loader, appliers, deleter and readiness checks
// returned) into the Status, and says what to apply next, in which State, after which
// delay and with which events. The shell only waits and acts.
//
//   - The first release is Initializing: every component at once, the component with the
//     most manifests left first (CriticalPathFirst), so that a fresh cluster is done in
//     about max(N/w, critical path) manifest latencies. A release after a completed one
//     is Updating: run levels in order, waiting for each manifest to be ready, in the
//     cluster-version operator's order (LowestIndexFirst). Then the worker is Reconciling
//     every Policy.Interval, in a seeded permutation and the operator's order. Every
//     state runs a bounded pool.
//   - No pass starts before its interval or its backoff has elapsed, whatever their
//     precision: Status.NextApplyTime keeps the due time to the microsecond, rounded up,
//     and the loop waits exactly until then.
//   - A worker given a persisted Status resumes its release at once: an interrupted apply
//     in its state, a reconcile when it is due; a later Update may replace the release.
//   - Update to another release cancels the apply in flight before it returns, and no
//     host call of the replaced release starts once Update has returned: the worker
//     checks, right before each call, that its apply still runs (its context, which
//     Update cancels). Only a goroutine preempted between that check and its call can
//     still start one; closing that instant would make Update wait behind hung calls.
//     A call in flight that ignores its context keeps its pool slot until it returns.
//   - A delete that finds its object gone (the API server's NotFound) is done, not a
//     deletion: ManifestsDeleted names only the objects a pass removed.
//   - A failed manifest says why in the operator's words, then the error: `Could not
//     update deployment "ns/web" (3 of 7): resource may have been deleted: deployments.apps
//     "web" not found`. A kind the server does not know fails its pass at once, naming the
//     kind, and the next pass tries it again (a CRD of the payload may register it).
//   - Persisted progress never goes back within a release: the notifier writes the
//     status as it is when it writes, never a copy handed over earlier.
//
// # The graph
//
// BuildGraph arranges tasks by run level and component (OrderRunLevels, OrderParallel,
// OrderSerial), with Jobs as barriers and the depends-on annotation as edges; RunGraph
// runs any graph with exactly RunOptions.Workers goroutines. LowestIndexFirst is the
// cluster-version operator's order to the node: a dispatcher keeps Workers nodes queued
// ahead of the workers, the lowest ready index first, started in the order queued.
// CriticalPathFirst starts the ready node with the most tasks left on its longest path.
// On the recorded OpenShift 4.15 install graph (862 manifests, 74 components, a
// 74-manifest critical path), scheduled in simulated time, the initializing order ends
// within 1.01× of the lower bound max(N·L/w, critical path·L) at every pool of 1 to 16
// workers, where the operator's order reaches 1.43× at 12 and 1.30× at 16
// (BenchmarkInstallSchedule).
//
// # Loading
//
// Load reads multi-document YAML and JSON files in CompareFiles order. A document in the
// block style manifests use is read once, into one buffer and maps made at their size;
// anything else (non-empty flow collections, anchors, floats, …) goes through
// sigs.k8s.io/yaml, with the same result (FuzzDecodeBlock). A 50 MB manifest, the limit
// raised to 64 MiB, allocates 2.0× its size for one large value and 4.0× for many keys
// (BenchmarkLoadLargeManifest); the default limit of 3 MiB refuses it once 3 MiB are
// read.
//
// # Tested under faults
//
// TestSimPayload runs the worker, its pools of two and three for real, in a synctest
// bubble, where every host call blocks until the seeded schedule answers it, in any
// order, with failures, hangs past their context, panics, unknown kinds, readiness
// waits, Updates, restarts and crashes that lose the writes not yet made; it checks the
// rules above after every step. A seed replays (go test ./payload -run
// 'TestSimPayload$' -seed N -v), but for the status writes: the notifier reads the
// status on a goroutine the schedule does not order with the loop's, so a few seeds in
// a thousand can take another path after a write. hack/mutants/payload keeps the bug
// classes it must catch.
package payload
