package crdcheck

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

// trustedPackages hold types that Kubernetes itself persists.
var trustedPackages = []string{"k8s.io/apimachinery/", "k8s.io/api/"}

// contractProblems walks every field reachable from t and returns what breaks
// the persisted-types contract (shared/DESIGN.md, "One face"): each as
// "Type.Field: problem".
func contractProblems(t reflect.Type) []string {
	var problems []string
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			walk(t.Elem())
			return
		}
		if t.Kind() != reflect.Struct || seen[t] || trusted(t) || marshalsItself(t) {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			where := fmt.Sprintf("%s.%s", typeName(t), f.Name)
			tag, hasTag := f.Tag.Lookup("json")
			name, _, _ := strings.Cut(tag, ",")
			switch {
			case name == "-":
				continue
			case !hasTag:
				problems = append(problems, where+": no JSON tag")
			case name == "" && !strings.Contains(tag, "inline") && !f.Anonymous:
				problems = append(problems, where+": a JSON tag without a name")
			case name != "" && !unicode.IsLower([]rune(name)[0]):
				problems = append(problems, fmt.Sprintf("%s: JSON name %q is not camelCase", where, name))
			}
			problems = append(problems, fieldTypeProblems(where, f.Type)...)
			walk(f.Type)
		}
	}
	walk(t)
	slices.Sort(problems)
	return problems
}

// fieldTypeProblems returns what is wrong with a field's own type.
func fieldTypeProblems(where string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return []string{where + ": time.Duration: use metav1.Duration"}
	case t == reflect.TypeFor[time.Time]():
		return []string{where + ": time.Time: use metav1.Time"}
	case t == reflect.TypeFor[metav1.MicroTime]():
		return []string{where + ": metav1.MicroTime reads no time written with seconds: use converge.MicroTime"}
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return []string{where + ": a float: use an integer (percent, milli-units) or a string"}
	case t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Struct:
		return []string{where + ": a map of structs: use a list with +listType=map"}
	case t.Kind() == reflect.Interface || t.Kind() == reflect.Func || t.Kind() == reflect.Chan:
		return []string{fmt.Sprintf("%s: a %s is not data: tag it json:\"-\" or leave it out", where, t.Kind())}
	}
	return nil
}

// marshalsItself reports whether t writes and reads its own JSON: it is one value,
// whose schema its markers give, as controller-gen takes it, and its fields are not
// walked.
func marshalsItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Marshaler]()) && p.Implements(reflect.TypeFor[json.Unmarshaler]())
}

func trusted(t reflect.Type) bool {
	for _, p := range trustedPackages {
		if strings.HasPrefix(t.PkgPath(), p) {
			return true
		}
	}
	return false
}

func typeName(t reflect.Type) string {
	return t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:] + "." + t.Name()
}

// listProblems walks a CRD's openAPIV3Schema and returns every list of
// objects that declares no x-kubernetes-list-type: such a list is replaced
// whole by a server-side apply from another field manager.
func listProblems(path string, schema map[string]any) []string {
	var problems []string
	if schema["type"] == "array" {
		items, _ := schema["items"].(map[string]any)
		if items["type"] == "object" && schema["x-kubernetes-list-type"] == nil {
			problems = append(problems, path+": a list of objects without +listType (map with +listMapKey, or atomic)")
		}
		problems = append(problems, listProblems(path+"[]", items)...)
	}
	props, _ := schema["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		sub, _ := props[name].(map[string]any)
		problems = append(problems, listProblems(path+"."+name, sub)...)
	}
	return problems
}

// valueProblems compares v, a JSON value the engine writes, with the
// schema of the CRD and returns every place where the apiserver would reject
// it (a type other than the schema's) or drop part of it (a field the schema
// does not name is pruned).
func valueProblems(path string, schema map[string]any, v any) []string {
	if v == nil || schema["x-kubernetes-preserve-unknown-fields"] == true {
		return nil
	}
	if schema["x-kubernetes-int-or-string"] == true {
		switch v.(type) {
		case string, float64:
			return nil
		}
		return []string{fmt.Sprintf("%s: the engine writes %v (%T) where the schema wants an integer or a string", path, v, v)}
	}
	typ, _ := schema["type"].(string)
	var ok bool
	switch typ {
	case "object":
		var obj map[string]any
		if obj, ok = v.(map[string]any); ok {
			return objectProblems(path, schema, obj)
		}
	case "array":
		var list []any
		if list, ok = v.([]any); ok {
			items, _ := schema["items"].(map[string]any)
			var problems []string
			for _, item := range list {
				problems = append(problems, valueProblems(path+"[]", items, item)...)
			}
			return problems
		}
	case "string":
		_, ok = v.(string)
	case "integer":
		f, isNumber := v.(float64)
		ok = isNumber && f == float64(int64(f))
	case "number":
		_, ok = v.(float64)
	case "boolean":
		_, ok = v.(bool)
	}
	if !ok {
		if typ == "" {
			return []string{fmt.Sprintf("%s: the engine writes %v (%T) where the schema gives no type", path, v, v)}
		}
		return []string{fmt.Sprintf("%s: the engine writes %v (%T) where the schema wants type %q", path, v, v, typ)}
	}
	return nil
}

func objectProblems(path string, schema, obj map[string]any) []string {
	var problems []string
	props, _ := schema["properties"].(map[string]any)
	additional, _ := schema["additionalProperties"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		sub, named := props[k].(map[string]any)
		switch {
		case named:
			problems = append(problems, valueProblems(path+"."+k, sub, obj[k])...)
		case additional != nil:
			problems = append(problems, valueProblems(path+"."+k, additional, obj[k])...)
		default:
			problems = append(problems, path+"."+k+": not in the schema, so the apiserver prunes it")
		}
	}
	required, _ := schema["required"].([]any)
	for _, r := range required {
		name, _ := r.(string)
		sub, _ := props[name].(map[string]any)
		// The apiserver drops a null that the schema does not allow, and
		// then finds the field missing.
		if v, ok := obj[name]; !ok || v == nil && sub["nullable"] != true {
			problems = append(problems, fmt.Sprintf("%s: the schema requires %q, which the engine omits or writes as null", path, name))
		}
	}
	return problems
}

type goodStatus struct {
	Name       string              `json:"name"`
	Due        *converge.MicroTime `json:"due,omitempty"`
	Conditions []metav1.Condition  `json:"conditions,omitempty"`
	Wait       metav1.Duration     `json:"wait,omitempty"`
	Since      *metav1.Time        `json:"since,omitempty"`
	Counts     map[string]int32    `json:"counts,omitempty"`
	Err        error               `json:"-"`
	inner      float64
}

// Embedded is inlined in badStatus; its fields are checked too.
type Embedded struct {
	Share float32 `json:"share,omitempty"`
}

type badStatus struct {
	Embedded `json:",inline"`
	Untagged string
	Upper    string                `json:"Upper"`
	Unnamed  string                `json:",omitempty"`
	Ratio    float64               `json:"ratio"`
	Timeout  time.Duration         `json:"timeout"`
	When     time.Time             `json:"when"`
	Due      metav1.MicroTime      `json:"due"`
	ByName   map[string]goodStatus `json:"byName"`
	Hook     func()                `json:"hook"`
	Nested   []nested              `json:"nested"`
}

type nested struct {
	Delays []time.Duration `json:"delays"`
}

func TestContractProblems(t *testing.T) {
	tests := []struct {
		name string
		typ  reflect.Type
		want []string
	}{
		{name: "data that Kubernetes persists passes", typ: reflect.TypeFor[goodStatus]()},
		{
			name: "every broken rule is named once, also in nested types",
			typ:  reflect.TypeFor[badStatus](),
			want: []string{
				"crdcheck.Embedded.Share: a float: use an integer (percent, milli-units) or a string",
				"crdcheck.badStatus.ByName: a map of structs: use a list with +listType=map",
				"crdcheck.badStatus.Due: metav1.MicroTime reads no time written with seconds: use converge.MicroTime",
				"crdcheck.badStatus.Hook: a func is not data: tag it json:\"-\" or leave it out",
				"crdcheck.badStatus.Ratio: a float: use an integer (percent, milli-units) or a string",
				"crdcheck.badStatus.Timeout: time.Duration: use metav1.Duration",
				"crdcheck.badStatus.Unnamed: a JSON tag without a name",
				"crdcheck.badStatus.Untagged: no JSON tag",
				"crdcheck.badStatus.Upper: JSON name \"Upper\" is not camelCase",
				"crdcheck.badStatus.When: time.Time: use metav1.Time",
				"crdcheck.nested.Delays: time.Duration: use metav1.Duration",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, contractProblems(tt.typ))
		})
	}
}

func TestValueProblems(t *testing.T) {
	schema := map[string]any{
		"type":     "object",
		"required": []any{"name"},
		"properties": map[string]any{
			"name":    map[string]any{"type": "string"},
			"count":   map[string]any{"type": "integer"},
			"ready":   map[string]any{"type": "boolean"},
			"port":    map[string]any{"x-kubernetes-int-or-string": true},
			"raw":     map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
			"untyped": map[string]any{},
			"items":   map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
			"labels": map[string]any{
				"type":                 "object",
				"additionalProperties": map[string]any{"type": "string"},
			},
		},
	}
	tests := []struct {
		name  string
		value string
		want  []string
	}{
		{
			name:  "a value that fits",
			value: `{"name":"a","count":3,"ready":true,"port":"http","raw":{"any":[1]},"items":[1,2],"labels":{"k":"v"}}`,
		},
		{name: "null is dropped, not refused", value: `{"name":"a","count":null}`},
		{
			name:  "a field the schema does not name is pruned",
			value: `{"name":"a","Count":3}`,
			want:  []string{"x.Count: not in the schema, so the apiserver prunes it"},
		},
		{
			name:  "a required field is missing",
			value: `{"count":3}`,
			want:  []string{`x: the schema requires "name", which the engine omits or writes as null`},
		},
		{
			name:  "a required field written as null",
			value: `{"name":null}`,
			want:  []string{`x: the schema requires "name", which the engine omits or writes as null`},
		},
		{
			name:  "wrong types are refused, in lists and maps too",
			value: `{"name":1,"count":1.5,"ready":"yes","port":true,"items":[1,"2"],"labels":{"k":2}}`,
			want: []string{
				`x.count: the engine writes 1.5 (float64) where the schema wants type "integer"`,
				`x.items[]: the engine writes 2 (string) where the schema wants type "integer"`,
				`x.labels.k: the engine writes 2 (float64) where the schema wants type "string"`,
				`x.name: the engine writes 1 (float64) where the schema wants type "string"`,
				`x.port: the engine writes true (bool) where the schema wants an integer or a string`,
				`x.ready: the engine writes yes (string) where the schema wants type "boolean"`,
			},
		},
		{
			name:  "a field that the schema names without a type",
			value: `{"name":"a","untyped":1}`,
			want:  []string{"x.untyped: the engine writes 1 (float64) where the schema gives no type"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			require.NoError(t, json.Unmarshal([]byte(tt.value), &v))
			assert.Equal(t, tt.want, valueProblems("x", schema, v))
		})
	}
}

func TestListProblems(t *testing.T) {
	objects := map[string]any{"type": "object"}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"conditions": map[string]any{"type": "array", "items": objects, "x-kubernetes-list-type": "map"},
			"nodes":      map[string]any{"type": "array", "items": objects},
			"names":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"matrix": map[string]any{"type": "array", "x-kubernetes-list-type": "atomic",
				"items": map[string]any{"type": "array", "items": objects}},
		},
	}
	assert.Equal(t, []string{
		"s.matrix[]: a list of objects without +listType (map with +listMapKey, or atomic)",
		"s.nodes: a list of objects without +listType (map with +listMapKey, or atomic)",
	}, listProblems("s", schema))
}
