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

	e2e "github.com/converge-dev/converge/internal/e2e/payloadapply"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func options(t *testing.T, args ...string) e2e.Options {
	t.Helper()
	o, err := e2e.ParseFlags(args, &bytes.Buffer{})
	require.NoError(t, err)
	return o
}

func TestRunInMemory(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), options(t), &out))
	text := out.String()
	assert.Contains(t, text, "applying 30 manifests to an in-memory cluster")
	assert.Equal(t, 2, strings.Count(text, "attempt failed: ConfigMap/converge-payload-demo/web-settings"), text)
	assert.Contains(t, text, "apply (Initializing) done: 31/31 manifests, completed 1 time(s), next in 3m0s")
	assert.Contains(t, text, "apply (Reconciling) done: 31/31 manifests, completed 2 time(s)")
	assert.Contains(t, text, `waiting for Job/converge-payload-demo/schema-migrate to be ready: Job converge-payload-demo/schema-migrate: has not completed: kube: not ready`,
		"the worker waits for the Job before the next run level")
	assert.Contains(t, text, `event: Normal ManifestsDeleted: Deleted 1 objects of 1.0.0: configmap "converge-payload-demo/legacy-settings"`)
	assert.Contains(t, text, "30 of 30 objects are in the cluster")
	assert.Contains(t, text, "ConfigMap web-settings was accepted on attempt 3")
	assert.Contains(t, text, "progress: ")
}

func TestRunPrintsThePlan(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), options(t, "-plan", "-format", "mermaid"), &out))
	assert.Contains(t, out.String(), "flowchart TD\n")
	assert.NotContains(t, out.String(), "applying", "nothing was applied")
}
