package payload

import "time"

// Event types, as in core/v1.
const (
	EventTypeNormal  = "Normal"
	EventTypeWarning = "Warning"
)

// Event is a Kubernetes event the decision asks the host to emit about the object the
// worker applies the payload of.
type Event struct {
	// Type is EventTypeNormal or EventTypeWarning.
	Type string `json:"type"`
	// Reason is a CamelCase reason (library-go/Flux/CVO wording where they have one).
	Reason string `json:"reason"`
	// Message is the human-readable text; it names the node/manifest/etc.
	Message string `json:"message"`
}

// Result is what one decision of the worker's loop asks of the host.
type Result struct {
	// RequeueAfter is when the worker looks again by itself, 0 when it applies at once
	// or waits for Update.
	RequeueAfter time.Duration
	// Events are the events to emit, in order.
	Events []Event
}
