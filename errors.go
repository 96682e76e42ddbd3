package converge

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/converge-dev/converge/internal/input"
)

// ErrInvalid is matched (errors.Is) by every error any converge package
// returns for bad input: an invalid policy, status, config or observation, a
// nil host interface, a manifest it cannot read. The message names the
// package and the input: "rollout: invalid policy: maxUnavailable -1 is
// negative".
var ErrInvalid = input.ErrInvalid

// ErrConflict is matched by a status write that lost an optimistic
// concurrency race. A host's store returns the apiserver's own 409 Conflict
// unchanged or marks its own error with Conflict; every engine recognises
// both (IsConflict), reads again and decides again, so that no transition,
// counter or event is lost.
var ErrConflict = errors.New("converge: status conflict")

// conflictError marks a host's error as a status conflict while keeping it
// in the chain.
type conflictError struct{ err error }

// Error implements error.
func (e *conflictError) Error() string { return "converge: status conflict: " + e.err.Error() }

// Unwrap exposes both ErrConflict and the host's error to errors.Is and
// errors.As.
func (e *conflictError) Unwrap() []error { return []error{ErrConflict, e.err} }

// Conflict marks err as a status conflict, so that errors.Is(err,
// ErrConflict) holds and err itself stays reachable with errors.As.
// Conflict(nil) is nil.
func Conflict(err error) error {
	if err == nil {
		return nil
	}
	return &conflictError{err: err}
}

// IsConflict reports whether err is a status conflict: it matches
// ErrConflict or is the apiserver's 409 Conflict.
func IsConflict(err error) bool {
	return errors.Is(err, ErrConflict) || apierrors.IsConflict(err)
}
