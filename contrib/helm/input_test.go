package helmconverge_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/postrenderer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

func TestNewDriverRejectsBadConfig(t *testing.T) {
	charts := func(context.Context, addon.Request) (helmconverge.Chart, error) { return helmconverge.Chart{}, nil }
	var typedNil *helmconverge.MemoryCluster
	for _, tc := range []struct {
		name string
		cfg  helmconverge.Config
		want string
	}{
		{"nothing", helmconverge.Config{}, "helm: invalid config: nil Charts; nil Cluster"},
		{"a typed-nil cluster", helmconverge.Config{Charts: charts, Cluster: typedNil}, "helm: invalid config: nil Cluster"},
		{"a negative history", helmconverge.Config{Charts: charts, Cluster: &helmconverge.MemoryCluster{}, MaxHistory: -2},
			"helm: invalid config: maxHistory -2 is below -1"},
		{"a watch without a kind", helmconverge.Config{Charts: charts, Cluster: &helmconverge.MemoryCluster{}, Watch: []schema.GroupVersionKind{{Group: "apps", Version: "v1"}}},
			`helm: invalid config: watch "apps/v1, Kind=" has no kind or version`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := helmconverge.NewDriver(tc.cfg)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tc.want)
			assert.Nil(t, d)
		})
	}
}

// TestDriverAnswersBadInputWithTypedErrors: no input makes the driver
// panic; each is an error matching converge.ErrInvalid.
func TestDriverAnswersBadInputWithTypedErrors(t *testing.T) {
	ctx := context.Background()
	var nilDriver *helmconverge.Driver
	_, err := nilDriver.Install(ctx, req("", "v1"))
	require.ErrorIs(t, err, converge.ErrInvalid)
	_, err = nilDriver.Health(ctx, req("v1", "v1"))
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.Nil(t, nilDriver.Watches())
	require.ErrorIs(t, (&helmconverge.Driver{}).Uninstall(ctx, req("v1", "")), converge.ErrInvalid, "a zero Driver")

	for _, tc := range []struct {
		name   string
		charts helmconverge.ChartFunc
		req    addon.Request
		want   string
	}{
		{name: "no chart", req: req("", "v1"),
			charts: func(context.Context, addon.Request) (helmconverge.Chart, error) { return helmconverge.Chart{}, nil },
			want:   "helm: invalid chart: the chart function gave no chart for tke/mesh at v1"},
		{name: "a chart without metadata", req: req("", "v1"),
			charts: func(context.Context, addon.Request) (helmconverge.Chart, error) {
				return helmconverge.Chart{Chart: &chart.Chart{}}, nil
			},
			want: "helm: invalid chart: the chart function gave no chart for tke/mesh at v1"},
		{name: "a chart function that panics", req: req("", "v1"),
			charts: func(context.Context, addon.Request) (helmconverge.Chart, error) { panic("boom") },
			want:   "helm: Install panicked: boom"},
		{name: "a name that is not namespace/name", req: addon.Request{Spec: addon.Spec{Name: "mesh"}, To: "v1"},
			want: `helm: invalid request: add-on name "mesh" is not namespace/name`},
		{name: "a name Helm refuses", req: addon.Request{Spec: addon.Spec{Name: "tke/Not_A_Release"}, To: "v1"},
			want: `helm: invalid request: release name "Not_A_Release"`},
		{name: "no version", req: req("", ""), want: "helm: invalid request: no version to apply"},
		{name: "unknown CRD policies and a nil post-renderer", req: req("", "v1"),
			charts: func(context.Context, addon.Request) (helmconverge.Chart, error) {
				mesh, err := helmconverge.LoadDir("testdata/mesh")
				return helmconverge.Chart{Chart: mesh, CRDs: helmconverge.CRDPolicies{Install: "Sometimes", Upgrade: "create"},
					PostRenderers: []postrenderer.PostRenderer{(*labeller)(nil)}}, err
			},
			want: `helm: invalid chart mesh: install CRD policy "Sometimes" is not Create, CreateReplace, Skip or empty; ` +
				`upgrade CRD policy "create" is not Create, CreateReplace, Skip or empty; post-renderer 0 is nil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, helmconverge.Config{Charts: tc.charts})
			_, err := w.driver.Install(ctx, tc.req)
			require.Error(t, err)
			if tc.name != "a chart function that panics" {
				require.ErrorIs(t, err, converge.ErrInvalid)
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}

	w := newWorld(t, helmconverge.Config{})
	r := req("", w.version(nil))
	r.Host = (*unstructured.Unstructured)(nil)
	_, err = w.driver.Install(ctx, r)
	require.NoError(t, err, "a typed-nil host object is the host's business")
	_, _, err = w.driver.Drift(ctx, addon.Request{})
	require.ErrorIs(t, err, converge.ErrInvalid)
	_, err = w.driver.Health(nil, req("v1", "v1")) //nolint:staticcheck // a nil context is bad input
	require.ErrorIs(t, err, converge.ErrInvalid)
}

func TestReleaseOf(t *testing.T) {
	obj := &metav1.ObjectMeta{Annotations: map[string]string{"meta.helm.sh/release-name": "mesh", "meta.helm.sh/release-namespace": "tke"}}
	ns, n, ok := helmconverge.ReleaseOf(obj)
	assert.Equal(t, []any{"tke", "mesh", true}, []any{ns, n, ok})
	_, _, ok = helmconverge.ReleaseOf(&metav1.ObjectMeta{})
	assert.False(t, ok, "an object Helm did not apply")
	_, _, ok = helmconverge.ReleaseOf((*metav1.ObjectMeta)(nil))
	assert.False(t, ok, "a typed nil")
}

func TestVersionNamesChartAndValues(t *testing.T) {
	c, err := helmconverge.LoadDir("testdata/mesh")
	require.NoError(t, err)
	a, err := helmconverge.Version(c, map[string]any{"replicas": 1, "password": "x"})
	require.NoError(t, err)
	b, err := helmconverge.Version(c, map[string]any{"password": "x", "replicas": 1})
	require.NoError(t, err)
	assert.Equal(t, a, b, "the order of keys does not matter")
	assert.Regexp(t, `^0\.1\.0\+values\.[0-9a-f]{16}$`, a)
	other, err := helmconverge.Version(c, map[string]any{"replicas": 2, "password": "x"})
	require.NoError(t, err)
	assert.NotEqual(t, a, other, "a values change is a new version")
	none, err := helmconverge.Version(c, nil)
	require.NoError(t, err)
	empty, err := helmconverge.Version(c, map[string]any{})
	require.NoError(t, err)
	assert.Equal(t, none, empty)
	_, err = helmconverge.Version(nil, nil)
	require.ErrorIs(t, err, converge.ErrInvalid)
	_, err = helmconverge.Version(c, map[string]any{"f": func() {}})
	require.ErrorIs(t, err, converge.ErrInvalid)
}

func TestLoadChartFromFSAndArchive(t *testing.T) {
	dir, err := helmconverge.LoadDir("testdata/mesh")
	require.NoError(t, err)
	fromFS, err := helmconverge.LoadFS(os.DirFS("testdata"), "mesh")
	require.NoError(t, err)
	assert.Equal(t, dir.Metadata, fromFS.Metadata)
	assert.Len(t, fromFS.Templates, len(dir.Templates))
	assert.Equal(t, dir.Values, fromFS.Values)

	f, err := os.Open("testdata/mesh-0.1.0.tgz")
	require.NoError(t, err)
	defer f.Close()
	fromArchive, err := helmconverge.LoadArchive(f)
	require.NoError(t, err)
	assert.Equal(t, dir.Metadata, fromArchive.Metadata)
	assert.Len(t, fromArchive.Templates, len(dir.Templates))

	_, err = helmconverge.LoadFS(nil, "mesh")
	require.ErrorIs(t, err, converge.ErrInvalid)
	_, err = helmconverge.LoadFS(os.DirFS("testdata"), "missing")
	require.Error(t, err)
	_, err = helmconverge.LoadDir("testdata/missing")
	require.Error(t, err)
	_, err = helmconverge.LoadArchive(errReader{})
	require.Error(t, err)
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("unreadable") }
