package conditions

import (
	"fmt"

	"github.com/converge-dev/converge"
)

// InvalidError describes one piece of bad input: a condition field, an
// option, or a nil list. The input it was given is left unchanged. It
// matches converge.ErrInvalid, as bad input anywhere in converge does.
type InvalidError struct {
	// Type is the condition type concerned, empty when the input is not a
	// single condition (an option or the list itself).
	Type string
	// Field names what is wrong: "type", "status", "reason", "message",
	// "observedGeneration", or an option name.
	Field string
	// Detail says what is wrong with it.
	Detail string
}

// Error implements error.
func (e *InvalidError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("conditions: invalid %s: %s", e.Field, e.Detail)
	}
	return fmt.Sprintf("conditions: condition %q: invalid %s: %s", e.Type, e.Field, e.Detail)
}

// Is reports whether target is converge.ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == converge.ErrInvalid }

func invalid(condType, field, format string, args ...any) error {
	return &InvalidError{Type: condType, Field: field, Detail: fmt.Sprintf(format, args...)}
}
