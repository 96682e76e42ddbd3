package converge

// The types of an Event, as core/v1 names them.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event is a Kubernetes event an engine's decision asks the host to emit
// about the object the engine works for. Every engine returns this one shape
// in its Result; package kube records it through client-go's recorders.
type Event struct {
	// Type is EventTypeNormal or EventTypeWarning.
	Type string `json:"type"`
	// Reason is a CamelCase reason, in the wording of the controller the
	// engine learnt from where it has one.
	Reason string `json:"reason"`
	// Message is the human-readable text; it names the node, add-on or
	// manifest it is about.
	Message string `json:"message"`
}
