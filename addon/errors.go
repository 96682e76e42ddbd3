package addon

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ErrInvalid is matched (errors.Is) by every error about bad input: an invalid
// table, policy, spec, status or config.
var ErrInvalid = errors.New("addon: invalid input")

// ErrConflict is what a Store wraps when the add-on changed since it was
// read (the apiserver's own 409 Conflict is recognised as well). The Machine
// then re-reads and decides again with the outcome it already has. It is
// also matched by the error Machine.Reconcile returns when conflicts went on
// past its re-reads.
var ErrConflict = errors.New("addon: status conflict")

// InvalidError describes bad input. It matches ErrInvalid.
type InvalidError struct {
	// What names the input: "table", "policy", "spec", "status", "input", "config".
	What string
	// Problems lists what is wrong.
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

// isConflict recognises both forms of a lost race: ErrConflict and the
// apiserver's 409.
func isConflict(err error) bool {
	return errors.Is(err, ErrConflict) || apierrors.IsConflict(err)
}
