package manifest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/payload/graph"
)

// object returns a manifest of file for an object of gvk at namespace and name.
func object(file string, gvk schema.GroupVersionKind, namespace, name string, deps ...string) *Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return &Manifest{File: file, GVK: gvk, Object: obj, DependsOn: deps}
}

// TestManifestIsAGraphItem holds what the graph reads of a manifest: its file's run
// level and component, a Job as a barrier, its dependencies, and the names messages
// and dependencies use; a nil manifest reads as nothing.
func TestManifestIsAGraphItem(t *testing.T) {
	deployment := schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	tests := []struct {
		name      string
		m         *Manifest
		wantPlace graph.Place
		wantRef   string
		wantName  string
		wantDeps  []string
	}{
		{name: "a namespaced object of a run level", m: object("0000_50_web_01_deployment.yaml", deployment, "ns", "web", "Namespace/ns"),
			wantPlace: graph.Place{File: "0000_50_web_01_deployment.yaml", RunLevel: 50, Component: "web"},
			wantRef:   "Deployment/ns/web", wantName: `deployment "ns/web"`, wantDeps: []string{"Namespace/ns"}},
		{name: "a Job is a barrier", m: object("0000_30_migrate_00_job.yaml", jobGVK, "ns", "migrate"),
			wantPlace: graph.Place{File: "0000_30_migrate_00_job.yaml", RunLevel: 30, Component: "migrate", Barrier: true},
			wantRef:   "Job/ns/migrate", wantName: `job "ns/migrate"`},
		{name: "a cluster-scoped object without a run level", m: object("crd.yaml", schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "widgets.example.com"),
			wantPlace: graph.Place{File: "crd.yaml"},
			wantRef:   "CustomResourceDefinition/widgets.example.com", wantName: `customresourcedefinition "widgets.example.com"`},
		{name: "an object without a name is named by its file", m: &Manifest{File: "0000_10_a_x.yaml", GVK: schema.GroupVersionKind{Version: "v1", Kind: "Pod"}},
			wantPlace: graph.Place{File: "0000_10_a_x.yaml", RunLevel: 10, Component: "a"},
			wantRef:   "Pod/", wantName: `pod "0000_10_a_x.yaml"`},
		{name: "a nil manifest", m: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantPlace, tt.m.Place())
			assert.Equal(t, tt.wantRef, tt.m.Ref())
			assert.Equal(t, tt.wantName, tt.m.String())
			assert.Equal(t, tt.wantDeps, tt.m.Dependencies())
		})
	}
}
