package conditions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of the metav1.Condition API validation, so that a condition this
// package accepts is one the API server accepts too.
const (
	// MaxTypeLength is the longest condition type the API server accepts.
	MaxTypeLength = 316
	// MaxReasonLength is the longest reason the API server accepts.
	MaxReasonLength = 1024
	// MaxMessageLength is the longest message the API server accepts.
	MaxMessageLength = 32768
)

// Validate reports whether c is a condition the API server would accept and
// whose meaning is clear: a well-formed type (a qualified name such as Ready
// or example.com/Ready), a status of True, False or Unknown, a well-formed
// reason (CamelCase; required when the status is False), a message within
// MaxMessageLength and a non-negative observed generation. The returned
// error matches converge.ErrInvalid. It allocates nothing for a valid condition.
func Validate(c metav1.Condition) error {
	switch {
	case c.Type == "":
		return invalid("", "type", "must not be empty")
	case len(c.Type) > MaxTypeLength:
		return invalid(c.Type, "type", "longer than %d characters", MaxTypeLength)
	case !validType(c.Type):
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
	case len(c.Reason) > MaxReasonLength:
		return invalid(c.Type, "reason", "longer than %d characters", MaxReasonLength)
	case c.Reason != "" && !validReason(c.Reason):
		return invalid(c.Type, "reason", "%q must be CamelCase: a letter, then letters, digits, '_', ',' or ':'", c.Reason)
	case len(c.Message) > MaxMessageLength:
		return invalid(c.Type, "message", "longer than %d characters", MaxMessageLength)
	case c.ObservedGeneration < 0:
		return invalid(c.Type, "observedGeneration", "%d is negative", c.ObservedGeneration)
	}
	return nil
}

func isLetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }
func isDigit(b byte) bool  { return '0' <= b && b <= '9' }
func isAlnum(b byte) bool  { return isLetter(b) || isDigit(b) }
func isLowerAlnum(b byte) bool {
	return 'a' <= b && b <= 'z' || isDigit(b)
}

// validType matches the API's qualified name: an optional DNS subdomain and
// "/", then a name of letters, digits, '-', '_' and '.' that starts and ends
// with a letter or digit.
func validType(s string) bool {
	name := s
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			if !validSubdomain(s[:i]) {
				return false
			}
			name = s[i+1:]
			break
		}
	}
	if name == "" || !isAlnum(name[0]) || !isAlnum(name[len(name)-1]) {
		return false
	}
	for i := 1; i < len(name)-1; i++ {
		if b := name[i]; !isAlnum(b) && b != '-' && b != '_' && b != '.' {
			return false
		}
	}
	return true
}

// validSubdomain matches lower-case DNS labels separated by dots, each
// starting and ending with a letter or digit.
func validSubdomain(s string) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			if b := s[i]; !isLowerAlnum(b) && b != '-' {
				return false
			}
			continue
		}
		if i == start || !isLowerAlnum(s[start]) || !isLowerAlnum(s[i-1]) {
			return false
		}
		start = i + 1
	}
	return true
}

// validReason matches the API's reason: a letter, then letters, digits,
// '_', ',' or ':', ending with a letter, digit or '_'.
func validReason(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		b := s[i]
		if isAlnum(b) || b == '_' || (i < len(s)-1 && (b == ',' || b == ':')) {
			continue
		}
		return false
	}
	return true
}
