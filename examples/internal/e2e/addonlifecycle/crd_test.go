package addonlifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestEstablished(t *testing.T) {
	tests := []struct {
		name       string
		conditions []any
		want       bool
	}{
		{name: "no status yet", want: false},
		{name: "names accepted only", conditions: []any{map[string]any{"type": "NamesAccepted", "status": "True"}}, want: false},
		{name: "not yet established", conditions: []any{map[string]any{"type": "Established", "status": "False"}}, want: false},
		{name: "established", conditions: []any{
			map[string]any{"type": "NamesAccepted", "status": "True"},
			map[string]any{"type": "Established", "status": "True"},
		}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crd := addonCRD()
			if tt.conditions != nil {
				crd.Object["status"] = map[string]any{"conditions": tt.conditions}
			}
			assert.Equal(t, tt.want, established(crd))
		})
	}
}

func TestAddonCRDServesTheStatusSubresource(t *testing.T) {
	crd := addonCRD()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if assert.Len(t, versions, 1) {
		v := versions[0].(map[string]any)
		assert.Equal(t, AddonResource.Version, v["name"])
		_, ok, _ := unstructured.NestedMap(v, "subresources", "status")
		assert.True(t, ok, "status subresource")
	}
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	assert.Equal(t, crdName, plural+"."+group, "the CRD's name is <plural>.<group>")
}
