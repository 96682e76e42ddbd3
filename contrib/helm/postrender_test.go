package helmconverge_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/postrenderer"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	helmconverge "github.com/converge-dev/converge/contrib/helm"
)

// labeller is a post-renderer that sets one label on every object it
// renders, or fails with err.
type labeller struct {
	key, value string
	err        error
}

var _ postrenderer.PostRenderer = (*labeller)(nil)

func (l *labeller) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	if l.err != nil {
		return nil, l.err
	}
	out := &bytes.Buffer{}
	for _, doc := range strings.Split(in.String(), "\n---") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[l.key] = l.value
		u.SetLabels(labels)
		raw, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(raw)
	}
	return out, nil
}

// TestPostRenderersEditWhatIsApplied: the chart's post-renderers run in
// order on every install and upgrade, what they return is what is applied
// and kept (so drift sees no difference), and a post-renderer that fails
// fails the action.
func TestPostRenderersEditWhatIsApplied(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, helmconverge.Config{})
	w.settings.PostRenderers = []postrenderer.PostRenderer{
		&labeller{key: "converge.dev/post-rendered", value: "first"},
		&labeller{key: "converge.dev/post-rendered", value: "second"},
	}
	v1 := w.version(map[string]any{"replicas": 1})
	v2 := w.version(map[string]any{"replicas": 2})
	_, err := w.driver.Install(ctx, req("", v1))
	require.NoError(t, err)
	for _, obj := range []*unstructured.Unstructured{w.get(deployments, "mesh"), w.get(secrets, "mesh-db")} {
		require.NotNil(t, obj)
		assert.Equal(t, "second", obj.GetLabels()["converge.dev/post-rendered"], "%s: each post-renderer gets what the one before returned", obj.GetName())
	}
	w.rollOut()
	drifted, detail, err := w.driver.Drift(ctx, req(v1, v1))
	require.NoError(t, err)
	assert.False(t, drifted, "the revision keeps the post-rendered manifest: %s", detail)

	w.settings.PostRenderers = []postrenderer.PostRenderer{&labeller{key: "converge.dev/post-rendered", value: "upgrade"}}
	_, err = w.driver.Upgrade(ctx, req(v1, v2))
	require.NoError(t, err)
	assert.Equal(t, "upgrade", w.get(deployments, "mesh").GetLabels()["converge.dev/post-rendered"])

	w.settings.PostRenderers = []postrenderer.PostRenderer{&labeller{err: errors.New("kustomize failed")}}
	_, err = w.driver.Upgrade(ctx, req(v2, v1))
	require.ErrorContains(t, err, "post-renderer 0: kustomize failed")
	assert.Equal(t, int64(2), replicas(t, w.get(deployments, "mesh")), "nothing of the failed upgrade is applied")
}
