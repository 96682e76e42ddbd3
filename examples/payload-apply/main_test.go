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
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), nil, &stdout, &stderr), stderr.String())
	text := stdout.String()
	assert.Contains(t, text, "applying 31 manifests of release 1.0.0 (30 objects to apply, 1 to delete) to an in-memory cluster")
	assert.Contains(t, text, "event: Normal PayloadApplied: Applied 31 manifests of 1.0.0")
	assert.Equal(t, 2, strings.Count(text, "attempt failed: ConfigMap/converge-payload-demo/web-settings"), text)
	assert.Contains(t, text, "apply (Initializing) done: 31/31 manifests, completed 1 time, next in 3m0s")
	assert.Contains(t, text, "apply (Reconciling) done: 31/31 manifests, completed 2 times")
	assert.Contains(t, text, `waiting for Job/converge-payload-demo/schema-migrate to be ready: kube: Job converge-payload-demo/schema-migrate is not ready: JobNotComplete: has not completed: 0 active, 0 succeeded, 0 failed`,
		"the worker waits for the Job before the next run level")
	for _, dep := range []string{"api", "web"} {
		assert.Contains(t, text, "waiting for Deployment/converge-payload-demo/"+dep+" to be ready: kube: Deployment converge-payload-demo/"+dep+" is not ready: LatestGenerationNotObserved: Deployment status.observedGeneration not written yet",
			"the worker waits for the Deployment until the simulated controller rolled it out")
	}
	assert.Equal(t, 1, strings.Count(text, `event: Normal ManifestsDeleted: Deleted 1 object of 1.0.0: configmap "converge-payload-demo/legacy-settings"`),
		"the object is deleted once, and a reconcile that finds it gone says nothing: %s", text)
	assert.Contains(t, text, "30 of 30 objects are in the cluster")
	assert.Contains(t, text, "ConfigMap web-settings was accepted on attempt 3")
	assert.Contains(t, text, "progress: ")
	assert.NotContains(t, text, "0/0 manifests", "a status that counts no manifest yet says its release is loading")
	assert.NotContains(t, text, "run level", "initializing and reconciling apply every run level at once")
	assert.Empty(t, stderr.String())
}

func TestRunPrintsThePlan(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-plan", "-format", "mermaid"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "flowchart TD\n")
	assert.NotContains(t, stdout.String(), "applying", "nothing was applied")
}

func TestRunRefusesABadCommandLine(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // all of stderr, or its start when usage follows
		usage  bool   // stderr carries the usage
	}{
		{name: "help", args: []string{"-h"}, code: 0, stderr: "Usage of payload-apply:\n", usage: true},
		{name: "an unknown flag", args: []string{"-nodes", "3"}, code: 2, stderr: "payload-apply: flag provided but not defined: -nodes\nUsage of payload-apply:\n", usage: true},
		{name: "an argument", args: []string{"extra"}, code: 2, stderr: "payload-apply: unexpected argument \"extra\"\n"},
		{name: "no release", args: []string{"-release", ""}, code: 2, stderr: "payload-apply: -release: must not be empty\n"},
		{name: "negative interval", args: []string{"-interval", "-1s"}, code: 2, stderr: "payload-apply: -interval: must not be negative, got -1s\n"},
		{name: "unparsable interval", args: []string{"-interval", "soon"}, code: 2, stderr: "payload-apply: -interval: invalid value \"soon\": parse error\n"},
		{name: "unparsable bool", args: []string{"-plan=maybe"}, code: 2, stderr: "payload-apply: -plan: invalid boolean value \"maybe\": parse error\n"},
		{name: "missing value", args: []string{"-release"}, code: 2, stderr: "payload-apply: -release: needs a value\n"},
		{name: "unknown plan format", args: []string{"-plan", "-format", "svg"}, code: 2, stderr: "payload-apply: -format: unknown plan format \"svg\" (want text, mermaid or dot)\n"},
		{name: "leader election in memory", args: []string{"-leader-elect"}, code: 2, stderr: "payload-apply: -leader-elect: needs -kubeconfig\n"},
		{name: "simulated controllers in memory", args: []string{"-simulate-controllers"}, code: 2, stderr: "payload-apply: -simulate-controllers: needs -kubeconfig\n"},
		{name: "an identity without leader election", args: []string{"-kubeconfig", "k", "-identity", "a"}, code: 2, stderr: "payload-apply: -identity: needs -leader-elect\n"},
		{name: "a lease timing without leader election", args: []string{"-kubeconfig", "k", "-retry-period", "1s"}, code: 2, stderr: "payload-apply: -retry-period: needs -leader-elect\n"},
		{name: "an empty identity", args: []string{"-kubeconfig", "k", "-leader-elect", "-identity", ""}, code: 2, stderr: "payload-apply: -identity: must not be empty\n"},
		{name: "lease not longer than the renew deadline", args: []string{"-kubeconfig", "k", "-leader-elect", "-lease-duration", "10s"}, code: 2,
			stderr: "payload-apply: -lease-duration: must be longer than -renew-deadline (10s), got 10s\n"},
		{name: "retry period not shorter than the renew deadline", args: []string{"-kubeconfig", "k", "-leader-elect", "-retry-period", "10s"}, code: 2,
			stderr: "payload-apply: -retry-period: must be positive and shorter than -renew-deadline (10s), got 10s\n"},
		{name: "unreadable kubeconfig", args: []string{"-kubeconfig", "/nonexistent/kubeconfig"}, code: 1, stderr: "payload-apply: "},
		{name: "every flag of a cluster under leader election is accepted", args: []string{"-kubeconfig", "/nonexistent/kubeconfig", "-leader-elect", "-simulate-controllers",
			"-identity", "a", "-lease-duration", "4s", "-renew-deadline", "3s", "-retry-period", "1s", "-interval", "2s", "-namespace", "n", "-release", "1.1.0"},
			code: 1, stderr: "payload-apply: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			assert.Equal(t, tt.code, code, stderr.String())
			assert.True(t, strings.HasPrefix(stderr.String(), tt.stderr), "stderr %q, want it to start with %q", stderr.String(), tt.stderr)
			if tt.usage {
				assert.Contains(t, stderr.String(), "-simulate-controllers")
			} else {
				assert.NotContains(t, stderr.String(), "Usage", "no usage for a mistake the line names")
				assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line")
			}
			assert.Empty(t, stdout.String())
		})
	}
}
