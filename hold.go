package converge

import (
	"cmp"
	"slices"
)

// MaxHolds bounds the holds a status persists: a rollout of thousands of
// nodes held on each of them persists the first MaxHolds, in order.
const MaxHolds = 16

// Hold is what keeps an engine from moving, as a value: why (Reason, one
// of the engine's exported hold reasons), what it concerns (Object: a
// node's name for a rollout, a manifest or component for a payload; ""
// when it concerns the whole), and a Message that names them without a
// duration, so that a status holding it changes only when the hold does.
// Every engine persists its holds in its Status (SortHolds) and renders its
// conditions from them: hosts, metrics and tools read them instead of
// parsing a message.
// +kubebuilder:object:generate=true
type Hold struct {
	// Reason is a CamelCase reason, one of the engine's exported hold
	// reasons.
	Reason string `json:"reason"`
	// Object names the node or object the hold concerns ("" for the whole
	// rollout, add-on or payload).
	// +optional
	Object string `json:"object,omitempty"`
	// Message says why, in a sentence with no duration in it.
	Message string `json:"message"`
}

// CompareHolds orders holds by reason, then object, then message.
func CompareHolds(a, b Hold) int {
	return cmp.Or(cmp.Compare(a.Reason, b.Reason), cmp.Compare(a.Object, b.Object), cmp.Compare(a.Message, b.Message))
}

// SortHolds returns holds as a status persists them: sorted
// (CompareHolds), each once, at most MaxHolds, nil when there is none. It
// sorts holds in place.
func SortHolds(holds []Hold) []Hold {
	if len(holds) == 0 {
		return nil
	}
	slices.SortFunc(holds, CompareHolds)
	holds = slices.Compact(holds)
	return holds[:min(len(holds), MaxHolds):min(len(holds), MaxHolds)]
}

// HoldPaused is the reason of the hold every engine writes while its
// Policy.Paused keeps it from starting work (Object ""): a rollout starts
// no node, an add-on no install or upgrade, a payload no update. Work in
// flight finishes. A pause is a wait, not a fault: it never turns Degraded.
const HoldPaused = "Paused"

// PausedHold returns the hold of an engine whose Policy.Paused is set; what
// says what the pause keeps from starting ("no node is started").
func PausedHold(what string) Hold {
	return Hold{Reason: HoldPaused, Message: "paused: " + what}
}
