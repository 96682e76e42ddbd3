package crconverge

import (
	"fmt"
	"reflect"

	"github.com/converge-dev/converge/kube"
)

// isNil reports whether v is nil or an interface holding a nil pointer, map,
// slice, channel or function.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// errUnmade is the error of a method called on a client its New function
// did not make (a nil pointer or a zero value).
func errUnmade(method string) error {
	return fmt.Errorf("crconverge: %s: not made by its New function: %w", method, kube.ErrInvalid)
}
