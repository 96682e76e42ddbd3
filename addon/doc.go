// Package addon runs an add-on's lifecycle as a phase transition table with
// a retry and remediation policy.
//
// A host implements a Driver (Install, Upgrade, Uninstall and Health, and
// DriftDetector and Tester when its Policy asks for drift and tests) and a
// Store that reads an add-on and writes its Status with optimistic
// concurrency (kube.AddonObjects is one), builds a Machine with NewMachine,
// and calls Machine.Reconcile for each add-on it reconciles: it requeues
// after Result.RequeueAfter, emits Result.Events, and drops its finalizer on
// Result.Deleted. ExampleMachine_Reconcile shows it; docs/addon.md has the
// whole manual.
//
// An add-on (a mesh manager, a log collector, a Helm release) goes through
// install, health check, tests, run, upgrade, retry, remediation, drift
// correction, failure and deletion. Its lifecycle is a Table of rows
// (from phase, trigger) → (to phase, action), DefaultTable the one learnt
// from TKEStack's add-on controllers and Flux's helm-controller. Decide is
// the lifecycle as a pure function: from the Spec, the persisted Status, the
// Observation (what the Driver returned for the action the previous
// decision chose), the Policy and the time, it returns the new status, the
// one Action to run, the events and when to look again. Machine is the thin
// shell around it: Reconcile decides, claims a mutating action in the
// status (Status.InFlight) before it runs it through the Driver, records
// what the Driver returned and writes the status. A new Machine continues
// from the status alone. Package addon/addontest checks a table and a
// policy exhaustively against the rules below.
//
// # Rules
//
// The engine keeps these rules whatever the order of events, the caches the
// host reads from, crashes and clocks:
//
//   - A re-apply is never a fresh install: with a version installed, an
//     install is an upgrade onto it (see Row).
//   - The engine acts on generations. A changed spec is news only under a
//     new Spec.Generation, the object's metadata.generation, which the API
//     server moves on every change of anything but metadata and status: an
//     upgrade to a new version, and leaving Failed for a new spec, happen
//     when the generation moves. A host whose objects do not come from an
//     API server moves the generation itself (fake.AddonStore.Update does,
//     and the controller-runtime module's crtest.WithGenerations).
//   - No generation older than one seen is acted on: Status.SeenGeneration
//     is the highest spec generation any decision saw, while a claim held or
//     a suspension lasted too, and a spec below it is a stale cache's,
//     ignored with a StaleGeneration warning. ObservedGeneration keeps its
//     kstatus meaning (the generation the status reflects).
//   - One action in flight, even across deletion: a mutating action is
//     claimed in Status.InFlight (action, owner = Config.Owner, versions,
//     start, expiry) and the claim is written before it runs. A look while
//     it holds runs nothing (a deletion waits for it); an outcome is
//     recorded only under the claim it ran with; a claim that expires (a
//     crash) is a lost attempt, counted as a failure and retried.
//   - A claim is never honoured past the latest expiry the engine itself
//     writes: Policy.ActionTimeout plus ClaimGrace after it was taken (or
//     after now, when it claims to be taken later). A later one (year 9999)
//     is bounded there, with a ClaimExpiryBounded warning.
//   - Conflicts lose nothing: a Store returns the API server's 409 or an
//     error marked with converge.Conflict, and the Machine reads the add-on
//     again and records the outcome on the fresh status. A health read is
//     the exception: it is written only over the status it was decided
//     from; after a conflict it is dropped and read again, for it may have
//     been taken while another writer's action ran.
//   - A failed re-apply of the version last seen healthy (a new spec at the
//     same version, a forced retry, a drift correction) is no failed
//     upgrade: that version still runs, so the add-on goes back to Running,
//     its health watched, and the re-apply is retried after its backoff
//     (Status.ReapplyTime) under Policy.MaxRetries; it is never remediated.
//     Once its retries run out it is not retried until the spec changes or
//     a force request arrives.
//   - A Driver, Tester or DriftDetector that panics fails its attempt with a
//     *PanicError; Reconcile neither panics nor fails for it.
//   - A clock stepped back never makes a wait longer than what set it: a
//     retry is due within its backoff, a health check within its poll
//     interval, a phase's deadline within its timeout.
//   - Every phase that waits has a deadline (see Policy); a suspension moves
//     it on by the time suspended only. No healthy version is removed for
//     being unhealthy: an unhealthy Running add-on stays Running, Degraded.
//   - Secrets in driver errors are redacted (Config.Redact, DefaultRedact)
//     before they reach the status, the conditions or the events.
package addon
