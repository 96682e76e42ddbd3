package payload

import "fmt"

// guard calls fn, host code, on a goroutine of its own and waits for it, so that a
// panic or a runtime.Goexit in fn becomes an error (a *crashError) instead of ending
// the worker's goroutine.
func guard(what string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			crash := &crashError{what: what, goexit: true}
			if p := recover(); p != nil {
				crash.value, crash.goexit = p, false
			}
			done <- crash
		}()
		err := fn()
		returned = true
		done <- err
	}()
	return <-done
}

// crashError is host code that panicked or called runtime.Goexit.
type crashError struct {
	what   string
	value  any
	goexit bool
}

func (e *crashError) Error() string {
	if e.goexit {
		return fmt.Sprintf("payload: %s called runtime.Goexit", e.what)
	}
	return fmt.Sprintf("payload: %s panicked: %v", e.what, e.value)
}
