package rollout

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FailureReason says which part of an install failed on a node.
type FailureReason string

const (
	// FailureInstallerFailed means the installer pod failed, was OOM killed or timed out.
	FailureInstallerFailed FailureReason = "InstallerFailed"
	// FailureOperandFailed means the installer succeeded but the operand pod failed.
	FailureOperandFailed FailureReason = "OperandFailed"
)

// NodeStatus is the persisted rollout state of one node.
//
// A node is in transition while TargetRevision is non-zero. The failure
// record (LastFailed*) survives a superseding revision and a later success so
// that the history stays debuggable; it only counts as failing while it is
// about the revision the node still targets or has not reached.
type NodeStatus struct {
	// NodeName is the name of the node.
	NodeName string `json:"nodeName"`
	// CurrentRevision is the revision the node's operand runs successfully (0 = none).
	CurrentRevision int32 `json:"currentRevision,omitempty"`
	// TargetRevision is the revision being installed (0 = none).
	TargetRevision int32 `json:"targetRevision,omitempty"`
	// LastFailedRevision is the revision of the last failed install (0 = none).
	LastFailedRevision int32 `json:"lastFailedRevision,omitempty"`
	// LastFailedTime is when the last failure was recorded, truncated to seconds.
	LastFailedTime *metav1.Time `json:"lastFailedTime,omitempty"`
	// LastFailedCount counts the consecutive failures of LastFailedRevision.
	LastFailedCount int32 `json:"lastFailedCount,omitempty"`
	// LastFailedReason says which part of the install failed.
	LastFailedReason FailureReason `json:"lastFailedReason,omitempty"`
	// LastFailedErrors are the messages of the last failure.
	LastFailedErrors []string `json:"lastFailedErrors,omitempty"`
}

// Status is the persisted state of a rollout. Everything the engine needs to
// continue after a restart lives here.
type Status struct {
	// LatestAvailableRevision is the revision every node should reach. The
	// host (whatever creates revisions) sets it.
	LatestAvailableRevision int32 `json:"latestAvailableRevision,omitempty"`
	// NodeStatuses holds one entry per node, sorted by name once the engine wrote them.
	NodeStatuses []NodeStatus `json:"nodeStatuses,omitempty"`
	// Conditions are Available, Progressing and Degraded.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// InTransition reports whether the node is moving to a target revision.
func (n NodeStatus) InTransition() bool { return n.TargetRevision != 0 }

// Failing reports whether the node's last failure is still in its way: the
// failed revision is the one it targets, or it targets nothing and has not
// reached the failed revision.
func (n NodeStatus) Failing() bool {
	if n.LastFailedRevision == 0 {
		return false
	}
	if n.TargetRevision != 0 {
		return n.LastFailedRevision == n.TargetRevision
	}
	return n.LastFailedRevision > n.CurrentRevision
}

// DeepCopyInto copies n into out.
func (n *NodeStatus) DeepCopyInto(out *NodeStatus) {
	*out = *n
	if n.LastFailedTime != nil {
		t := *n.LastFailedTime
		out.LastFailedTime = &t
	}
	if n.LastFailedErrors != nil {
		out.LastFailedErrors = append([]string(nil), n.LastFailedErrors...)
	}
}

// DeepCopy returns a copy of n that shares no memory with it.
func (n *NodeStatus) DeepCopy() *NodeStatus {
	if n == nil {
		return nil
	}
	out := new(NodeStatus)
	n.DeepCopyInto(out)
	return out
}

// DeepCopyInto copies s into out.
func (s *Status) DeepCopyInto(out *Status) {
	*out = *s
	if s.NodeStatuses != nil {
		out.NodeStatuses = make([]NodeStatus, len(s.NodeStatuses))
		for i := range s.NodeStatuses {
			s.NodeStatuses[i].DeepCopyInto(&out.NodeStatuses[i])
		}
	}
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		for i := range s.Conditions {
			s.Conditions[i].DeepCopyInto(&out.Conditions[i])
		}
	}
}

// DeepCopy returns a copy of s that shares no memory with it.
func (s *Status) DeepCopy() *Status {
	if s == nil {
		return nil
	}
	out := new(Status)
	s.DeepCopyInto(out)
	return out
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

// Validate reports bad input wrapped in ErrInvalid: an empty or duplicate node
// name, a negative revision or count, a target not above the node's current
// revision or above the latest revision, or an unknown failure reason.
func (s *Status) Validate() error {
	if s.LatestAvailableRevision < 0 {
		return invalidf("latest available revision %d is negative", s.LatestAvailableRevision)
	}
	seen := make(map[string]struct{}, len(s.NodeStatuses))
	for _, n := range s.NodeStatuses {
		if n.NodeName == "" {
			return invalidf("node status with an empty name")
		}
		if _, dup := seen[n.NodeName]; dup {
			return invalidf("duplicate node %q", n.NodeName)
		}
		seen[n.NodeName] = struct{}{}
		if n.CurrentRevision < 0 || n.TargetRevision < 0 || n.LastFailedRevision < 0 || n.LastFailedCount < 0 {
			return invalidf("node %q has a negative revision or failure count", n.NodeName)
		}
		if n.TargetRevision != 0 && n.TargetRevision <= n.CurrentRevision {
			return invalidf("node %q targets revision %d, not above its current revision %d",
				n.NodeName, n.TargetRevision, n.CurrentRevision)
		}
		if n.TargetRevision > s.LatestAvailableRevision {
			return invalidf("node %q targets revision %d above the latest available revision %d",
				n.NodeName, n.TargetRevision, s.LatestAvailableRevision)
		}
		switch n.LastFailedReason {
		case "", FailureInstallerFailed, FailureOperandFailed:
		default:
			return invalidf("node %q has unknown failure reason %q", n.NodeName, n.LastFailedReason)
		}
	}
	return nil
}
