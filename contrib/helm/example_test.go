package helmconverge_test

import (
	"context"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// memoryCluster is an in-memory cluster with the test chart's kinds.
func memoryCluster() (*helmconverge.MemoryCluster, *dynamicfake.FakeDynamicClient) {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "Pod"}} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	objects := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		deployments: "DeploymentList", secrets: "SecretList", pods: "PodList",
	})
	return helmconverge.NewMemoryCluster(objects, mapper), objects
}

// A driver installs the test chart on an in-memory cluster, upgrades it to
// new values and rolls back to the revision that carried the first ones.
func ExampleDriver() {
	cluster, _ := memoryCluster()
	chart, err := helmconverge.LoadDir("testdata/mesh")
	if err != nil {
		fmt.Println(err)
		return
	}
	one, two := map[string]any{"replicas": 1}, map[string]any{"replicas": 2}
	v1, _ := helmconverge.Version(chart, one)
	v2, _ := helmconverge.Version(chart, two)
	driver, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: cluster,
		Charts: func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
			if req.To == v2 {
				return helmconverge.Chart{Chart: chart, Values: two}, nil
			}
			return helmconverge.Chart{Chart: chart, Values: one}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	spec := addon.Spec{Name: "tke/mesh", Generation: 1, Version: v1}
	installed, err := driver.Install(ctx, addon.Request{Spec: spec, To: v1})
	fmt.Println("install of", v1, "is revision", installed, err)
	upgraded, err := driver.Upgrade(ctx, addon.Request{Spec: spec, From: v1, To: v2})
	fmt.Println("upgrade to", v2, "is revision", upgraded, err)
	rolledBack, err := driver.Upgrade(ctx, addon.Request{Spec: spec, From: v2, To: v1, Rollback: true, Revision: installed})
	fmt.Println("rollback to revision", installed, "is revision", rolledBack, err)
	// Output:
	// install of 0.1.0+values.cf528d468fef72e7 is revision 1 <nil>
	// upgrade to 0.1.0+values.7beb3ba39c1d7ed5 is revision 2 <nil>
	// rollback to revision 1 is revision 3 <nil>
}

// Each add-on's settings ride on its Chart, as a HelmRelease's would: here
// an HPA owns the Deployment's replicas, so drift ignores them, the
// chart's CRDs are replaced on upgrade too, and the release's records are
// kept in a storage namespace apart (the Release).
func ExampleChart() {
	cluster, objects := memoryCluster()
	chart, err := helmconverge.LoadDir("testdata/mesh")
	if err != nil {
		fmt.Println(err)
		return
	}
	values := map[string]any{"replicas": 2}
	v1, _ := helmconverge.Version(chart, values)
	driver, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: cluster,
		Release: func(addon.Request) (helmconverge.Release, error) {
			return helmconverge.Release{Namespace: "tke", Name: "mesh", StorageNamespace: "helm-system"}, nil
		},
		Charts: func(context.Context, addon.Request) (helmconverge.Chart, error) {
			return helmconverge.Chart{
				Chart: chart, Values: values,
				DriftIgnore: []helmconverge.IgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}}},
				CRDs:        helmconverge.CRDPolicies{Upgrade: helmconverge.CRDsCreateReplace},
			}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	req := addon.Request{Spec: addon.Spec{Name: "tke/mesh", Generation: 1, Version: v1}, From: v1, To: v1}
	_, err = driver.Install(ctx, req)
	fmt.Println("installed:", err)

	// The HPA scales the Deployment.
	dep, _ := objects.Resource(deployments).Namespace("tke").Get(ctx, "mesh", metav1.GetOptions{})
	_ = unstructured.SetNestedField(dep.Object, int64(5), "spec", "replicas")
	_, _ = objects.Resource(deployments).Namespace("tke").Update(ctx, dep, metav1.UpdateOptions{})
	drifted, detail, err := driver.Drift(ctx, req)
	fmt.Printf("drifted: %v %q %v\n", drifted, detail, err)

	cfg, _ := cluster.Helm("helm-system", "tke", nil)
	history, _ := action.NewHistory(cfg).Run("mesh")
	fmt.Println("revisions kept in helm-system:", len(history))
	// Output:
	// installed: <nil>
	// drifted: false "" <nil>
	// revisions kept in helm-system: 1
}
