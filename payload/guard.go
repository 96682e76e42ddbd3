package payload

import "fmt"

// guard calls fn, host code, on a goroutine of its own and waits for it, so that a
// panic or a runtime.Goexit in fn becomes an error instead of ending the worker's
// goroutine.
func guard(what string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			if p := recover(); p != nil {
				done <- fmt.Errorf("payload: %s panicked: %v", what, p)
				return
			}
			done <- fmt.Errorf("payload: %s called runtime.Goexit", what)
		}()
		err := fn()
		returned = true
		done <- err
	}()
	return <-done
}
