package converge

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrInvalid is matched (errors.Is) by every error any converge package
// returns for bad input: an invalid policy, status, config or observation, a
// nil host interface, a manifest it cannot read. The message names the
// package and the input: "rollout: invalid policy: maxUnavailable -1 is
// negative".
var ErrInvalid = errors.New("converge: invalid input")

// InvalidError is bad input: the package that refused it, what it refused
// and why. It reads "<pkg>: invalid <what>: <problem>; <problem>" and
// matches ErrInvalid. Every converge package returns it for bad input;
// an adapter in another module builds its own with Invalid, and folds the
// problems of an engine's error into its own through Problems.
type InvalidError struct {
	// Pkg is the refusing package ("rollout").
	Pkg string
	// What names the input ("policy", "config", "status").
	What string
	// Problems says what is wrong, one entry a problem.
	Problems []string
}

// Error implements error.
func (e *InvalidError) Error() string {
	return e.Pkg + ": invalid " + e.What + ": " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Invalid returns the *InvalidError of pkg refusing what for problems, or
// nil when there is no problem.
func Invalid(pkg, what string, problems ...string) error {
	if len(problems) == 0 {
		return nil
	}
	return &InvalidError{Pkg: pkg, What: what, Problems: problems}
}

// Invalidf returns the *InvalidError of pkg refusing what for one problem.
func Invalidf(pkg, what, format string, args ...any) error {
	return &InvalidError{Pkg: pkg, What: what, Problems: []string{fmt.Sprintf(format, args...)}}
}

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
