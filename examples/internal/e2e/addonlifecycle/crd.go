package addonlifecycle

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
)

// AddonResource is the Addon custom resource: one object per add-on,
// spec.version says which version to run, and the status subresource holds
// the engine's addon.Status.
var (
	AddonResource = schema.GroupVersionResource{Group: "converge.dev", Version: "v1alpha1", Resource: "addons"}
	crdGVR        = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

const (
	addonKind = "Addon"
	crdName   = "addons.converge.dev"
)

// Finalizer holds an Addon until its objects are uninstalled.
const Finalizer = "addons.converge.dev/uninstall"

// addonCRD is the CustomResourceDefinition of Addon, as unstructured data so
// that the example needs no apiextensions client. The status schema types
// the fields kubectl shows and keeps the rest of addon.Status as it is.
func addonCRD() *unstructured.Unstructured {
	str := map[string]any{"type": "string"}
	integer := map[string]any{"type": "integer", "format": "int64"}
	column := func(name, typ, path string) map[string]any {
		return map[string]any{"name": name, "type": typ, "jsonPath": path}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crdName},
		"spec": map[string]any{
			"group": AddonResource.Group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": AddonResource.Resource, "singular": "addon", "kind": addonKind, "listKind": addonKind + "List"},
			"versions": []any{map[string]any{
				"name": AddonResource.Version, "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"additionalPrinterColumns": []any{
					column("Version", "string", ".spec.version"),
					column("Phase", "string", ".status.phase"),
					column("Installed", "string", ".status.installedVersion"),
					column("Ready", "string", `.status.conditions[?(@.type=="Ready")].status`),
					column("Age", "date", ".metadata.creationTimestamp"),
				},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type":     "object",
							"required": []any{"version"},
							"properties": map[string]any{
								"version": map[string]any{"type": "string", "minLength": int64(1), "description": "The add-on version to run."},
							},
						},
						"status": map[string]any{
							"type":                                 "object",
							"description":                          "The addon engine's Status.",
							"x-kubernetes-preserve-unknown-fields": true,
							"properties": map[string]any{
								"phase": str, "reason": str, "message": str,
								"installedVersion": str, "lastGoodVersion": str, "failedVersion": str,
								"observedGeneration": integer,
								"conditions": map[string]any{
									"type": "array",
									"items": map[string]any{
										"type":                                 "object",
										"x-kubernetes-preserve-unknown-fields": true,
										"required":                             []any{"type", "status"},
										"properties":                           map[string]any{"type": str, "status": str},
									},
									"x-kubernetes-list-type":     "map",
									"x-kubernetes-list-map-keys": []any{"type"},
								},
							},
						},
					},
				}},
			}},
		},
	}}
}

// installCRD creates or updates the Addon CRD and waits, until ctx ends,
// for the apiserver to serve it (its Established condition).
func installCRD(ctx context.Context, client dynamic.Interface) error {
	crds := client.Resource(crdGVR)
	want := addonCRD()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = crds.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cur.Object["spec"] = want.Object["spec"]
		_, err = crds.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("install CRD %s: %w", crdName, err)
	}
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cur, err := crds.Get(ctx, crdName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return established(cur), nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not established: %w", crdName, err)
	}
	return nil
}

// established reports whether crd's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
