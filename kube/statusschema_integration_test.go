//go:build integration

package kube

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// schemaCRD installs the namespaced CRD plural.example.com of kind whose
// status schema holds only an integer "revision", with a status
// subresource unless bare, and waits until it is established.
func schemaCRD(t *testing.T, c clients, plural, kind string, bare bool) schema.GroupVersionResource {
	t.Helper()
	ctx := context.Background()
	name := plural + ".example.com"
	version := map[string]any{
		"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"spec": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
				"status": map[string]any{"type": "object", "properties": map[string]any{
					"revision": map[string]any{"type": "integer"},
				}},
			},
		}},
	}
	if !bare {
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": plural[:len(plural)-1], "kind": kind, "listKind": kind + "List"},
			"versions": []any{version},
		},
	}}
	_, err := c.dynamic.Resource(crds).Apply(ctx, name, crd, metav1.ApplyOptions{FieldManager: "kube-test", Force: true})
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: plural}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := c.dynamic.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{})
		return err == nil, nil
	}), "the CRD is served")
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": kind,
		"metadata": map[string]any{"name": "w", "namespace": "default"}, "spec": map[string]any{}}}
	_, err = c.dynamic.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
	require.NoError(t, err)
	return gvr
}

// A CRD whose status schema lacks a field of the engine's status drops it
// on every write: the store says so once, naming the field; a CRD without
// a status subresource is named as such, not reported as not found.
func TestStatusSchemaMismatchOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)

	pruned := schemaCRD(t, c, "prunedwidgets", "PrunedWidget", false)
	s, err := NewObjectStatusStore[engineStatus](c.dynamic, pruned, "default", "w")
	require.NoError(t, err)
	_, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	rv, err = s.UpdateStatus(ctx, engineStatus{Revision: 2, Nodes: []string{"a"}}, rv)
	var se *StatusSchemaError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, []string{"status.nodes"}, se.Fields)
	got, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, engineStatus{Revision: 2}, got, "the write happened, without the field")
	_, err = s.UpdateStatus(ctx, engineStatus{Revision: 3, Nodes: []string{"b"}}, rv)
	assert.NoError(t, err, "reported once")

	bare := schemaCRD(t, c, "barewidgets", "BareWidget", true)
	s2, err := NewObjectStatusStore[engineStatus](c.dynamic, bare, "default", "w")
	require.NoError(t, err)
	_, rv, err = s2.GetStatus(ctx)
	require.NoError(t, err)
	_, err = s2.UpdateStatus(ctx, engineStatus{Revision: 1}, rv)
	require.ErrorAs(t, err, &se)
	assert.True(t, se.NoSubresource, "the apiserver's 404 is explained")
}
