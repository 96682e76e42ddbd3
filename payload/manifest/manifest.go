package manifest

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/payload/graph"
)

// The annotations Load reads into a Manifest.
const (
	// DependsOnAnnotation lists, comma separated, the references (see Manifest.Ref) of
	// the manifests a manifest needs before it can be applied. Load copies it into
	// Manifest.DependsOn; graph.Build honours it.
	DependsOnAnnotation = "payload.converge.dev/depends-on"
	// DeleteAnnotation set to "true" marks a manifest whose object the payload worker
	// removes, in graph order, instead of applying it (the cluster-version operator's
	// annotation); Load refuses any other value.
	DeleteAnnotation = "release.openshift.io/delete"
)

// Manifest is one object of a payload, as read from one document of one file. It is a
// graph.Item: its file gives its run level and component, a Job is a barrier and
// DependsOn its dependencies.
type Manifest struct {
	// File is the name of the file the manifest was read from, e.g. "0000_50_console_03_deployment.yaml".
	File string
	// Document is the 1-based position of the manifest's YAML document within File.
	Document int
	// GVK is the object's group, version and kind.
	GVK schema.GroupVersionKind
	// Object is the object itself.
	Object *unstructured.Unstructured
	// DependsOn lists the references (Ref) of manifests that must be applied first.
	DependsOn []string
	// Delete marks an object to remove instead of apply (DeleteAnnotation).
	Delete bool
}

var _ graph.Item = (*Manifest)(nil)

// jobGVK is the kind of a barrier.
var jobGVK = schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}

// Namespace returns the object's namespace ("" when cluster scoped or when there is no object).
func (m *Manifest) Namespace() string {
	if m == nil || m.Object == nil {
		return ""
	}
	return m.Object.GetNamespace()
}

// Name returns the object's name ("" when there is no object).
func (m *Manifest) Name() string {
	if m == nil || m.Object == nil {
		return ""
	}
	return m.Object.GetName()
}

// Ref names the manifest for dependencies: "Kind/namespace/name", or "Kind/name" when
// cluster scoped.
func (m *Manifest) Ref() string {
	if m == nil {
		return ""
	}
	if ns := m.Namespace(); ns != "" {
		return m.GVK.Kind + "/" + ns + "/" + m.Name()
	}
	return m.GVK.Kind + "/" + m.Name()
}

// String names the manifest in messages: `deployment "ns/name"`, the file standing for
// a name the object lacks.
func (m *Manifest) String() string {
	if m == nil {
		return ""
	}
	name := m.Name()
	if name == "" {
		name = m.File
	}
	kind := strings.ToLower(m.GVK.Kind)
	if ns := m.Namespace(); ns != "" {
		return fmt.Sprintf("%s \"%s/%s\"", kind, ns, name)
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// Place is the manifest's place in a payload: its file, the run level and component
// the file's name gives (ParseRunLevel), and whether it is a Job (batch/v1), a barrier.
func (m *Manifest) Place() graph.Place {
	if m == nil {
		return graph.Place{}
	}
	p := graph.Place{File: m.File, Barrier: m.GVK == jobGVK}
	if level, component, ok := ParseRunLevel(m.File); ok {
		p.RunLevel, p.Component = level, component
	}
	return p
}

// Dependencies returns DependsOn.
func (m *Manifest) Dependencies() []string {
	if m == nil {
		return nil
	}
	return m.DependsOn
}

// Tasks numbers manifests for graph.Build: one task per manifest, in order, whose Item
// points at the manifest in manifests.
func Tasks(manifests []Manifest) []*graph.Task {
	items := make([]graph.Item, len(manifests))
	for i := range manifests {
		items[i] = &manifests[i]
	}
	return graph.NewTasks(items)
}
