package payload

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

var podGVK = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}

// newTask returns a task of a manifest of kind gvk named after its file.
func newTask(file string, gvk schema.GroupVersionKind) *graph.Task {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetName(file)
	return &graph.Task{Index: 1, Total: 1, Item: &manifest.Manifest{File: file, GVK: gvk, Object: obj}}
}
