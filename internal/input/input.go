// Package input holds what every converge package does with its callers'
// input and is not API: the invalid-input error behind converge.ErrInvalid,
// and the check for nil and typed-nil interfaces.
package input

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/converge-dev/converge"
)

// ErrInvalid is converge.ErrInvalid, matched by every Error.
var ErrInvalid = converge.ErrInvalid

// Error is converge.InvalidError: bad input, reading "<pkg>: invalid
// <what>: <problem>; <problem>".
type Error = converge.InvalidError

// Invalid returns the *Error of pkg refusing what for problems, or nil
// when there is no problem.
func Invalid(pkg, what string, problems ...string) error {
	return converge.Invalid(pkg, what, problems...)
}

// Invalidf returns the *Error of pkg refusing what for one problem.
func Invalidf(pkg, what, format string, args ...any) error {
	return converge.Invalidf(pkg, what, format, args...)
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

// Field returns the problem of a host interface set in a Config field, in
// the one wording every package uses: "<field> is required" for a required
// field left nil, "<field> holds a nil <type>" for a typed nil (a nil
// pointer or func inside the interface), "" otherwise.
func Field(field string, v any, required bool) string {
	switch {
	case v == nil && required:
		return field + " is required"
	case v != nil && IsNil(v):
		return fmt.Sprintf("%s holds a nil %T", field, v)
	}
	return ""
}

// Fields returns the problems Field finds in each field, in order.
func Fields(fields ...FieldValue) []string {
	var problems []string
	for _, f := range fields {
		if p := Field(f.Name, f.Value, f.Required); p != "" {
			problems = append(problems, p)
		}
	}
	return problems
}

// FieldValue is one Config field for Fields.
type FieldValue struct {
	// Name is the field's Go name ("Status").
	Name string
	// Value is what the field holds.
	Value any
	// Required says a nil value is a problem.
	Required bool
}

// NotMade is the error of a shell used without its constructor, in the one
// wording every package uses: "<pkg>: invalid <Type>: not made by
// New<Type>".
func NotMade(pkg, typ string) error {
	return Invalidf(pkg, typ, "not made by New%s", typ)
}

// ZeroNow is the problem of an input whose Now is the zero time: every
// engine refuses it, since a zero time would make every stored time lie in
// the future.
const ZeroNow = "Now is zero"
