package rollout

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
)

// NodeStatus is the persisted rollout state of one node.
//
// A node is in transition while TargetRevision is non-zero. The failure
// record (LastFailed*) survives a superseding revision and a later success so
// that the history stays debuggable; it only counts as failing while it is
// about the revision the node still targets or has not reached.
// +kubebuilder:object:generate=true
type NodeStatus struct {
	// NodeName is the name of the node.
	NodeName string `json:"nodeName"`
	// NodeUID is the UID of the node object the status is about ("" while
	// the host reports none). A node observed with another UID is a new
	// machine: its status starts afresh.
	// +optional
	NodeUID string `json:"nodeUID,omitempty"`
	// CurrentRevision is the revision the node's operand last ran ready
	// (0 = none); a node that joins starts at the revision its operand runs.
	// It goes down only through a fallback the startup monitor on the node
	// made, which the status records (LastFailedReason
	// OperandFailedFallback).
	// +optional
	CurrentRevision int32 `json:"currentRevision,omitempty"`
	// TargetRevision is the revision being installed (0 = none). It equals
	// CurrentRevision while the current revision is installed again: the
	// operand regressed or went missing, or the node falls back to it.
	// +optional
	TargetRevision int32 `json:"targetRevision,omitempty"`
	// InstallerOrderedTime is when the engine decided to create the installer
	// of the current attempt (nil while none is ordered). An ordered
	// installer that was seen and is missing before it finished has
	// disappeared, which is a failed attempt; InstallerPendingTimeout counts
	// from here.
	// +optional
	InstallerOrderedTime *metav1.Time `json:"installerOrderedTime,omitempty"`
	// InstallerNotSeen is true while the installer of the current attempt
	// is ordered and no observation has shown it yet: the process may have
	// died before creating it, or the host's pod cache may lag. Such an
	// installer that is missing is created again under the same name, not
	// counted as a failed attempt. The zero value means "seen", so a status
	// written without the field reads as it did before.
	// +optional
	InstallerNotSeen bool `json:"installerNotSeen,omitempty"`
	// InstalledTime is when the current attempt's installer was seen to
	// succeed; OperandReadyTimeout counts from here.
	// +optional
	InstalledTime *metav1.Time `json:"installedTime,omitempty"`
	// RegressedRevision is the revision below CurrentRevision the node's
	// operand was seen running (0 = none). The node is installed again.
	// +optional
	RegressedRevision int32 `json:"regressedRevision,omitempty"`
	// OperandMissing is true once the node's operand was seen missing while
	// the node was at CurrentRevision. The node is installed again.
	// +optional
	OperandMissing bool `json:"operandMissing,omitempty"`
	// LastFailedRevision is the revision of the last failed install (0 = none).
	// +optional
	LastFailedRevision int32 `json:"lastFailedRevision,omitempty"`
	// LastFailedTime is when the last failure was recorded, truncated to seconds.
	// +optional
	LastFailedTime *metav1.Time `json:"lastFailedTime,omitempty"`
	// RetryTime is the earliest time the node retries LastFailedRevision:
	// LastFailedTime plus the installer backoff, rounded up to seconds.
	// +optional
	RetryTime *metav1.Time `json:"retryTime,omitempty"`
	// LastFailedCount counts the consecutive failed installs of
	// LastFailedRevision (fallbacks not included); it saturates at the
	// largest int32.
	// +optional
	LastFailedCount int32 `json:"lastFailedCount,omitempty"`
	// LastFallbackCount counts the fallbacks from LastFailedRevision to the
	// node's last good revision; it saturates at the largest int32.
	// +optional
	LastFallbackCount int32 `json:"lastFallbackCount,omitempty"`
	// LastFailedReason is the reason of the last failure:
	// ReasonInstallerPodFailed, ReasonInstallerPodDisappeared,
	// ReasonInstallerCreateFailed, ReasonOperandFailed,
	// ReasonOperandNotReady or ReasonOperandFailedFallback.
	// +optional
	LastFailedReason string `json:"lastFailedReason,omitempty"`
	// LastFailedErrors are the messages of the last failure, at most
	// MaxFailedErrors of at most MaxErrorLength bytes each.
	// +optional
	LastFailedErrors []string `json:"lastFailedErrors,omitempty"`
}

// Status is the persisted state of a rollout. Everything the engine needs to
// continue after a restart lives here.
// +kubebuilder:object:generate=true
type Status struct {
	// LatestAvailableRevision is the revision every node should reach. The
	// host (whatever creates revisions) sets it. The engine never moves a
	// node down: a node already above it counts as done.
	// +optional
	LatestAvailableRevision int32 `json:"latestAvailableRevision,omitempty"`
	// NodeStatuses holds one entry per node, sorted by name once the engine wrote them.
	// +listType=map
	// +listMapKey=nodeName
	// +optional
	NodeStatuses []NodeStatus `json:"nodeStatuses,omitempty"`
	// InstallersToDelete are installers the engine decided must go (timed
	// out, superseded, or of a node that left), kept until the host
	// confirms each is gone; a failed delete is retried on later syncs.
	// +listType=map
	// +listMapKey=name
	// +optional
	InstallersToDelete []Installer `json:"installersToDelete,omitempty"`
	// HeldSince is when a hold first held back the start of a node (nil
	// while nothing is held; a pause or a soak alone is a wait, see
	// HoldPaused and HoldSoaking); Degraded reports a hold older than
	// Policy.HoldDegradedAfter.
	// +optional
	HeldSince *metav1.Time `json:"heldSince,omitempty"`
	// Holds are what keeps nodes from starting, as Decision.Holds has them,
	// at most converge.MaxHolds (converge.SortHolds): each a reason (one of
	// HoldReasons), the node it concerns ("" for the whole rollout) and a
	// message with no duration in it. The engine writes them; a host, a
	// metric or a tool reads them.
	// +listType=atomic
	// +optional
	Holds []converge.Hold `json:"holds,omitempty"`
	// Conditions are Available, Progressing and Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ObservedGeneration is the generation of the resource whose policy
	// and revision this status has taken into account (Input.Generation,
	// kstatus's observedGeneration); it only goes forward.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// order records that the installer of the node's attempt is ordered at
// now and not seen yet.
func (n *NodeStatus) order(now time.Time) {
	n.InstallerOrderedTime, n.InstalledTime, n.InstallerNotSeen = metaTime(now), nil, true
}

// endAttempt forgets the installer of the node's attempt: none is ordered.
func (n *NodeStatus) endAttempt() {
	n.InstallerOrderedTime, n.InstalledTime, n.InstallerNotSeen = nil, nil, false
}

// InTransition reports whether the node is moving to a target revision.
func (n NodeStatus) InTransition() bool { return n.TargetRevision != 0 }

// Failing reports whether the node's last failure is still in its way: it
// targets a newer revision and that is the one it failed; or it targets
// nothing newer (no revision, or its current one again) and has not
// reached the failed revision, or installing its current revision again
// failed.
func (n NodeStatus) Failing() bool {
	switch {
	case n.LastFailedRevision == 0:
		return false
	case n.TargetRevision > n.CurrentRevision:
		return n.LastFailedRevision == n.TargetRevision
	case n.LastFailedRevision > n.CurrentRevision:
		return true
	}
	return n.LastFailedRevision == n.CurrentRevision && (n.TargetRevision != 0 || n.reinstall())
}

// reinstall reports whether the node's current revision must be installed
// again: its operand regressed below it or went missing.
func (n NodeStatus) reinstall() bool { return n.RegressedRevision != 0 || n.OperandMissing }

// fallenBack reports whether the node's status records it in fallback for
// a revision it has not reached: it retries that revision after the
// fallback backoff, and no other node starts it meanwhile (nor while the
// node's operand runs a fallback for it, whatever its status records since).
// A node in fallback that installs a revision below the one it fell back
// from (its last good revision again, or one its leader runs) is still in
// fallback: only reaching that revision, or a newer one, ends it.
func (n NodeStatus) fallenBack() bool {
	return n.LastFailedReason == ReasonOperandFailedFallback &&
		(n.Failing() || (n.InTransition() && n.TargetRevision < n.LastFailedRevision))
}

// Node returns the status of the named node.
func (s Status) Node(name string) (NodeStatus, bool) {
	for _, n := range s.NodeStatuses {
		if n.NodeName == name {
			return n, true
		}
	}
	return NodeStatus{}, false
}

// Converged reports whether every node runs the latest revision (or a newer
// one), none is in transition, none's operand regressed or went missing, and
// no installer waits to be deleted.
func (s Status) Converged() bool {
	if len(s.NodeStatuses) == 0 || len(s.InstallersToDelete) > 0 {
		return false
	}
	for _, n := range s.NodeStatuses {
		if n.InTransition() || n.reinstall() || n.CurrentRevision < s.LatestAvailableRevision {
			return false
		}
	}
	return true
}

// Validate reports bad input as an error matching converge.ErrInvalid: a nil status, an empty
// or duplicate node name, a negative revision or count, a target below the
// node's current revision, an unknown failure reason or a bad installer to
// delete. It is linear in the number of nodes and allocates nothing when
// the nodes are sorted by name (as the engine writes them).
func (s *Status) Validate() error {
	if s == nil {
		return input.Invalidf("rollout", "status", "nil status")
	}
	if s.LatestAvailableRevision < 0 {
		return input.Invalidf("rollout", "status", "latest available revision %d is negative", s.LatestAvailableRevision)
	}
	nodes := s.NodeStatuses
	if !sortedByName(nodes) {
		nodes = sortNodes(nodes)
	}
	for i := range nodes {
		n := &nodes[i]
		if n.NodeName == "" {
			return input.Invalidf("rollout", "status", "node status with an empty name")
		}
		if i > 0 && nodes[i-1].NodeName == n.NodeName {
			return input.Invalidf("rollout", "status", "duplicate node %q", n.NodeName)
		}
		if err := n.validate(); err != nil {
			return err
		}
	}
	for _, inst := range s.InstallersToDelete {
		if inst.Name == "" || inst.Node == "" || inst.Revision < 0 {
			return input.Invalidf("rollout", "status", "installer to delete %+v needs a name, a node and a revision that is not negative", inst)
		}
	}
	return nil
}

func (n NodeStatus) validate() error {
	if n.CurrentRevision < 0 || n.TargetRevision < 0 || n.LastFailedRevision < 0 || n.LastFailedCount < 0 ||
		n.LastFallbackCount < 0 || n.RegressedRevision < 0 {
		return input.Invalidf("rollout", "status", "node %q has a negative revision or failure count", n.NodeName)
	}
	if n.TargetRevision != 0 && n.TargetRevision < n.CurrentRevision {
		return input.Invalidf("rollout", "status", "node %q targets revision %d, below its current revision %d",
			n.NodeName, n.TargetRevision, n.CurrentRevision)
	}
	if n.LastFailedReason != "" && !isFailureReason(n.LastFailedReason) {
		return input.Invalidf("rollout", "status", "node %q has unknown failure reason %q", n.NodeName, n.LastFailedReason)
	}
	return nil
}

// sortedByName reports whether nodes are sorted by name, in one pass.
func sortedByName(nodes []NodeStatus) bool {
	for i := 1; i < len(nodes); i++ {
		if nodes[i-1].NodeName > nodes[i].NodeName {
			return false
		}
	}
	return true
}

// sortNodes returns a copy of nodes sorted by name; only unsorted input (a
// status the engine has not written yet) pays for it.
func sortNodes(nodes []NodeStatus) []NodeStatus {
	out := append([]NodeStatus(nil), nodes...)
	sortNodeStatuses(out)
	return out
}

func sortNodeStatuses(nodes []NodeStatus) {
	slices.SortFunc(nodes, func(a, b NodeStatus) int { return strings.Compare(a.NodeName, b.NodeName) })
}

// metaTime returns t truncated to seconds, as the API stores it.
func metaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.Truncate(time.Second))
	return &mt
}

// metaTimeCeil returns t rounded up to seconds, so that a wait read back
// from the API is never shorter than the one decided.
func metaTimeCeil(t time.Time) *metav1.Time {
	if r := t.Truncate(time.Second); !r.Equal(t) {
		t = r.Add(time.Second)
	}
	mt := metav1.NewTime(t)
	return &mt
}
