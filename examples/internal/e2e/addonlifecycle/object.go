package addonlifecycle

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
)

// The annotations that request a reset or a forced re-apply, as Flux's
// reconcile.fluxcd.io/resetAt and forceAt: any new value is one request.
const (
	resetAnnotation = "addons.converge.dev/reset-at"
	forceAnnotation = "addons.converge.dev/force-at"
)

// SpecOf reads the engine's Spec from an Addon object: kube.DefaultAddonSpec
// with the example's reset and force annotations.
func SpecOf(obj *unstructured.Unstructured) addon.Spec {
	spec := kube.DefaultAddonSpec(obj)
	spec.ResetToken = obj.GetAnnotations()[resetAnnotation]
	spec.ForceToken = obj.GetAnnotations()[forceAnnotation]
	return spec
}

// statusOf reads the engine's Status from an Addon object (zero when it has
// none yet) through JSON, as kube.AddonObjects does, so that it reads what
// kube.AddonObjects wrote whatever its numbers' Go types.
func statusOf(obj *unstructured.Unstructured) (addon.Status, error) {
	var st addon.Status
	m, ok, err := unstructured.NestedFieldNoCopy(obj.Object, "status")
	if err != nil || !ok {
		return st, err
	}
	b, err := json.Marshal(m)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil {
		return st, fmt.Errorf("status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return st, nil
}

// hasFinalizer reports whether obj carries the example's finalizer.
func hasFinalizer(obj metav1.Object) bool {
	for _, f := range obj.GetFinalizers() {
		if f == Finalizer {
			return true
		}
	}
	return false
}
