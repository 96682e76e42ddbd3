package helmconverge_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
	"github.com/converge-dev/converge/testenv/standin"
)

// The kinds of the test chart.
var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	pods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	namespaces  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// errHookExited is how a hook pod annotated with a non-zero simulated exit
// code ends on the memory cluster.
var errHookExited = errors.New("pod exited 1")

// world is a memory cluster with the test chart's kinds, and a driver on it
// whose versions are mesh's chart with the values of each version.
type world struct {
	t       *testing.T
	objects *dynamicfake.FakeDynamicClient
	cluster *helmconverge.MemoryCluster
	driver  *helmconverge.Driver
	chart   *chart.Chart
	values  map[string]map[string]any
	// settings are the per add-on settings (all but Chart and Values) the
	// chart function returns with every version.
	settings helmconverge.Chart
}

func newWorld(t *testing.T, cfg helmconverge.Config) *world {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	objects := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		deployments: "DeploymentList", secrets: "SecretList", pods: "PodList", namespaces: "NamespaceList",
	})
	w := &world{t: t, objects: objects, cluster: helmconverge.NewMemoryCluster(objects, mapper), values: map[string]map[string]any{}}
	w.cluster.Hook = func(obj *unstructured.Unstructured) error {
		if obj.GetAnnotations()["converge.dev/simulated-exit-code"] != "0" {
			return errHookExited
		}
		return nil
	}
	c, err := helmconverge.LoadDir("testdata/mesh")
	require.NoError(t, err)
	w.chart = c
	cfg.Cluster = w.cluster
	if cfg.Charts == nil {
		cfg.Charts = func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
			values, ok := w.values[req.To]
			if !ok {
				return helmconverge.Chart{}, errors.New("no such version")
			}
			ch := w.settings
			ch.Chart, ch.Values = w.chart, values
			return ch, nil
		}
	}
	w.driver, err = helmconverge.NewDriver(cfg)
	require.NoError(t, err)
	return w
}

// version registers values as a version of the chart and returns it.
func (w *world) version(values map[string]any) string {
	w.t.Helper()
	v, err := helmconverge.Version(w.chart, values)
	require.NoError(w.t, err)
	w.values[v] = values
	return v
}

// name is the add-on every test drives: release "mesh" in namespace "tke".
var name = addon.Spec{Name: "tke/mesh", Generation: 1}

func req(from, to string) addon.Request {
	spec := name
	spec.Version = to
	return addon.Request{Spec: spec, From: from, To: to}
}

// get reads an object the release applied; nil when it is gone.
func (w *world) get(gvr schema.GroupVersionResource, n string) *unstructured.Unstructured {
	w.t.Helper()
	obj, err := w.objects.Resource(gvr).Namespace("tke").Get(context.Background(), n, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return obj
}

// rolledOutAt is when the simulated deployment controller says a rollout
// finished.
var rolledOutAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rollOut writes the status a deployment controller writes once the
// Deployment's pods run.
func (w *world) rollOut() {
	w.t.Helper()
	require.NotNil(w.t, w.get(deployments, "mesh"))
	require.NoError(w.t, standin.RollOutAll(context.Background(), w.objects, "tke", rolledOutAt))
}

// releases returns the release's revisions, oldest first.
func (w *world) releases() []*release.Release {
	w.t.Helper()
	cfg, err := w.cluster.Helm("tke", "tke", nil)
	require.NoError(w.t, err)
	h, err := action.NewHistory(cfg).Run("mesh")
	if err != nil {
		return nil
	}
	var out []*release.Release
	for _, r := range h {
		out = append(out, r.(*release.Release))
	}
	slices.SortFunc(out, func(a, b *release.Release) int { return a.Version - b.Version })
	return out
}

// statuses lists each revision's number and status, oldest first.
func (w *world) statuses() []string {
	var out []string
	for _, r := range w.releases() {
		out = append(out, r.Info.Status.String())
	}
	return out
}
