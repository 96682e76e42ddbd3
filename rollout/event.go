package rollout

// Event types, as in corev1.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event reasons a plan emits.
const (
	// EventNodeTargetRevisionChanged: a node starts installing a revision, or jumps to a newer one.
	EventNodeTargetRevisionChanged = "NodeTargetRevisionChanged"
	// EventNodeCurrentRevisionChanged: a node's operand is ready at its target revision.
	EventNodeCurrentRevisionChanged = "NodeCurrentRevisionChanged"
	// EventInstallerPodFailed: an installer failed, was OOM killed or timed out.
	EventInstallerPodFailed = "InstallerPodFailed"
	// EventOperandFailed: the operand failed after its installer succeeded.
	EventOperandFailed = "OperandFailed"
	// EventInstallerRetriesExhausted: a node gave up retrying its target revision.
	EventInstallerRetriesExhausted = "InstallerRetriesExhausted"
)

// Event is something the host should record (the examples use client-go's
// record.EventRecorder). Events are part of a plan: the engine never emits
// them itself.
type Event struct {
	// Type is EventTypeNormal or EventTypeWarning.
	Type string `json:"type"`
	// Reason is one of the Event* reasons.
	Reason string `json:"reason"`
	// Node is the node the event is about.
	Node string `json:"node,omitempty"`
	// Message is the human-readable text.
	Message string `json:"message"`
}
