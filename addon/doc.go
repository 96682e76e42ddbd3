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
// # Claims, fencing and takeovers
//
// The fencing token. Every claim takes the next fencing token: a counter
// kept in the status (Status.Fence), incremented by each claim and written,
// with optimistic concurrency, before the action runs, so a later claim
// always carries a larger token than every claim before it, whichever
// Machine took it (Claim.Fence). The Driver gets it in Request.Fence and
// must not write under a token older than the newest it has seen: a claim
// only keeps replicas apart while their clocks agree and none stalls, and a
// replica that paused past its claim's expiry resumes and runs its call
// after another took the add-on over; with fencing its late write is
// refused (helmconverge labels each Helm revision with the token and
// refuses a call whose token is older than the latest revision's). The
// engine itself records an outcome only under the very claim it ran with
// (its owner, start and token) and discards a late one.
//
// The Inspector. A Driver that also implements Inspector reports what
// version the cluster runs. The engine asks it whenever its status may no
// longer know: in the Reconcile that takes over an expired claim, before
// anything else (an attempt found applied, the cluster running what it
// applied, is recorded as succeeded and verified like any other; otherwise
// it is lost, below); right after discarding a late outcome; and beside the
// health reads while a mismatch stands. A version other than
// Status.InstalledVersion is a mismatch: Status.Mismatch names it, a
// Warning event and Degraded (and in Running, Ready False) say so with
// reason InstalledVersionMismatch, and under Policy.Drift Correct a Running
// add-on restores its installed version. So within one reconcile after a
// takeover, the status agrees with what the cluster runs or says it does
// not. Without an Inspector the engine trusts its status.
//
// Lost attempts. A claim that expired before its owner recorded an outcome
// (History outcome Lost: a crash, a shutdown, lost writes, a pause) says
// nothing about the version it applied, so it is no failure of it: it is
// retried after the backoff and counted apart, in Status.LostAttempts, and
// neither a failure counter, nor FailedVersion, nor a remediation, nor a
// phase deadline that passes meanwhile follows from it. The count has its
// own bound, Policy.MaxLostRetries (3 by default): beyond it a lost attempt
// is a failure like any other, so a crash loop ends in the retries and
// remediation of MaxRetries instead of retrying forever. The two are told
// apart by who wrote the outcome: an action that ran out of
// Policy.ActionTimeout is recorded by its own Machine, alive to record it,
// as failed (context.DeadlineExceeded) and stays a failure; a Machine whose
// own context ended (it is shutting down) records nothing, and its claim
// expires into a lost attempt.
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
//     is the highest spec generation any decision saw, while a claim held
//     too, and a spec below it is a stale cache's,
//     ignored with a StaleGeneration warning. ObservedGeneration keeps its
//     kstatus meaning (the generation the status reflects).
//   - One action in flight, even across deletion: a mutating action is
//     claimed in Status.InFlight (action, owner = Config.Owner, versions,
//     start, expiry, fencing token) and the claim is written before it
//     runs. A look while it holds runs nothing (a deletion waits for it);
//     an outcome is recorded only under the claim it ran with; a claim
//     that expires is taken over: inspected, then found applied or lost
//     (see above).
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
//   - A correction restores what is installed: a drift correction, and the
//     retry of a failed re-apply, apply Status.InstalledVersion
//     (Status.RestoreVersion), never the spec's version, which may be the
//     one that failed and was rolled back.
//   - A Driver, Tester, DriftDetector or Inspector that panics fails its
//     attempt with a *PanicError; Reconcile neither panics nor fails for it.
//   - An add-on enters Running on a version only once its tests passed
//     (with Policy.Test), unless the policy ignores their failures.
//   - A clock stepped back, or a replica whose clock runs behind, never
//     makes a wait longer than what set it: a retry is due within its
//     backoff, a health check within its poll interval, a phase's deadline
//     within its timeout, a claim taken "in the future" within ActionTimeout
//     and ClaimGrace from now. By the clock that set it, a retry never
//     comes sooner than its backoff, unless the phase's deadline does.
//   - Every phase that waits has a deadline (see Policy); a pause or closed
//     maintenance windows that hold the pending action move it on by the
//     time held only. No healthy version is removed for
//     being unhealthy: an unhealthy Running add-on stays Running, Degraded.
//   - A pause (Policy.Paused) and closed maintenance windows
//     (Policy.Windows) start no install, upgrade or test, and hold with
//     HoldPaused or HoldWindowClosed in Status.Holds and Reconciling's
//     reason; what runs finishes, and health checks, remediations and
//     deletions go on. Closed windows are looked at again when they open.
//   - Secrets in driver errors are redacted (Config.Redact, DefaultRedact)
//     before they reach the status, the conditions or the events.
package addon
