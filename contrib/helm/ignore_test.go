package helmconverge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestPointerTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pointer string
		want    []string
		wrong   bool
	}{
		{name: "a pointer is split at each slash", pointer: "/spec/replicas", want: []string{"spec", "replicas"}},
		{name: "~1 is a slash inside a key", pointer: "/metadata/annotations/example.com~1owner", want: []string{"metadata", "annotations", "example.com/owner"}},
		{name: "~0 is a tilde inside a key", pointer: "/metadata/labels/a~0b", want: []string{"metadata", "labels", "a~b"}},
		{name: "~01 is a tilde then 1, not a slash", pointer: "/a~01", want: []string{"a~1"}},
		{name: "an empty token is an empty key", pointer: "/data/", want: []string{"data", ""}},
		{name: "a pointer not starting with a slash is refused", pointer: "spec/replicas", wrong: true},
		{name: "the root pointer is refused", pointer: "", wrong: true},
		{name: "a tilde escaping nothing is refused", pointer: "/a~2", wrong: true},
		{name: "a trailing tilde is refused", pointer: "/a~", wrong: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pointerTokens(tc.pointer)
			if tc.wrong {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIgnoredFieldsStrip(t *testing.T) {
	deployment := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "mesh", "annotations": map[string]any{"example.com/owner": "hpa", "keep": "1"}},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "a", "image": "a:1"}, map[string]any{"name": "b", "image": "b:1"}},
			}}},
		}}
	}
	noReplicas := func(t *testing.T, obj *unstructured.Unstructured) {
		_, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		assert.False(t, found)
	}
	for _, tc := range []struct {
		name  string
		rule  IgnoreRule
		check func(t *testing.T, obj *unstructured.Unstructured)
	}{
		{name: "a rule of the object's kind removes its path", rule: IgnoreRule{Kind: "Deployment", Paths: []string{"/spec/replicas"}},
			check: noReplicas},
		{name: "a rule of another kind removes nothing", rule: IgnoreRule{Kind: "StatefulSet", Paths: []string{"/spec/replicas"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) { assert.Equal(t, deployment(), obj) }},
		{name: "a rule of the object's name removes its path", rule: IgnoreRule{Kind: "Deployment", Name: "mesh", Paths: []string{"/spec/replicas"}},
			check: noReplicas},
		{name: "a rule of another name removes nothing", rule: IgnoreRule{Kind: "Deployment", Name: "other", Paths: []string{"/spec/replicas"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) { assert.Equal(t, deployment(), obj) }},
		{name: "a rule without kind covers every kind", rule: IgnoreRule{Paths: []string{"/spec/replicas"}},
			check: noReplicas},
		{name: "a missing path removes nothing", rule: IgnoreRule{Kind: "Deployment", Paths: []string{"/spec/paused", "/status/replicas", "/spec/template/spec/containers/7/image"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) { assert.Equal(t, deployment(), obj) }},
		{name: "an escaped key is removed alone", rule: IgnoreRule{Paths: []string{"/metadata/annotations/example.com~1owner"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				assert.Equal(t, map[string]string{"keep": "1"}, obj.GetAnnotations())
			}},
		{name: "a list index reaches into the list", rule: IgnoreRule{Paths: []string{"/spec/template/spec/containers/1/image"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
				assert.Equal(t, []any{map[string]any{"name": "a", "image": "a:1"}, map[string]any{"name": "b"}}, containers)
			}},
		{name: "a list element is removed whole", rule: IgnoreRule{Paths: []string{"/spec/template/spec/containers/0"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) {
				containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
				assert.Equal(t, []any{map[string]any{"name": "b", "image": "b:1"}}, containers)
			}},
		{name: "an index that is not a plain number removes nothing", rule: IgnoreRule{Paths: []string{"/spec/template/spec/containers/01", "/spec/template/spec/containers/-"}},
			check: func(t *testing.T, obj *unstructured.Unstructured) { assert.Equal(t, deployment(), obj) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields, problems := parseIgnoreRules([]IgnoreRule{tc.rule})
			require.Empty(t, problems)
			obj := deployment()
			fields.strip(obj)
			tc.check(t, obj)
		})
	}
}

func TestParseIgnoreRulesNamesEachProblem(t *testing.T) {
	_, problems := parseIgnoreRules([]IgnoreRule{
		{Kind: "Deployment", Paths: []string{"/spec/replicas"}},
		{Kind: "Deployment"},
		{Paths: []string{"spec", "/a~2"}},
	})
	assert.Equal(t, []string{
		"drift ignore rule 1 has no paths",
		`drift ignore rule 2: JSON pointer "spec" does not start with /`,
		`drift ignore rule 2: JSON pointer "/a~2" has a ~ that is not ~0 or ~1`,
	}, problems)
}
