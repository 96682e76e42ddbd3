package helmconverge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/converge-dev/converge/addon"
)

// maxDriftObjects bounds the objects a drift detail names.
const maxDriftObjects = 5

// Drift dry-runs a server-side apply of every object of the deployed
// revision, as Helm's field manager and taking over conflicting fields (what
// a re-apply does), and reports drift when an object is missing or the
// apply would change it (Flux's helm-controller's drift detection), outside
// the fields the installed version's Chart.DriftIgnore rules ignore. The
// detail names the objects and the fields that differ, never a value. A
// release that is not deployed has no drift to report: Health says it is
// unhealthy.
func (d *Driver) Drift(ctx context.Context, req addon.Request) (_ bool, _ string, err error) {
	defer guard("Drift", &err)
	c, err := d.begin(ctx, req)
	if err != nil {
		return false, "", err
	}
	rel, err := c.deployed(req.From)
	if errors.Is(err, errUnhealthy) || (err == nil && rel == nil) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	installed := req
	installed.To = req.From
	ch, err := d.chart(ctx, installed)
	if err != nil {
		return false, "", err
	}
	ignored, _ := parseIgnoreRules(ch.DriftIgnore)
	objs, err := c.objects(rel)
	if err != nil {
		return false, "", err
	}
	var drifted []string
	for _, info := range objs {
		what, err := c.driftOf(info, ignored)
		if err != nil {
			return false, "", err
		}
		if what != "" {
			drifted = append(drifted, infoName(info)+": "+what)
		}
	}
	if len(drifted) == 0 {
		return false, "", nil
	}
	sort.Strings(drifted)
	detail := strings.Join(drifted[:min(len(drifted), maxDriftObjects)], "; ")
	if n := len(drifted) - maxDriftObjects; n > 0 {
		detail += fmt.Sprintf("; and %d more", n)
	}
	return true, detail, nil
}

// driftOf says how info's object drifted ("missing", or the fields that
// changed), "" when it did not, outside the fields ignored.
func (c *call) driftOf(info *resource.Info, ignored ignoredFields) (string, error) {
	desired, err := markReleased(info, c.name, c.namespace)
	if err != nil {
		return "", c.fail("drift of "+infoName(info), err)
	}
	ignored.strip(desired)
	live, err := c.read(info)
	if apierrors.IsNotFound(err) {
		return "missing", nil
	}
	if err != nil {
		return "", c.fail("read "+infoName(info), err)
	}
	applied, err := c.dryRunApply(info, live)
	if err != nil {
		return "", c.fail("dry-run apply of "+infoName(info), err)
	}
	ignored.strip(live)
	ignored.strip(applied)
	if paths := changedPaths(live.Object, applied.Object, nil); len(paths) > 0 {
		return strings.Join(paths, ", ") + " changed", nil
	}
	return "", nil
}

// markReleased sets the label and annotations Helm puts on every object it
// applies, so that the dry-run compares what Helm would apply, and returns
// the object.
func markReleased(info *resource.Info, name, namespace string) (*unstructured.Unstructured, error) {
	u, ok := info.Object.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("helm: %s is %T, not unstructured", infoName(info), info.Object)
	}
	labels := u.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["app.kubernetes.io/managed-by"] = "Helm"
	u.SetLabels(labels)
	annotations := u.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[releaseNameAnnotation], annotations[releaseNamespaceAnnotation] = name, namespace
	u.SetAnnotations(annotations)
	return u, nil
}

// dryRunner is a kube client that dry-runs applies itself (MemoryCluster's).
type dryRunner interface {
	dryRunApply(info *resource.Info, live *unstructured.Unstructured) (*unstructured.Unstructured, error)
}

// dryRunApply returns what a server-side apply of info would make of live.
func (c *call) dryRunApply(info *resource.Info, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if dr, ok := c.cfg.KubeClient.(dryRunner); ok {
		return dr.dryRunApply(info, live)
	}
	data, err := runtime.Encode(unstructured.UnstructuredJSONScheme, info.Object)
	if err != nil {
		return nil, err
	}
	force := true
	obj, err := resource.NewHelper(info.Client, info.Mapping).DryRun(true).WithFieldManager(fieldManager()).
		Patch(info.Namespace, info.Name, types.ApplyPatchType, data, &metav1.PatchOptions{Force: &force})
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("helm: dry-run of %s returned %T", infoName(info), obj)
	}
	return u, nil
}

// fieldManager is the field manager Helm applies as (kube's rule).
func fieldManager() string {
	if kube.ManagedFieldsManager != "" {
		return kube.ManagedFieldsManager
	}
	if os.Args[0] == "" {
		return "unknown"
	}
	return filepath.Base(os.Args[0])
}

// ignoredPaths change on every write and say nothing about drift.
var ignoredPaths = []string{"metadata.managedFields", "metadata.resourceVersion", "metadata.generation"}

// changedPaths lists the paths (at most three deep, sorted) where b
// differs from a, skipping ignoredPaths.
func changedPaths(a, b map[string]any, prefix []string) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for k := range keys {
		path := append(slices.Clone(prefix), k)
		joined := strings.Join(path, ".")
		if slices.Contains(ignoredPaths, joined) {
			continue
		}
		va, vb := a[k], b[k]
		if reflect.DeepEqual(va, vb) {
			continue
		}
		ma, okA := va.(map[string]any)
		mb, okB := vb.(map[string]any)
		if okA && okB && len(path) < 3 {
			out = append(out, changedPaths(ma, mb, path)...)
			continue
		}
		out = append(out, joined)
	}
	sort.Strings(out)
	return out
}

// dryRunApply applies info's fields over live, as a forced server-side
// apply would: every field the manifest sets takes its value, lists whole.
func (k *memoryKube) dryRunApply(info *resource.Info, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	desired, err := object(info)
	if err != nil {
		return nil, err
	}
	out := live.DeepCopy()
	mergeInto(out.Object, desired.Object)
	return out, nil
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = runtime.DeepCopyJSONValue(v)
	}
}
