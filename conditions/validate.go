package conditions

import (
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits and formats from the metav1.Condition API validation, so that a
// condition this package accepts is one the API server accepts too.
const (
	maxTypeLength    = 316
	maxReasonLength  = 1024
	maxMessageLength = 32768
)

var (
	typePattern   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`)
	reasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
)

// Validate reports whether c is a condition the API server would accept and
// whose meaning is clear: a well-formed type, a status of True, False or
// Unknown, a well-formed reason (required when the status is False), a
// message within the API limit and a non-negative observed generation.
// The returned error wraps ErrInvalid.
func Validate(c metav1.Condition) error {
	switch {
	case c.Type == "":
		return invalid("", "type", "must not be empty")
	case len(c.Type) > maxTypeLength:
		return invalid(c.Type, "type", "longer than %d characters", maxTypeLength)
	case !typePattern.MatchString(c.Type):
		return invalid(c.Type, "type", "must be a qualified name such as Ready or example.com/Ready")
	}
	switch c.Status {
	case metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown:
	default:
		return invalid(c.Type, "status", "%q is not True, False or Unknown", c.Status)
	}
	switch {
	case c.Reason == "" && c.Status == metav1.ConditionFalse:
		return invalid(c.Type, "reason", "must not be empty when the status is False")
	case len(c.Reason) > maxReasonLength:
		return invalid(c.Type, "reason", "longer than %d characters", maxReasonLength)
	case c.Reason != "" && !reasonPattern.MatchString(c.Reason):
		return invalid(c.Type, "reason", "%q must be CamelCase: a letter, then letters, digits, '_', ',' or ':'", c.Reason)
	case len(c.Message) > maxMessageLength:
		return invalid(c.Type, "message", "longer than %d characters", maxMessageLength)
	case c.ObservedGeneration < 0:
		return invalid(c.Type, "observedGeneration", "%d is negative", c.ObservedGeneration)
	}
	return nil
}
