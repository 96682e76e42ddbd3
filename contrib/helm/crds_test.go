package helmconverge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

var crds = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// withCRD returns a copy of c whose CRDs have each old string of oldnew
// replaced by the new one that follows it.
func withCRD(t *testing.T, c *chart.Chart, oldnew ...string) *chart.Chart {
	t.Helper()
	r := strings.NewReplacer(oldnew...)
	out := *c
	out.Files = nil
	for _, f := range c.Files {
		if strings.HasPrefix(f.Name, "crds/") {
			f = &common.File{Name: f.Name, ModTime: f.ModTime, Data: []byte(r.Replace(string(f.Data)))}
		}
		out.Files = append(out.Files, f)
	}
	return &out
}

// TestCRDPolicies: Create installs a chart's missing CRDs and never changes
// them (Helm's rule); CreateReplace creates and replaces them on install and
// upgrade; Skip leaves them to the host.
func TestCRDPolicies(t *testing.T) {
	ctx := context.Background()
	widgets, err := helmconverge.LoadDir("testdata/widgets")
	require.NoError(t, err)
	for _, tc := range []struct {
		policy       helmconverge.CRDPolicy
		afterInstall string // the CRD's schema label after the install; "" when absent
		afterUpgrade string
	}{
		{policy: helmconverge.CRDsCreate, afterInstall: "v1", afterUpgrade: "v1"},
		{policy: helmconverge.CRDsCreateReplace, afterInstall: "v1", afterUpgrade: "v2"},
		{policy: helmconverge.CRDsSkip},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			mapper := meta.NewDefaultRESTMapper(nil)
			mapper.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
			mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
			objects := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
				crds: "CustomResourceDefinitionList", secrets: "SecretList",
			})
			charts := map[string]*chart.Chart{"v1": widgets, "v2": withCRD(t, widgets, "schema: v1", "schema: v2")}
			d, err := helmconverge.NewDriver(helmconverge.Config{
				Cluster: helmconverge.NewMemoryCluster(objects, mapper), CRDs: tc.policy,
				Charts: func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
					return helmconverge.Chart{Chart: charts[req.To]}, nil
				},
			})
			require.NoError(t, err)
			label := func() string {
				crd, err := objects.Resource(crds).Get(ctx, "widgets.example.converge.dev", metav1.GetOptions{})
				if err != nil {
					return ""
				}
				return crd.GetLabels()["schema"]
			}
			_, err = d.Install(ctx, req("", "v1"))
			require.NoError(t, err)
			assert.Equal(t, tc.afterInstall, label(), "after the install")
			_, err = d.Upgrade(ctx, req("v1", "v2"))
			require.NoError(t, err)
			assert.Equal(t, tc.afterUpgrade, label(), "after the upgrade")
		})
	}
}
