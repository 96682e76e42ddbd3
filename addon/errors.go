package addon

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (errors.Is) by every error about bad input: an invalid
// table, policy, spec or status.
var ErrInvalid = errors.New("addon: invalid input")

// ErrConflict is matched (errors.Is) by the error Machine.Reconcile returns
// when the StatusWriter reports that someone else changed the object first.
// The status returned with it holds everything the call decided, so nothing is
// lost: the host retries with a fresh copy and the decision is made again.
var ErrConflict = errors.New("addon: status write conflict")

// InvalidError describes bad input. It matches ErrInvalid.
type InvalidError struct {
	// What names the input: "table", "policy", "spec", "status", "input".
	What string
	// Problems lists what is wrong, sorted.
	Problems []string
}

// Error lists the problems.
func (e *InvalidError) Error() string {
	if len(e.Problems) == 1 {
		return fmt.Sprintf("addon: invalid %s: %s", e.What, e.Problems[0])
	}
	return fmt.Sprintf("addon: invalid %s: %d problems: %q", e.What, len(e.Problems), e.Problems)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(what string, problems ...string) error {
	return &InvalidError{What: what, Problems: problems}
}

type conflictError struct {
	err error
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("addon: status write conflict: %v", e.err)
}

func (e *conflictError) Is(target error) bool { return target == ErrConflict }

func (e *conflictError) Unwrap() error { return e.err }
