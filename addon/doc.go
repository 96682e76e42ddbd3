// Package addon runs an add-on's lifecycle as a phase transition table with a
// retry and remediation policy.
//
// An add-on (a mesh manager, a log collector, a Helm release) goes through
// install, health check, tests, run, upgrade, retry, remediation, drift
// correction, failure and deletion. Its lifecycle is a Table of rows
// (from phase, trigger) → (to phase, action), DefaultTable the one learnt
// from TKEStack's add-on controllers and Flux's helm-controller. Decide is
// the lifecycle as a pure function: from the Spec, the persisted Status, the
// Observation (what the host's Driver returned for the action the previous
// decision chose), the Policy and the time, it returns the new status, the
// one Action to run, the events and when to look again. Machine is the thin
// shell around it: Reconcile decides, claims a mutating action in the
// status (Status.InFlight) before it runs it through the Driver, records
// what the Driver returned and writes the status with optimistic
// concurrency. A new Machine continues from the status alone.
//
// The engine acts on generations: a changed spec is news only under a new
// Spec.Generation, the add-on object's metadata.generation, which the API
// server moves on every change of anything but metadata and status. An
// upgrade to a new version, and leaving Failed for a new spec, happen when
// the generation moves; a spec read under the generation already observed
// is taken for the spec already acted on, and one under an older generation
// than one already seen is a stale cache, ignored with a StaleGeneration
// warning event. A host whose objects do not come from an API server must
// move the generation itself: controller-runtime's fake client never does,
// and the controller-runtime module's crtest.WithGenerations makes it.
//
// # Rules
//
// The engine keeps these rules whatever the order of events, the caches the
// host reads from, crashes and clocks:
//
//   - A re-apply is never a fresh install: with a version installed, an
//     install is an upgrade onto it.
//   - One action in flight, even across deletion: a claim holds every look
//     until its outcome is recorded or it expires, and an outcome is
//     recorded only under the claim it ran with. Conflicts lose nothing,
//     but a health read, which is written only over the status it was
//     decided from: after a conflict it is dropped and read again, for it
//     may have been taken while another writer's action ran.
//   - No generation older than one seen is acted on: Status.SeenGeneration
//     is the highest spec generation any decision saw, while a claim held or
//     a suspension lasted too, and a spec below it is stale and ignored.
//     ObservedGeneration keeps its kstatus meaning (the generation the
//     status reflects).
//   - A failed re-apply of the version last seen healthy (a new spec at the
//     same version, a forced retry, a drift correction) is no failed
//     upgrade: that version still runs, so the add-on goes back to Running,
//     its health watched, and the re-apply is retried after its backoff
//     (Status.ReapplyTime) under Policy.MaxRetries; it is never remediated.
//     Once its retries run out it is not retried until the spec changes or
//     a force request arrives.
//   - A Driver, Tester or DriftDetector that panics fails its attempt with a
//     *PanicError; Reconcile neither panics nor fails for it.
//   - A claim is never honoured past the latest expiry the engine itself
//     writes: Policy.ActionTimeout plus ClaimGrace after it was taken (or
//     after now, when it claims to be taken later). A later one (year 9999)
//     is bounded there, with a ClaimExpiryBounded event.
//   - A clock stepped back never makes a wait longer than what set it: a
//     retry is due within its backoff, a health check within its poll
//     interval, a phase's deadline within its timeout.
//   - No healthy version is removed for being unhealthy, every waiting
//     phase has a deadline, and secrets in driver errors are redacted
//     before they reach status, conditions or events.
//
// # Testing the engine
//
// Explore checks a table exhaustively to a depth, against a world the
// explorer keeps apart from the status (the version the cluster runs and
// whether it serves): stale specs and statuses, actions in flight while
// other steps happen, crashes between any two writes, clocks stepped back
// and claims stretched by another writer. Its rules have no excuse clauses:
// a version the cluster runs and serves is never uninstalled or replaced
// except on deletion, at the spec's request, or as the uninstall the policy
// chooses for a failure of another version. The package's tests also run a
// seeded simulation of two Machines on one add-on under faults, and
// hack/mutants/addon keeps known bug classes that the exploration or the
// simulation must catch. docs/addon.md has the figures.
package addon
