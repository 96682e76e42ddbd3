package crdcheck

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/converge-dev/converge"
)

// maxFillDepth stops fill in recursive types.
const maxFillDepth = 8

// fill sets every exported scalar (and metav1.Time, converge.MicroTime) reachable from v to a
// value derived from seed, making nil slices, maps and pointers non-empty on the way. Filling a
// filled value with another seed changes every scalar in place, through the
// slices, maps and pointers it already has: if a copy shares any of them with
// its original, filling the copy changes the original.
func fill(v reflect.Value, seed, depth int) {
	if depth > maxFillDepth {
		return
	}
	switch v.Type() {
	case reflect.TypeFor[metav1.Time]():
		v.Set(reflect.ValueOf(metav1.Unix(int64(seed)*1000, 0)))
		return
	case reflect.TypeFor[converge.MicroTime]():
		v.Set(reflect.ValueOf(converge.NewMicroTime(time.Unix(int64(seed)*1000, int64(seed)*1000))))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(seed%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(seed))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed))
	case reflect.String:
		v.SetString(fmt.Sprintf("value-%d", seed))
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), seed, depth+1)
	case reflect.Slice:
		if v.IsNil() {
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		}
		for i := range v.Len() {
			fill(v.Index(i), seed, depth+1)
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
			key := reflect.New(v.Type().Key()).Elem()
			fill(key, seed, depth+1)
			v.SetMapIndex(key, reflect.New(v.Type().Elem()).Elem())
		}
		for _, key := range v.MapKeys() {
			elem := reflect.New(v.Type().Elem()).Elem()
			elem.Set(v.MapIndex(key))
			fill(elem, seed, depth+1)
			v.SetMapIndex(key, elem)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed, depth+1)
			}
		}
	}
}

// TestDeepCopyIsDeep checks the generated DeepCopy of every resource, and so
// the DeepCopy of every engine type it reaches: a copy equals its original,
// and changing every field of the copy leaves the original as it was.
func TestDeepCopyIsDeep(t *testing.T) {
	tests := []struct {
		name string
		obj  func() runtime.Object
	}{
		{name: "Rollout", obj: func() runtime.Object { return &Rollout{} }},
		{name: "Addon", obj: func() runtime.Object { return &Addon{} }},
		{name: "Payload", obj: func() runtime.Object { return &Payload{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			original := tt.obj()
			fill(reflect.ValueOf(original), 1, 0)
			copied := original.DeepCopyObject()
			require.Equal(t, original, copied)

			fill(reflect.ValueOf(copied), 2, 0)
			require.NotEqual(t, original, copied, "fill changed nothing")
			want := tt.obj()
			fill(reflect.ValueOf(want), 1, 0)
			assert.Equal(t, want, original, "changing the copy changed the original: the copy shares memory with it")
		})
	}
}
