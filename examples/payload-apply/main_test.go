//go:build !integration

package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/converge-dev/converge/payload"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunInMemory(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), options{release: "1.0.0", namespace: "default"}, &out))
	text := out.String()
	assert.Contains(t, text, "applying 30 manifests to an in-memory cluster")
	assert.Equal(t, 2, strings.Count(text, "attempt failed: ConfigMap/converge-payload-demo/web-settings"), text)
	assert.Contains(t, text, "apply (Initializing) done: 31/31 manifests, completed 1 time(s), next in 3m0s")
	assert.Contains(t, text, "apply (Reconciling) done: 31/31 manifests, completed 2 time(s)")
	assert.Contains(t, text, `waiting for Job/converge-payload-demo/schema-migrate to be ready: job converge-payload-demo/schema-migrate: the job has not completed yet`,
		"the worker waits for the Job before the next run level")
	assert.Contains(t, text, `event: Normal ManifestsDeleted: Deleted 1 objects of 1.0.0: configmap "converge-payload-demo/legacy-settings"`)
	assert.Contains(t, text, "30 of 30 objects are in the cluster")
	assert.Contains(t, text, "ConfigMap web-settings was accepted on attempt 3")
	assert.Contains(t, text, "progress: ")
}

func TestPrintPlan(t *testing.T) {
	tests := []struct {
		format string
		want   []string
	}{
		{"text", []string{
			"node 1: 0 manifests\n",
			`0000_30_config_00_migrate-job.yaml job "converge-payload-demo/schema-migrate" (13 of 30)`,
			"node 10: 40-web, 2 manifests, after 2, 8\n", // the web Deployment depends on the api Service
		}},
		{"mermaid", []string{"flowchart TD\n", "30-config, 1 manifests"}},
		{"dot", []string{"digraph tasks {\n", `[ label="10-config, 4 manifests" shape="box" ];`}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, printPlan(&out, tt.format))
			for _, want := range tt.want {
				assert.Contains(t, out.String(), want)
			}
		})
	}
	require.Error(t, printPlan(&bytes.Buffer{}, "svg"))
}

func TestStampRelease(t *testing.T) {
	manifests, err := loadManifests()
	require.NoError(t, err)
	stamped := stampRelease(manifests, "2.0.0")
	require.Len(t, stamped, len(manifests))
	for i, m := range stamped {
		assert.Equal(t, "2.0.0", m.Object.GetAnnotations()[releaseAnnotation], m.Ref())
		assert.NotContains(t, manifests[i].Object.GetAnnotations(), releaseAnnotation, "the loaded manifest was changed")
		assert.Equal(t, manifests[i].DependsOn, m.DependsOn)
	}
	web := stamped[slices.IndexFunc(stamped, func(m payload.Manifest) bool { return m.Ref() == "Deployment/converge-payload-demo/web" })]
	assert.Equal(t, "Service/converge-payload-demo/api", web.Object.GetAnnotations()[payload.DependsOnAnnotation], "other annotations are kept")
}

func TestRunRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		o    options
		want string
	}{
		{"no release", options{namespace: "default"}, "-release must not be empty"},
		{"negative interval", options{release: "1.0.0", interval: -time.Second}, "-interval must not be negative"},
		{"leader election in memory", options{release: "1.0.0", leaderElect: true, identity: "a"}, "-leader-elect needs -kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			assert.ErrorContains(t, run(context.Background(), tt.o, &out), tt.want)
			assert.Empty(t, out.String(), "nothing was applied")
		})
	}
}
