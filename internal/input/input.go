// Package input holds what every converge package does with its callers'
// input and is not API: the invalid-input error behind converge.ErrInvalid,
// and the check for nil and typed-nil interfaces.
package input

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrInvalid is the sentinel that converge.ErrInvalid names; it lives here
// so that the root package's own types can report bad input in the shape
// every engine uses.
var ErrInvalid = errors.New("converge: invalid input")

// Error is bad input: the package that refused it, what it refused and why.
// It reads "<pkg>: invalid <what>: <problem>; <problem>" and matches
// ErrInvalid.
type Error struct {
	// Pkg is the refusing package ("rollout").
	Pkg string
	// What names the input ("policy", "config", "status").
	What string
	// Problems says what is wrong, one entry a problem.
	Problems []string
}

// Error implements error.
func (e *Error) Error() string {
	return e.Pkg + ": invalid " + e.What + ": " + strings.Join(e.Problems, "; ")
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Invalid returns the *Error of pkg refusing what for problems, or nil when
// there is no problem.
func Invalid(pkg, what string, problems ...string) error {
	if len(problems) == 0 {
		return nil
	}
	return &Error{Pkg: pkg, What: what, Problems: problems}
}

// Invalidf returns the *Error of pkg refusing what for one problem.
func Invalidf(pkg, what, format string, args ...any) error {
	return &Error{Pkg: pkg, What: what, Problems: []string{fmt.Sprintf(format, args...)}}
}

// Problems returns the problems err reports, each after prefix, so that a
// caller can fold a part's problems into its own: those of an *Error in
// err's chain, or err's text for any other error, or none for nil.
func Problems(err error, prefix string) []string {
	if err == nil {
		return nil
	}
	var ie *Error
	if !errors.As(err, &ie) {
		return []string{prefix + err.Error()}
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = prefix + p
	}
	return out
}

// IsNil reports whether v is nil or holds a nil pointer, function, map,
// channel, slice or interface: a typed nil that would crash on its first
// call.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
