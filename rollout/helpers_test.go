package rollout

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// node builds a node status: name, current, target.
func node(name string, current, target int32) NodeStatus {
	return NodeStatus{NodeName: name, CurrentRevision: current, TargetRevision: target}
}

// failed adds a failure record to n.
func failed(n NodeStatus, rev, count int32, reason string, at time.Time, errs ...string) NodeStatus {
	mt := metav1.NewTime(at)
	n.LastFailedRevision, n.LastFailedCount, n.LastFailedReason, n.LastFailedTime = rev, count, reason, &mt
	n.LastFailedErrors = errs
	return n
}

func ready(rev int32) NodeObservation {
	return NodeObservation{Operand: OperandState{Phase: OperandReady, Revision: rev}}
}

func pending(rev int32) NodeObservation {
	return NodeObservation{Operand: OperandState{Phase: OperandPending, Revision: rev}}
}

func withInstaller(o NodeObservation, phase InstallerPhase) NodeObservation {
	o.Installer.Phase = phase
	return o
}

// heldBy is what a table compares of a hold: its reason and the node it
// concerns.
type heldBy struct{ Reason, Node string }

// holdsOf returns the reason and node of each hold, in order.
func holdsOf(holds []converge.Hold) []heldBy {
	var out []heldBy
	for _, h := range holds {
		out = append(out, heldBy{h.Reason, h.Object})
	}
	return out
}
