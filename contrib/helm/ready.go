package helmconverge

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The readiness verdicts of objectReady, as kube.ObjectReady will report
// them (kube.ErrNotReady and kube.ErrObjectFailed).
var (
	errNotReady     = errors.New("helm: not ready")
	errObjectFailed = errors.New("helm: object failed")
)

// objectReady judges one object by its status, with kube's readiness rules
// (kube.ObjectReady's contract): nil when ready, an error wrapping
// errNotReady while in progress, one wrapping errObjectFailed when it
// failed. Deployments, StatefulSets and DaemonSets are ready once rolled
// out, Jobs once complete (failed with a Failed condition), CRDs once
// established; any other object with a Ready condition once it is True,
// and without one at once.
func objectReady(obj *unstructured.Unstructured) error {
	if obj == nil {
		return fmt.Errorf("helm: nil object: %w", errNotReady)
	}
	gk := obj.GroupVersionKind().GroupKind()
	switch gk.Group + "/" + gk.Kind {
	case "apps/Deployment":
		return rolledOut(obj, "updatedReplicas", "availableReplicas")
	case "apps/StatefulSet":
		if err := rolledOut(obj, "updatedReplicas", "readyReplicas"); err != nil {
			return err
		}
		current, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
		update, _, _ := unstructured.NestedString(obj.Object, "status", "updateRevision")
		if update != "" && current != update {
			return notReady(obj, "revision %s not rolled out yet (at %s)", update, current)
		}
		return nil
	case "apps/DaemonSet":
		if err := generationObserved(obj); err != nil {
			return err
		}
		want := int64At(obj, "status", "desiredNumberScheduled")
		if updated, available := int64At(obj, "status", "updatedNumberScheduled"), int64At(obj, "status", "numberAvailable"); updated < want || available < want {
			return notReady(obj, "%d of %d pods updated, %d available", updated, want, available)
		}
		return nil
	case "batch/Job":
		if s, msg := condition(obj, "Failed"); s == "True" {
			return fmt.Errorf("%s failed: %s: %w", objName(obj), msg, errObjectFailed)
		}
		if s, _ := condition(obj, "Complete"); s != "True" {
			return notReady(obj, "has not completed")
		}
		return nil
	case "apiextensions.k8s.io/CustomResourceDefinition":
		if s, _ := condition(obj, "Established"); s != "True" {
			return notReady(obj, "not established")
		}
		return nil
	}
	if s, msg := condition(obj, "Ready"); s != "" && s != "True" {
		return notReady(obj, "Ready %s: %s", s, msg)
	}
	return nil
}

func rolledOut(obj *unstructured.Unstructured, updatedField, readyField string) error {
	if err := generationObserved(obj); err != nil {
		return err
	}
	want, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		want = 1
	}
	updated, ready := int64At(obj, "status", updatedField), int64At(obj, "status", readyField)
	if total := int64At(obj, "status", "replicas"); updated < want || total > updated || ready < want {
		return notReady(obj, "%d of %d replicas updated, %d %s, %d in total", updated, want, ready, readyField, total)
	}
	return nil
}

func generationObserved(obj *unstructured.Unstructured) error {
	if observed := int64At(obj, "status", "observedGeneration"); observed < obj.GetGeneration() {
		return notReady(obj, "generation %d not observed yet (at %d)", obj.GetGeneration(), observed)
	}
	return nil
}

func notReady(obj *unstructured.Unstructured, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", objName(obj), fmt.Sprintf(format, args...), errNotReady)
}

func objName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetKind() + " " + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetNamespace() + "/" + obj.GetName()
}

func int64At(obj *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(obj.Object, fields...)
	return v
}

func condition(obj *unstructured.Unstructured, condType string) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condType {
			status, _ = m["status"].(string)
			message, _ = m["message"].(string)
			return status, message
		}
	}
	return "", ""
}
