package conditions

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// t0 is the start of every timeline in this package's tests.
var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func cond(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

func at(c metav1.Condition, ltt time.Time) metav1.Condition {
	c.LastTransitionTime = metav1.NewTime(ltt)
	return c
}

func types(conds []metav1.Condition) []string {
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, c.Type)
	}
	return out
}

const (
	True    = metav1.ConditionTrue
	False   = metav1.ConditionFalse
	Unknown = metav1.ConditionUnknown
)
