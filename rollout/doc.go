// Package rollout moves every node of a per-node component to the latest revision, never more nodes down than allowed.
//
// A host implements a StatusStore, an InstallerClient and an
// OperandReader (a NodeLister and a Gate if it has them; package kube
// adapts client-go), makes a Controller with NewController and calls
// Controller.Sync on every change, emitting Result.Events and syncing again
// after Result.RequeueAfter: see ExampleController_Sync. A host that acts
// on its own calls Decide and acts on the Decision as Sync does
// (ExampleDecide). The rules below hold either way; docs/rollout.md runs
// the example and measures the engine.
//
// It is library-go's static-pod installer controller as a pure decision
// and a thin shell. What runs on the node is the truth: the engine decides
// from what the host observed of each node's operand and installer, and the
// status records it.
//
// # A sync
//
// Decide turns the persisted Status, the Observation, the Policy and the
// time into a Decision: which nodes left, joined or were replaced, what
// each node's observation means (NextNodeStatus), which installers go, and
// which nodes start, worst first (StartNode) and in ring order from it,
// each at the revision RevisionToStart gives it. A node in transition whose
// last failure is not its target counts, for the node after it, as already
// at its target, so that with MaxUnavailable above 1 healthy nodes move
// together.
//
// Controller.Sync writes the decision's status before it does anything for
// any node, so a crash leaves decisions without installers, which the next
// sync ensures, never an installer without its decision; a write lost to a
// conflict (converge.IsConflict) has changed nothing, and Sync reads and
// decides again. Then it creates each installer on its own (a create that
// fails is that node's failed attempt, InstallerPodDisappeared, and holds
// no other node back), deletes the installers the decision retired and
// writes the final status. A sync in which nothing changed writes nothing.
//
// # What counts as unavailable
//
// A node is unavailable while it is unreachable, an installer of it may run
// (one ordered and not seen finished, or one the engine decided must go and
// the host has not confirmed gone), its operand is not ready or missing, or
// its operand runs below its current revision. Taking a node down that is
// up (its operand ready) needs the budget: fewer than MaxUnavailable nodes
// unavailable besides it. A node already down may be started within the
// budget of nodes installing at once: it takes nothing more down, and goes
// straight to the latest revision, never below the one its operand runs. A
// node in transition between attempts (backing off after a failure) whose
// operand is up is up: its next installer needs the budget as a start does.
// An unreachable node is never started and gets no installer, so one that
// stays unreachable holds a rollout with MaxUnavailable 1.
//
// # Identity, and what runs
//
// A node is its UID: one observed with another UID than its status records
// is a new machine under the same name. It starts afresh at the revision
// its own operand runs; nothing of its predecessor's installers or failures
// counts as its history, and its predecessor's installer is deleted before
// its own, which may have the same name, is created. A node that joins
// starts at the revision its operand runs, too; one that leaves the
// observation loses its status and its unfinished installer.
//
// Every installer of a node is the one its current decision wants, or is
// recorded in Status.InstallersToDelete in the same write and deleted,
// whatever its phase: an installer still pending when its node's operand
// became ready on its own, one superseded by a newer revision, one that
// timed out, failed or finished. Until the host confirms it gone, its node
// gets no new installer and counts as unavailable. A node whose operand
// runs ready at or above its target is done. An operand that is missing, or
// that runs below the node's current revision, is recorded (OperandMissing,
// RegressedRevision), reported once, counts against the budget and is
// explained in Degraded, and the node installs its current revision again.
// The engine never moves a node down: a latest revision below what a node
// runs counts as reached.
//
// # Failures and retries
//
// Every failure is a failed attempt with one word for it, the persisted
// NodeStatus.LastFailedReason, the event's reason and Degraded's alike (see
// ReasonInstallerPodFailed and the reasons after it). A node that failed
// the latest revision retries it as the start of a pass, after its
// RetryTime (Policy.InstallerBackoff) and while Policy.MaxInstallerRetries
// allows, under a new installer name (InstallerName); a failure does not
// spread: no healthy node starts a revision another reachable node is
// failing (a node already down may: it has nothing to lose), and a start
// node held back by another node's failure hands the start of the pass to
// that node, so that the rollout never waits on a retry nobody makes.
//
// # Fallback
//
// A fallback installs a node's last good revision again when a newer one
// does not become ready. It comes two ways: observed, when the startup
// monitor on the node (library-go's) did it and the host reports the operand
// as an OperandFallback; or decided, with Policy.FallbackTimeout, when the
// operand is not ready that long after its installer succeeded: the engine
// targets the node's current revision again. Either way the status records
// it with library-go's names (LastFailedRevision, LastFailedReason
// OperandFailedFallback, LastFallbackCount), an event reports it, Degraded
// names the node and the revision, and the node retries the revision after
// Policy.FallbackBackoff, not the installer backoff (and, after a failed
// install below that revision, the installer backoff too). A node is in
// fallback from a revision while its status records the fallback and it has
// not reached the revision (also while it installs a revision below it: its
// last good revision again, or one its leader runs; a failure of such an
// install keeps the fallback's record and counts in LastFailedCount), and
// while its operand runs a fallback for it, whatever failure its status
// records since. Meanwhile no other node that is up starts that revision, or
// retries it from transition (a node already down may); the node in
// fallback retries it first, handed the start of the pass by a node that
// waits for it. A newer revision supersedes the fallback. The decided
// fallback is the one way, opt-in and recorded, in which the engine moves a
// node's operand down; a node's current revision goes down only through a
// fallback the startup monitor made, which the status records.
//
// # Holds
//
// Whatever keeps a node from starting is a hold, a converge.Hold: a reason
// (one of HoldReasons), the node it concerns ("" for the whole rollout) and
// a message with no duration in it. Decision.Holds has them all, sorted;
// Status.Holds persists the first converge.MaxHolds, so that hosts, metrics
// and tools read why a rollout waits without parsing a message; Progressing
// says every one at once. A hold holds the rollout (Progressing
// RolloutHeld, Status.HeldSince, and Degraded once HeldSince is older than
// Policy.HoldDegradedAfter), except a pause (HoldPaused), a soak
// (HoldSoaking, Policy.MinReadyDuration) and an installer that has not
// started (HoldInstallerPending) alone, which are waits; a soak beside or
// after another hold holds too, until a node moves; a pending installer
// turns Degraded on its own once ordered HoldDegradedAfter ago (its message
// says when it was ordered). No condition
// message holds a duration either: a sync in which only the clock moved,
// and no deadline passed, writes nothing. Nodes installing at once up to
// MaxUnavailable are no hold: the rollout moves.
//
// # Gate
//
// With Config.Gate, Controller.Sync asks the host before the decision takes
// a node down: before each start, and before the next installer of a node
// in transition that is up. It asks about one Disruption at a time, naming
// the nodes the rollout counts down, the starts it admitted before included,
// so that a quorum check (an etcd member's) sees what goes down with the
// node. A denial or an error holds the node (HoldGateDenied; fail safe). The
// pure function never starts a node the gate has not admitted: the answers
// are Input.Admissions.
//
// # Bounds
//
// A status can always be written: persisted errors are bounded
// (MaxFailedErrors of MaxErrorLength bytes, older long ones trimmed on the
// next sync), condition messages name at most 20 nodes, or holds of one
// reason, per list and stay within the API's 32768 bytes, and event
// messages within MaxEventMessageLength. A persisted time in the future (a
// clock that stepped back) is moved to now, so no wait is ever longer than
// the timeout or backoff it comes from.
package rollout
