package fake

import "reflect"

// isNil reports whether v is nil or holds a nil pointer, function, map,
// channel, slice or interface: a typed nil that would crash on its first call.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
