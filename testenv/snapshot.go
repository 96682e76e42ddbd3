package testenv

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/converge-dev/converge"
)

// Snapshot is the cluster as it was at one resource version: what a check
// reads, so that it never sees half of a change.
type Snapshot struct {
	// ResourceVersion is the version every list was read at.
	ResourceVersion string
	// Objects are the objects of each resource listed, in the order the
	// apiserver lists them (by namespace and name).
	Objects map[schema.GroupVersionResource][]unstructured.Unstructured
}

// Snapshot lists resources in namespace ("": in every namespace) at one
// resource version, straight from the apiserver, with no fault: the first
// with a consistent read, the others at its version exactly.
func (p *FaultProxy) Snapshot(ctx context.Context, namespace string, resources ...schema.GroupVersionResource) (*Snapshot, error) {
	if p == nil || p.server == nil {
		return nil, notMade()
	}
	if len(resources) == 0 {
		return nil, converge.Invalidf("testenv", "Snapshot arguments", "no resource to list")
	}
	client, err := dynamic.NewForConfig(p.upstream)
	if err != nil {
		return nil, fmt.Errorf("testenv: snapshot: %w", err)
	}
	s := &Snapshot{Objects: map[schema.GroupVersionResource][]unstructured.Unstructured{}}
	for _, gvr := range resources {
		opts := metav1.ListOptions{}
		if s.ResourceVersion != "" {
			opts.ResourceVersion, opts.ResourceVersionMatch = s.ResourceVersion, metav1.ResourceVersionMatchExact
		}
		list, err := client.Resource(gvr).Namespace(namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("testenv: snapshot of %s: %w", gvr.Resource, err)
		}
		if s.ResourceVersion == "" {
			s.ResourceVersion = list.GetResourceVersion()
		}
		s.Objects[gvr] = list.Items
	}
	return s, nil
}

// Get returns the object of resource named name in namespace, or nil.
func (s *Snapshot) Get(resource schema.GroupVersionResource, namespace, name string) *unstructured.Unstructured {
	if s == nil {
		return nil
	}
	for i, obj := range s.Objects[resource] {
		if obj.GetNamespace() == namespace && obj.GetName() == name {
			return &s.Objects[resource][i]
		}
	}
	return nil
}

// String renders the snapshot for a report: its resource version, then
// every object as YAML without its managed fields, by resource.
func (s *Snapshot) String() string {
	if s == nil {
		return "<no snapshot>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "snapshot at resourceVersion %s\n", s.ResourceVersion)
	keys := make([]schema.GroupVersionResource, 0, len(s.Objects))
	for gvr := range s.Objects {
		keys = append(keys, gvr)
	}
	slices.SortFunc(keys, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	for _, gvr := range keys {
		fmt.Fprintf(&b, "# %s: %d\n", gvr.String(), len(s.Objects[gvr]))
		for _, obj := range s.Objects[gvr] {
			obj = *obj.DeepCopy()
			obj.SetManagedFields(nil)
			y, err := yaml.Marshal(obj.Object)
			if err != nil {
				y = []byte(err.Error() + "\n")
			}
			fmt.Fprintf(&b, "---\n%s", y)
		}
	}
	return b.String()
}
