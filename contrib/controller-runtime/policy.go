package crconverge

import "reflect"

// underDefault returns own with each zero field taken from def, a policy
// laid under a resource's: a zero scalar (a number, a string, false), a nil
// pointer, slice or map and a zero struct take the default's value, and a
// struct set in part takes the default's value in each of its own zero
// fields (a backoff giving only its Max keeps the default's Initial). A
// field set in own is kept whole, so a false bool or a zero number cannot
// undo a default's true or non-zero one. Nothing of def is shared with the
// result.
func underDefault[T any, P interface {
	*T
	DeepCopy() *T
}](own, def T) T {
	d := P(&def).DeepCopy()
	fillZero(reflect.ValueOf(&own).Elem(), reflect.ValueOf(d).Elem())
	return own
}

// fillZero sets v to def where v is zero, and each zero field of a struct v
// set in part to def's.
func fillZero(v, def reflect.Value) {
	switch {
	case v.IsZero():
		v.Set(def)
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				fillZero(f, def.Field(i))
			}
		}
	}
}
