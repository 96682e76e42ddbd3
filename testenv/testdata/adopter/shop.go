// Package shop is an operator that adopts converge, as small as one can be:
// its reconciler applies the shop's settings with kube.Applier and waits for
// them to be ready. TestAdopterModuleRunsTestenvFromTheModuleZip (package
// testenv) runs its test from a module that requires converge by version.
package shop

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// Reconcile applies the ConfigMap shop-settings in namespace with the given
// level, and returns nil once kube judges it ready.
func Reconcile(ctx context.Context, cfg *rest.Config, namespace, level string) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	applier, err := kube.NewApplier(kube.ApplierConfig{
		Client: client, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), FieldManager: "shop",
	})
	if err != nil {
		return err
	}
	settings := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "shop-settings", "namespace": namespace},
		"data":     map[string]any{"level": level},
	}}
	m := &manifest.Manifest{File: "shop-settings.yaml", Document: 1, GVK: settings.GroupVersionKind(), Object: settings}
	if err := applier.Apply(ctx, m, payload.StateReconciling); err != nil {
		return err
	}
	return applier.Ready(ctx, m)
}
