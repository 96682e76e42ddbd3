package conditions

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known condition types. Their polarity is in DefaultPolarities.
const (
	// TypeAvailable is True when the component serves its purpose.
	TypeAvailable = "Available"
	// TypeReady is True when the object is fully reconciled and healthy.
	TypeReady = "Ready"
	// TypeProgressing is True while the object moves to a new desired state.
	TypeProgressing = "Progressing"
	// TypeDegraded is True when the object works with reduced quality of service.
	TypeDegraded = "Degraded"
	// TypeReconciling is True while the controller works towards the desired
	// state (kstatus, abnormal-true).
	TypeReconciling = "Reconciling"
	// TypeStalled is True when the controller cannot make progress without
	// outside help (kstatus, abnormal-true).
	TypeStalled = "Stalled"
	// TypeFailing is True when the object's last attempt failed.
	TypeFailing = "Failing"
)

// Well-known reasons.
const (
	// ReasonAsExpected is the reason of a condition in its normal state, and
	// the default for a True or Unknown condition set without a reason.
	ReasonAsExpected = "AsExpected"
	// ReasonNotYetReported is the reason Summary gives a type that is missing
	// from the list.
	ReasonNotYetReported = "NotYetReported"
)

// Sort orders conditions deterministically, in place: Available, Ready,
// Progressing, Degraded, Reconciling and Stalled first, in that order, then
// every other type alphabetically. Conditions of the same type keep their
// relative order. Set, Remove and the kstatus helpers sort after every change.
func Sort(conds []metav1.Condition) {
	slices.SortStableFunc(conds, func(a, b metav1.Condition) int {
		ra, rb := rank(a.Type), rank(b.Type)
		if ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Type, b.Type)
	})
}

// rank is the place of the types Sort puts first; every other type ranks 6.
func rank(condType string) int {
	switch condType {
	case TypeAvailable:
		return 0
	case TypeReady:
		return 1
	case TypeProgressing:
		return 2
	case TypeDegraded:
		return 3
	case TypeReconciling:
		return 4
	case TypeStalled:
		return 5
	}
	return 6
}
