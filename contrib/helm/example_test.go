package helmconverge_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// A driver installs the test chart on an in-memory cluster, upgrades it to
// new values and rolls back to the revision that carried the first ones.
func ExampleDriver() {
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{{Group: "apps", Version: "v1", Kind: "Deployment"}, {Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "Pod"}} {
		mapper.Add(gvk, meta.RESTScopeNamespace)
	}
	objects := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		deployments: "DeploymentList", secrets: "SecretList", pods: "PodList",
	})
	chart, err := helmconverge.LoadDir("testdata/mesh")
	if err != nil {
		fmt.Println(err)
		return
	}
	one, two := map[string]any{"replicas": 1}, map[string]any{"replicas": 2}
	v1, _ := helmconverge.Version(chart, one)
	v2, _ := helmconverge.Version(chart, two)
	driver, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: helmconverge.NewMemoryCluster(objects, mapper),
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
