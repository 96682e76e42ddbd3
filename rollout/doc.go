// Package rollout moves every node of a per-node component to the latest revision, never more nodes down than allowed.
//
// It is library-go's static-pod installer controller as a pure decision,
// Decide(Input) (Decision, error), and a thin shell, Controller, that
// observes the host, decides, writes the decision's status, acts on it and
// writes the final status. What runs on the node is the truth: the engine
// decides from what the host observed of each node's operand and installer,
// and the status records it.
//
// # What counts as unavailable
//
// A node is unavailable while it is unreachable, an installer of it may run
// (one ordered and not seen finished, or one the engine decided must go and
// the host has not confirmed gone), its operand is not ready or missing, or
// its operand runs below its current revision. Taking a node down that is
// up (its operand ready) needs the budget: fewer than MaxUnavailable nodes
// unavailable besides it. A node already down may be started within the
// budget of nodes installing at once: it takes nothing more down. A node in
// transition between attempts (backing off after a failure) whose operand is
// up is up: its next installer needs the budget as a start does.
//
// # Identity, and what runs
//
// A node is its UID: one observed with another UID than its status records
// is a new machine under the same name. It starts afresh at the revision its
// own operand runs; nothing of its predecessor's installers or failures
// counts as its history, and its predecessor's installer is deleted before
// its own, which may have the same name, is created. A node that joins
// starts at the revision its operand runs, too.
//
// Every installer of a node is the one its current decision wants, or is
// recorded in Status.InstallersToDelete and deleted, whatever its phase:
// an installer still pending when its node's operand became ready on its
// own, one superseded by a newer revision, one that timed out, failed or
// finished. A node whose operand runs ready at or above its target is done.
// An operand that is missing, or that runs below the node's current
// revision, is recorded (OperandMissing, RegressedRevision), counts against
// the budget, is explained in Degraded, and the node installs its current
// revision again. No node is started below the revision its operand runs.
//
// # Holds
//
// Whatever holds back the start of a node is explained in Progressing at
// once (RolloutHeld) and in Degraded once Status.HeldSince is older than
// Policy.HoldDegradedAfter: nodes unavailable past MaxUnavailable,
// unreachable nodes that need a revision (every node at once included), the
// gate, a failure or a fallback on another node, a retry's backoff, an
// installer not yet deleted; and operands soaking (MinReadyDuration) beside
// or after any of these, until a node moves (a soak alone is a wait, not a
// hold). No condition message holds a duration: a sync
// in which only the clock moved, and no deadline passed, writes nothing.
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
// Policy.FallbackBackoff (library-go's 10 min · 2^n, at most 2 h), not the
// installer backoff (and, after a failed install below that revision, the
// installer backoff too). A node is in fallback from a revision while its
// status records the fallback and it has not reached the revision (also
// while it installs a revision below it: its last good revision again, or
// one its leader runs; a failure of such an install keeps the fallback's
// record and counts in LastFailedCount), and while its operand runs a
// fallback for it, whatever failure its status records since. Meanwhile no
// other node that
// is up starts that revision, or retries it from transition, which matters
// with MaxUnavailable above 1 (a node already down may: it has nothing to
// lose); the node in fallback retries it first, handed the start of the pass
// by a node that waits for it. A newer revision supersedes the fallback. The decided
// fallback is the one way, opt-in and recorded, in which the engine moves a
// node's operand down; a node's current revision goes down only through a
// fallback the startup monitor made, which the status records.
//
// # Gate
//
// With Config.Gate, Controller.Sync asks the host before the decision takes
// a node down: before each start, and before the next installer of a node
// in transition that is up. It asks about one Disruption at a time, naming
// the nodes the rollout counts down, the starts it admitted before included,
// so that a quorum check (an etcd member's) sees what goes down with the
// node. A denial or an error holds the node (fail safe), explained as every
// hold is. The pure function never starts a node the gate has not admitted:
// the answers are Input.Admissions.
package rollout
