//go:build crdcheck

package crdcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// envCRDDir names the directory of the CRDs that controller-gen generated from
// this package; hack/verify-crd-embeddable.sh sets it.
const envCRDDir = "CRDCHECK_CRD_DIR"

// TestEmbeddedTypesFollowTheContract checks, for each engine, what
// controller-gen lets through: every field of its Policy and Status (and of
// every type they reach) has a camelCase JSON name, no float, no
// time.Duration or time.Time, no map of structs, nothing that is not data;
// every list of objects in the generated CRD has a list type; and a resource
// as the engine writes it, zero or with every field set, fits the generated
// schema.
func TestEmbeddedTypesFollowTheContract(t *testing.T) {
	tests := []struct {
		name string
		// typ is the resource that embeds the engine's types.
		typ reflect.Type
		// crd is the file controller-gen writes for it.
		crd string
	}{
		{name: "rollout", typ: reflect.TypeFor[Rollout](), crd: "crdcheck.converge.dev_rollouts.yaml"},
		{name: "addon", typ: reflect.TypeFor[Addon](), crd: "crdcheck.converge.dev_addons.yaml"},
		{name: "payload", typ: reflect.TypeFor[Payload](), crd: "crdcheck.converge.dev_payloads.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/fields", func(t *testing.T) {
			for _, p := range contractProblems(tt.typ) {
				t.Error(p)
			}
		})
		t.Run(tt.name+"/schema", func(t *testing.T) {
			dir := os.Getenv(envCRDDir)
			if dir == "" {
				t.Skipf("%s is not set: run hack/verify-crd-embeddable.sh", envCRDDir)
			}
			b, err := os.ReadFile(filepath.Join(dir, tt.crd))
			require.NoError(t, err)
			var crd struct {
				Spec struct {
					Versions []struct {
						Schema struct {
							OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
						} `json:"schema"`
					} `json:"versions"`
				} `json:"spec"`
			}
			require.NoError(t, yaml.Unmarshal(b, &crd))
			require.Len(t, crd.Spec.Versions, 1)
			schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
			for _, p := range listProblems(tt.name, schema) {
				t.Error(p)
			}

			props, _ := schema["properties"].(map[string]any)
			for _, c := range []struct {
				what   string
				filled bool
			}{{"zero", false}, {"every field set", true}} {
				obj := written(t, tt.typ, c.filled)
				for _, part := range []string{"spec", "status"} {
					sub, _ := props[part].(map[string]any)
					require.NotNil(t, sub, "the schema has no %s", part)
					problems := valueProblems(tt.name+"."+part, sub, obj[part])
					slices.Sort(problems)
					for _, p := range slices.Compact(problems) {
						t.Errorf("%s (%s)", p, c.what)
					}
				}
			}
		})
	}
}

// written returns a resource of type typ as JSON, the way the engine's
// types marshal it: zero, or filled, with every field of spec and status set.
func written(t *testing.T, typ reflect.Type, filled bool) map[string]any {
	t.Helper()
	obj := reflect.New(typ)
	if filled {
		fill(obj.Elem().FieldByName("Spec"), 1, 0)
		fill(obj.Elem().FieldByName("Status"), 1, 0)
	}
	b, err := json.Marshal(obj.Interface())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}
