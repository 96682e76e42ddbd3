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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
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

// withGadgets returns a copy of c with a second CRD, gadgets, beside
// widgets, of the same schema label.
func withGadgets(c *chart.Chart) *chart.Chart {
	out := *c
	out.Files = append([]*common.File(nil), c.Files...)
	for _, f := range c.Files {
		if f.Name == "crds/widgets.yaml" {
			out.Files = append(out.Files, &common.File{Name: "crds/gadgets.yaml", ModTime: f.ModTime,
				Data: []byte(strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget").Replace(string(f.Data)))})
		}
	}
	return &out
}

// withFailingTemplate returns a copy of c whose render fails.
func withFailingTemplate(c *chart.Chart) *chart.Chart {
	out := *c
	out.Templates = append(append([]*common.File(nil), c.Templates...),
		&common.File{Name: "templates/fail.yaml", Data: []byte(`{{ fail "this chart does not render" }}`)})
	return &out
}

// crdWorld is a memory cluster with CRDs and Secrets, and a driver whose
// versions are charts.
func crdWorld(t *testing.T, policies helmconverge.CRDPolicies, charts map[string]*chart.Chart) (*helmconverge.Driver, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	objects := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		crds: "CustomResourceDefinitionList", secrets: "SecretList",
	})
	d, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: helmconverge.NewMemoryCluster(objects, mapper),
		Charts: func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
			return helmconverge.Chart{Chart: charts[req.To], CRDs: policies}, nil
		},
	})
	require.NoError(t, err)
	return d, objects
}

// schemaOf reads the schema label of CRD name; "" when there is no CRD.
func schemaOf(t *testing.T, objects dynamic.Interface, name string) string {
	t.Helper()
	crd, err := objects.Resource(crds).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return crd.GetLabels()["schema"]
}

// TestCRDPolicies: the install's policy applies to an install, the
// upgrade's to an upgrade, with Flux's defaults (Create on install, Skip on
// upgrade). Create creates the chart's missing CRDs and changes none that
// exist; CreateReplace creates and replaces; Skip leaves them to the host.
// The upgrade changes widgets' schema and adds gadgets.
func TestCRDPolicies(t *testing.T) {
	ctx := context.Background()
	widgets, err := helmconverge.LoadDir("testdata/widgets")
	require.NoError(t, err)
	const w, g = "widgets.example.converge.dev", "gadgets.example.converge.dev"
	for _, tc := range []struct {
		name     string
		policies helmconverge.CRDPolicies
		// The schema labels of widgets and gadgets after the install and
		// after the upgrade; "" when absent.
		afterInstall, afterUpgrade [2]string
	}{
		{name: "the defaults create on install and skip on upgrade",
			afterInstall: [2]string{"v1", ""}, afterUpgrade: [2]string{"v1", ""}},
		{name: "Create on upgrade creates the new CRD and leaves the old",
			policies:     helmconverge.CRDPolicies{Install: helmconverge.CRDsCreate, Upgrade: helmconverge.CRDsCreate},
			afterInstall: [2]string{"v1", ""}, afterUpgrade: [2]string{"v1", "v2"}},
		{name: "CreateReplace on upgrade creates and replaces",
			policies:     helmconverge.CRDPolicies{Install: helmconverge.CRDsCreateReplace, Upgrade: helmconverge.CRDsCreateReplace},
			afterInstall: [2]string{"v1", ""}, afterUpgrade: [2]string{"v2", "v2"}},
		{name: "Skip on install and CreateReplace on upgrade",
			policies:     helmconverge.CRDPolicies{Install: helmconverge.CRDsSkip, Upgrade: helmconverge.CRDsCreateReplace},
			afterInstall: [2]string{"", ""}, afterUpgrade: [2]string{"v2", "v2"}},
		{name: "Skip on both",
			policies: helmconverge.CRDPolicies{Install: helmconverge.CRDsSkip, Upgrade: helmconverge.CRDsSkip}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, objects := crdWorld(t, tc.policies, map[string]*chart.Chart{
				"v1": widgets, "v2": withGadgets(withCRD(t, widgets, "schema: v1", "schema: v2")),
			})
			_, err = d.Install(ctx, req("", "v1"))
			require.NoError(t, err)
			assert.Equal(t, tc.afterInstall, [2]string{schemaOf(t, objects, w), schemaOf(t, objects, g)}, "after the install")
			_, err = d.Upgrade(ctx, req("v1", "v2"))
			require.NoError(t, err)
			assert.Equal(t, tc.afterUpgrade, [2]string{schemaOf(t, objects, w), schemaOf(t, objects, g)}, "after the upgrade")
		})
	}
}

// TestCRDsFollowTheRender: the chart is rendered before any CRD is applied,
// so an install or upgrade whose render fails creates and replaces no CRD;
// and a CRD that existed before the release is never deleted, not by the
// failure, not by an uninstall.
func TestCRDsFollowTheRender(t *testing.T) {
	ctx := context.Background()
	widgets, err := helmconverge.LoadDir("testdata/widgets")
	require.NoError(t, err)
	const w, g = "widgets.example.converge.dev", "gadgets.example.converge.dev"
	replace := helmconverge.CRDPolicies{Install: helmconverge.CRDsCreateReplace, Upgrade: helmconverge.CRDsCreateReplace}
	v2 := withGadgets(withCRD(t, widgets, "schema: v1", "schema: v2"))
	d, objects := crdWorld(t, replace, map[string]*chart.Chart{
		"broken": withFailingTemplate(v2), "v1": widgets, "broken-v2": withFailingTemplate(v2),
	})

	_, err = d.Install(ctx, req("", "broken"))
	require.ErrorContains(t, err, "this chart does not render")
	assert.Equal(t, [2]string{"", ""}, [2]string{schemaOf(t, objects, w), schemaOf(t, objects, g)}, "a failed render creates no CRD")

	existing := &unstructured.Unstructured{}
	existing.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	existing.SetName(w)
	existing.SetLabels(map[string]string{"schema": "host"})
	_, err = objects.Resource(crds).Create(ctx, existing, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = d.Install(ctx, req("", "v1"))
	require.NoError(t, err)
	assert.Equal(t, "v1", schemaOf(t, objects, w), "CreateReplace takes over the host's CRD")

	_, err = d.Upgrade(ctx, req("v1", "broken-v2"))
	require.ErrorContains(t, err, "this chart does not render")
	assert.Equal(t, [2]string{"v1", ""}, [2]string{schemaOf(t, objects, w), schemaOf(t, objects, g)}, "a failed render replaces and creates no CRD")

	require.NoError(t, d.Uninstall(ctx, req("v1", "v1")))
	assert.Equal(t, "v1", schemaOf(t, objects, w), "an uninstall deletes no CRD")
}
