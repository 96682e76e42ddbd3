package rollout

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrInvalid is wrapped by every error caused by bad input: duplicate or empty
// node names, negative revisions, unknown phases or reasons, a negative
// policy value, a nil status or a nil host interface.
var ErrInvalid = errors.New("rollout: invalid input")

// ErrConflict is wrapped by a status write that lost an optimistic-concurrency
// race. A StatusWriter returns the apiserver's own 409 unchanged or an error
// wrapping ErrConflict (see Conflict); Controller.Sync recognises both, reads
// the status again and decides again.
var ErrConflict = errors.New("rollout: status conflict")

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// conflictError marks a host error as a status conflict while keeping the
// host's error in the chain.
type conflictError struct{ err error }

// Error implements error.
func (e *conflictError) Error() string { return "rollout: status conflict: " + e.err.Error() }

// Unwrap exposes both ErrConflict and the host's error to errors.Is and errors.As.
func (e *conflictError) Unwrap() []error { return []error{ErrConflict, e.err} }

// Conflict marks err as a status write conflict, so that errors.Is(err,
// ErrConflict) holds and the host's own error stays reachable with errors.As.
// Conflict(nil) returns nil.
func Conflict(err error) error {
	if err == nil {
		return nil
	}
	return &conflictError{err: err}
}

// IsConflict reports whether err is a status conflict: it wraps ErrConflict
// or is the apiserver's 409 Conflict.
func IsConflict(err error) bool {
	return errors.Is(err, ErrConflict) || apierrors.IsConflict(err)
}
