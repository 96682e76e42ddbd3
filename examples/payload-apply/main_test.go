//go:build !integration

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
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
	assert.Contains(t, text, "apply (Initializing) done: 30/30 manifests, completed 1 time(s), next in 3m0s")
	assert.Contains(t, text, "apply (Reconciling) done: 30/30 manifests, completed 2 time(s)")
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
