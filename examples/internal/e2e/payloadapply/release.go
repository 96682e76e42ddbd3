package payloadapply

import (
	"fmt"
	"io"
	"io/fs"
	"slices"

	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

// ReleaseAnnotation carries the release version on every object, so that a new release
// changes every object.
const ReleaseAnnotation = "payload-apply.converge.dev/release"

// Load loads the manifests the payload applies (directory manifests of fsys) and the
// ones it removes (directory removed, marked release.openshift.io/delete).
func Load(fsys fs.FS) (manifests, removals []manifest.Manifest, err error) {
	if manifests, err = loadDir(fsys, "manifests"); err != nil {
		return nil, nil, err
	}
	if removals, err = loadDir(fsys, "removed"); err != nil {
		return nil, nil, err
	}
	return manifests, removals, nil
}

func loadDir(fsys fs.FS, dir string) ([]manifest.Manifest, error) {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, err
	}
	return manifest.Load(sub, manifest.Options{})
}

// ReleasePayload is the payload of a release: the manifests stamped with its version,
// and the removals, in file order.
func ReleasePayload(manifests, removals []manifest.Manifest, release payload.Release) *payload.Payload {
	all := append(StampRelease(manifests, release.Version), removals...)
	slices.SortStableFunc(all, func(a, b manifest.Manifest) int { return manifest.CompareFiles(a.File, b.File) })
	return &payload.Payload{Release: release, Manifests: all}
}

// StampRelease returns copies of manifests annotated with the release version.
func StampRelease(manifests []manifest.Manifest, version string) []manifest.Manifest {
	stamped := make([]manifest.Manifest, len(manifests))
	for i, m := range manifests {
		m.Object = m.Object.DeepCopy()
		annotations := m.Object.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[ReleaseAnnotation] = version
		m.Object.SetAnnotations(annotations)
		stamped[i] = m
	}
	return stamped
}

// PrintPlan prints the graph the worker runs while updating manifests.
func PrintPlan(out io.Writer, manifests []manifest.Manifest, format string) error {
	plan, err := graph.Build(manifest.Tasks(manifests), graph.OrderRunLevels)
	if err != nil {
		return err
	}
	switch format {
	case "text":
		fmt.Fprint(out, plan)
	case "mermaid":
		fmt.Fprint(out, plan.Mermaid())
	case "dot":
		fmt.Fprint(out, plan.DOT())
	default:
		return fmt.Errorf("unknown plan format %q (want text, mermaid or dot)", format)
	}
	return nil
}
