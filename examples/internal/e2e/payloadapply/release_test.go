//go:build !integration

package payloadapply

import (
	"bytes"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/graph"
	"github.com/converge-dev/converge/payload/manifest"
)

func TestPrintPlan(t *testing.T) {
	manifests, _ := loadExample(t)
	tests := []struct {
		format string
		want   []string
	}{
		{"text", []string{
			"node 1: 0 tasks\n",
			`0000_30_config_00_migrate-job.yaml job "converge-payload-demo/schema-migrate" (13 of 30)`,
			"node 10: 40-web, 2 tasks, after 2, 8\n", // the web Deployment depends on the api Service
		}},
		{"mermaid", []string{"flowchart TD\n", "30-config, 1 task"}},
		{"dot", []string{"digraph tasks {\n", `[ label="10-config, 4 tasks" shape="box" ];`}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, PrintPlan(&out, manifests, tt.format))
			for _, want := range tt.want {
				assert.Contains(t, out.String(), want)
			}
		})
	}
	require.Error(t, PrintPlan(&bytes.Buffer{}, manifests, "svg"))
}

func TestStampRelease(t *testing.T) {
	manifests, _ := loadExample(t)
	stamped := StampRelease(manifests, "2.0.0")
	require.Len(t, stamped, len(manifests))
	for i, m := range stamped {
		assert.Equal(t, "2.0.0", m.Object.GetAnnotations()[ReleaseAnnotation], m.Ref())
		assert.NotContains(t, manifests[i].Object.GetAnnotations(), ReleaseAnnotation, "the loaded manifest was changed")
		assert.Equal(t, manifests[i].DependsOn, m.DependsOn)
	}
	web := stamped[slices.IndexFunc(stamped, func(m manifest.Manifest) bool { return m.Ref() == "Deployment/converge-payload-demo/web" })]
	assert.Equal(t, "Service/converge-payload-demo/api", web.Object.GetAnnotations()[manifest.DependsOnAnnotation], "other annotations are kept")
}

func TestReleasePayloadKeepsFileOrder(t *testing.T) {
	manifests, removals := loadExample(t)
	p := ReleasePayload(manifests, removals, payload.Release{Version: "1.0.0"})
	require.Len(t, p.Manifests, 31)
	assert.True(t, slices.IsSortedFunc(p.Manifests, func(a, b manifest.Manifest) int { return manifest.CompareFiles(a.File, b.File) }))
	_, err := graph.Build(manifest.Tasks(p.Manifests), graph.OrderRunLevels)
	require.NoError(t, err)
}
