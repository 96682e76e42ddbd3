package conditions

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kstatus helpers keep Ready, Reconciling and Stalled consistent the way
// kstatus-based tools (Flux, kapp, kubectl wait, cli-utils) read them:
// Reconciling and Stalled are abnormal-true conditions, present and True only
// while abnormal and removed otherwise, and Ready tells the end state.
// Each helper checks all its input before it changes anything.

// SetReconciling records that the controller is working towards the desired
// state: Reconciling=True and Ready=Unknown with the same reason and message,
// and no Stalled. The reason must not be empty.
func SetReconciling(conds *[]metav1.Condition, reason, message string, now time.Time, opts ...Option) (bool, error) {
	return setKStatus(conds, TypeReconciling, TypeStalled, metav1.ConditionUnknown, reason, message, now, opts)
}

// SetStalled records that the controller cannot progress without outside
// help: Stalled=True and Ready=False with the same reason and message, and no
// Reconciling. The reason must not be empty.
func SetStalled(conds *[]metav1.Condition, reason, message string, now time.Time, opts ...Option) (bool, error) {
	return setKStatus(conds, TypeStalled, TypeReconciling, metav1.ConditionFalse, reason, message, now, opts)
}

// SetReady records that the object is reconciled: Ready=True (reason
// defaulting to ReasonAsExpected), and neither Reconciling nor Stalled.
func SetReady(conds *[]metav1.Condition, reason, message string, now time.Time, opts ...Option) (bool, error) {
	changed, err := Set(conds, metav1.Condition{Type: TypeReady, Status: metav1.ConditionTrue, Reason: reason, Message: message}, now, opts...)
	if err != nil {
		return false, err
	}
	if Remove(conds, TypeReconciling) {
		changed = true
	}
	if Remove(conds, TypeStalled) {
		changed = true
	}
	return changed, nil
}

func setKStatus(conds *[]metav1.Condition, abnormal, other string, ready metav1.ConditionStatus, reason, message string, now time.Time, opts []Option) (bool, error) {
	if reason == "" {
		return false, invalid(abnormal, "reason", "must not be empty")
	}
	want := []metav1.Condition{
		{Type: abnormal, Status: metav1.ConditionTrue, Reason: reason, Message: message},
		{Type: TypeReady, Status: ready, Reason: reason, Message: message},
	}
	for _, c := range want {
		if err := Validate(c); err != nil {
			return false, err
		}
	}
	if conds == nil {
		return false, invalid("", "conditions", "the list pointer is nil")
	}
	changed := false
	for _, c := range want {
		ch, err := Set(conds, c, now, opts...)
		if err != nil {
			return changed, err
		}
		changed = changed || ch
	}
	if Remove(conds, other) {
		changed = true
	}
	return changed, nil
}
