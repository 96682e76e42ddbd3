package addon

import (
	"fmt"
	"runtime/debug"
)

// PanicError is the error of a Driver, Tester, DriftDetector or Inspector
// call that panicked. The Machine recovers the panic: the call is a failed
// attempt, recorded and retried as the policy says (a health or drift read
// that panicked is health that could not be read, an inspection that
// panicked one that could not say), and the operator does not crash. A
// call that ends its goroutine with runtime.Goexit cannot be recovered.
type PanicError struct {
	// Method is the method that panicked: "Install", "Upgrade", "Uninstall",
	// "Health", "Drift", "Test" or "Inspect".
	Method string
	// Value is what it panicked with.
	Value any
	// Stack is the stack of the panicking goroutine, for the host's logs.
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("addon: %s panicked: %v", e.Method, e.Value)
}

// Unwrap returns Value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered runs call and returns its error, or a *PanicError if it
// panicked.
func recovered(method string, call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Method: method, Value: p, Stack: debug.Stack()}
		}
	}()
	return call()
}
