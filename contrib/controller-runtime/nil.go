package crconverge

import "github.com/converge-dev/converge"

// errUnmade is the error of a method called on a client its New function
// did not make (a nil pointer or a zero value).
func errUnmade(method string) error {
	return converge.Invalidf("crconverge", method+" call", "not made by its New function")
}
