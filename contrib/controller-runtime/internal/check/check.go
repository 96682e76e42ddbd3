// Package check holds what crconverge and crtest do with their callers'
// input: the nil and typed-nil check, and the folding of an engine's
// invalid-input problems into their own.
package check

import (
	"errors"
	"reflect"

	"github.com/converge-dev/converge"
)

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

// Problems returns the problems err reports, each after prefix: those of a
// *converge.InvalidError in err's chain, or err's text for any other
// error, or none for nil.
func Problems(err error, prefix string) []string {
	if err == nil {
		return nil
	}
	var ie *converge.InvalidError
	if !errors.As(err, &ie) {
		return []string{prefix + err.Error()}
	}
	out := make([]string, len(ie.Problems))
	for i, p := range ie.Problems {
		out[i] = prefix + p
	}
	return out
}
