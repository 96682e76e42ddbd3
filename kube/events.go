package kube

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/internal/input"
)

// Limits of an events/v1 Event that the API server enforces.
const (
	maxEventNote   = 1024
	maxEventReason = 128
)

// RecordEvents records an engine's events (every engine returns
// converge.Event) about regarding (the object the
// engine works for: the custom resource, the ConfigMap, the ClusterOperator)
// through client-go's events/v1 recorder, with action as the events' action
// (e.g. "Rollout", "Reconcile"). The message is a note, never a format
// string; a reason or note over the events/v1 limits (128 and 1,024 bytes) is
// cut so the API server accepts the event.
//
// RBAC: create and patch on events.k8s.io events in regarding's namespace.
func RecordEvents(rec events.EventRecorder, regarding runtime.Object, action string, evs []converge.Event) {
	if input.IsNil(rec) {
		return
	}
	for _, e := range evs {
		ev := eventForAPI(e)
		rec.Eventf(regarding, nil, ev.Type, ev.Reason, action, "%s", ev.Message)
	}
}

// RecordLegacyEvents records an engine's events about regarding through
// client-go's core/v1 record.EventRecorder (the recorder older hosts and
// controller-runtime's manager hand out), with the same limits as
// RecordEvents.
//
// RBAC: create and patch on core events in regarding's namespace.
func RecordLegacyEvents(rec record.EventRecorder, regarding runtime.Object, evs []converge.Event) {
	if input.IsNil(rec) {
		return
	}
	for _, e := range evs {
		ev := eventForAPI(e)
		rec.Event(regarding, ev.Type, ev.Reason, ev.Message)
	}
}

// eventForAPI bounds an event to what the API server accepts: a valid
// reason of at most 128 bytes ("Unknown" when none is left), a note of at
// most 1,024 bytes, and type Normal unless it is Warning.
func eventForAPI(e converge.Event) converge.Event {
	if e.Type != "Warning" {
		e.Type = "Normal"
	}
	e.Reason = conditions.SanitizeReason(e.Reason)
	if len(e.Reason) > maxEventReason {
		e.Reason = e.Reason[:maxEventReason]
	}
	if e.Reason == "" {
		e.Reason = "Unknown"
	}
	e.Message = conditions.TruncateMessage(e.Message, maxEventNote)
	return e
}
