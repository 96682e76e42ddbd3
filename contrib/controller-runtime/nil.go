package crconverge

import (
	"fmt"

	"github.com/converge-dev/converge/kube"
)

// errUnmade is the error of a method called on a client its New function
// did not make (a nil pointer or a zero value).
func errUnmade(method string) error {
	return fmt.Errorf("crconverge: %s: not made by its New function: %w", method, kube.ErrInvalid)
}
