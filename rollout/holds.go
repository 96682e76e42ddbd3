package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

// The reasons of the holds a decision writes (converge.Hold.Reason): what
// keeps a node from starting, or, for HoldPaused, the whole rollout. The
// Object of a hold is the node it concerns. HoldReasons lists them all.
const (
	// HoldNodeUnavailable: the node is unavailable (see
	// Policy.MaxUnavailable) and not simply installing, and with it
	// MaxUnavailable is reached: a node that is up waits.
	HoldNodeUnavailable = "NodeUnavailable"
	// HoldNodeUnreachable: the node is unreachable and needs a revision, or
	// is in transition: it cannot move until it is back or dropped from the
	// node list.
	HoldNodeUnreachable = "NodeUnreachable"
	// HoldRevisionFailing: the node waits, since another reachable node is
	// failing the revision it would start.
	HoldRevisionFailing = "RevisionFailing"
	// HoldFallenBack: the node waits, since another node fell back from the
	// revision it would start or retry; the node in fallback retries it
	// first.
	HoldFallenBack = "FallenBack"
	// HoldRetriesExhausted: the node failed its revision more often than
	// Policy.MaxInstallerRetries allows and gave up.
	HoldRetriesExhausted = "RetriesExhausted"
	// HoldBackoff: the node retries the revision it failed once its backoff
	// has passed (NodeStatus.RetryTime).
	HoldBackoff = "Backoff"
	// HoldGateDenied: the gate (Config.Gate) did not admit taking the node
	// down.
	HoldGateDenied = "GateDenied"
	// HoldOldInstaller: the node gets no new installer until an older one,
	// recorded in Status.InstallersToDelete, is confirmed gone.
	HoldOldInstaller = "OldInstaller"
	// HoldPaused: Policy.Paused keeps the rollout, which has nodes to move,
	// from starting any (Object ""). A pause alone is a wait: it neither
	// sets Status.HeldSince nor turns Degraded.
	HoldPaused = converge.HoldPaused
	// HoldSoaking: the node starts once every ready operand was ready for
	// Policy.MinReadyDuration. A soak alone is a wait; beside another hold,
	// or after one (Status.HeldSince set), it holds too, until a node moves.
	HoldSoaking = "Soaking"
	// HoldInstallerPending: the node's installer was ordered and has not
	// started (pending, or never seen: a cordoned node, an image that cannot
	// be pulled, a create that never lands); the message says when it was
	// ordered (RFC 3339). It is shown in Progressing at once and turns
	// Degraded once ordered longer than Policy.HoldDegradedAfter ago; it
	// neither sets Status.HeldSince nor holds other nodes by itself
	// (MaxUnavailable does, see HoldNodeUnavailable).
	HoldInstallerPending = "InstallerPending"
)

// HoldReasons returns every reason a rollout's hold can have, sorted: the
// closed list a host, a metric or a tool can enumerate.
func HoldReasons() []string {
	return []string{HoldBackoff, HoldFallenBack, HoldGateDenied, HoldInstallerPending, HoldNodeUnavailable, HoldNodeUnreachable,
		HoldOldInstaller, HoldPaused, HoldRetriesExhausted, HoldRevisionFailing, HoldSoaking}
}

// hold returns the hold of reason on node, with its message.
func hold(reason, node, format string, args ...any) converge.Hold {
	return converge.Hold{Reason: reason, Object: node, Message: fmt.Sprintf(format, args...)}
}

// The holds, each in the one wording of its reason.

func unavailableHold(node, why string, maxUnavailable int) converge.Hold {
	return hold(HoldNodeUnavailable, node, "%s is unavailable (%s) and maxUnavailable %d is reached: "+
		"raise maxUnavailable, or drop a node that is gone for good from the node list", node, why, maxUnavailable)
}

func unreachableHold(node string) converge.Hold {
	return hold(HoldNodeUnreachable, node, "%s is unreachable and cannot move: drop a node that is gone for good from the node list", node)
}

func failingHold(rev int32, failing, node string) converge.Hold {
	return hold(HoldRevisionFailing, node, "revision %d is failing on %s: %s waits", rev, failing, node)
}

func fallenBackHold(fellBack string, rev int32, node string) converge.Hold {
	return hold(HoldFallenBack, node, "%s fell back from revision %d: %s waits", fellBack, rev, node)
}

func exhaustedHold(node string, rev, failed int32) converge.Hold {
	return hold(HoldRetriesExhausted, node, "%s gave up on revision %d after %s", node, rev, failures(failed))
}

func backoffHold(node string, rev int32) converge.Hold {
	return hold(HoldBackoff, node, "%s retries revision %d after its backoff", node, rev)
}

func gateHold(node, answer string) converge.Hold {
	return hold(HoldGateDenied, node, "the gate holds %s: %s", node, answer)
}

func oldInstallerHold(node string) converge.Hold {
	return hold(HoldOldInstaller, node, "%s waits for its old installer to be deleted", node)
}

func pausedHold() converge.Hold {
	return converge.PausedHold("no node is started")
}

func soakingHold(node string, rev int32) converge.Hold {
	return hold(HoldSoaking, node, "operands soaking before %s starts revision %d", node, rev)
}

// pendingHold: the installer of node, ordered at ordered, has not started.
func pendingHold(node, installer string, ordered time.Time) converge.Hold {
	return hold(HoldInstallerPending, node, "%s: installer %s, ordered at %s, has not started",
		node, installer, ordered.UTC().Format(time.RFC3339))
}

// stalls reports whether a hold of reason holds the rollout by itself:
// every hold but a pause, a soak or a pending installer, which are waits
// (a pending installer turns Degraded on its own, see pendingDegraded).
func stalls(reason string) bool {
	return reason != HoldPaused && reason != HoldSoaking && reason != HoldInstallerPending
}

// held reports whether holds hold the rollout, given whether the status
// already records a hold (heldSince): a hold that stalls it, or a soak
// after one.
func held(holds []converge.Hold, heldSince bool) bool {
	for _, h := range holds {
		if stalls(h.Reason) || (heldSince && h.Reason == HoldSoaking) {
			return true
		}
	}
	return false
}

// holding reports whether h, one of holds, holds the rollout (sets
// Status.HeldSince, makes Progressing RolloutHeld and Degraded once older
// than Policy.HoldDegradedAfter) rather than makes it wait: a hold that
// stalls it, or a soak beside one or after one (heldSince: the status
// records a hold).
func holding(h converge.Hold, holds []converge.Hold, heldSince bool) bool {
	if h.Reason == HoldSoaking {
		return heldSince || held(holds, false)
	}
	return stalls(h.Reason)
}

// updateHeldSince keeps Status.HeldSince: set when a hold starts, cleared
// when it ends, moved to now if it lies in the future. It returns how long
// until the hold turns Degraded.
func updateHeldSince(holds []converge.Hold, st *Status, p Policy, now time.Time) time.Duration {
	if !held(holds, st.HeldSince != nil) {
		st.HeldSince = nil
		return 0
	}
	if st.HeldSince == nil || st.HeldSince.After(now) {
		st.HeldSince = metaTime(now)
	}
	if left := st.HeldSince.Add(p.holdDegradedAfter()).Sub(now); left > 0 {
		return left
	}
	return 0
}

// holdsText renders the holds that keep selects for a condition message:
// their messages joined with "; ", at most maxListedNodes of one reason,
// then how many more. holds are sorted, so a reason's holds are together.
func holdsText(holds []converge.Hold, keep func(converge.Hold) bool) string {
	var b strings.Builder
	listed, more := 0, 0
	flush := func() {
		if more > 0 {
			b.WriteString(" … and " + strconv.Itoa(more) + " more")
		}
		listed, more = 0, 0
	}
	for i, h := range holds {
		if !keep(h) {
			continue
		}
		if i > 0 && holds[i-1].Reason != h.Reason {
			flush()
		}
		if listed == maxListedNodes {
			more++
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(h.Message)
		listed++
	}
	flush()
	return b.String()
}

// timeEqual compares two optional times.
func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}
