package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunInMemory(t *testing.T) {
	for _, args := range [][]string{nil, {"-nodes", "1"}, {"-nodes", "6"}, {"-max-unavailable", "2"}} {
		t.Run(fmtArgs(args), func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, 0, run(context.Background(), args, &out, &errOut), out.String()+errOut.String())
			s := out.String()
			assert.Contains(t, s, "installer: copying secret/serving-cert: connection refused")
			assert.Contains(t, s, "Warning InstallerPodFailed")
			assert.Contains(t, s, "creating installer installer-2-retry-1-")
			assert.Contains(t, s, "converged on revision 3")
			assert.Contains(t, s, "Progressing  False   AllNodesAtLatestRevision")
			assert.Empty(t, errOut.String())
		})
	}
}

// TestRunManyNodes checks that a cluster beyond 50 nodes prints a progress
// line every 10% of the nodes rather than every sync, and that its limits
// scale with -nodes.
func TestRunManyNodes(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-nodes", "200"}, &out, &errOut), out.String()+errOut.String())
	s := out.String()
	assert.Contains(t, s, "200 nodes, up to 2 unavailable")
	assert.Contains(t, s, "200/200 nodes at revision 3")
	assert.Contains(t, s, "converged on revision 3")
	assert.Contains(t, s, "... 150 more")
	assert.NotContains(t, s, "creating installer", "no line per installer")
	assert.Equal(t, 20, strings.Count(s, "nodes at revision"), "a progress line every 10%% of the nodes of each revision:\n%s", s)
	assert.Empty(t, errOut.String())
}

func fmtArgs(args []string) string {
	if len(args) == 0 {
		return "defaults"
	}
	return args[0] + "=" + args[1]
}

func TestRunFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		// stderr is what stderr holds: one line, or the usage when usage is set.
		stderr string
		usage  bool
	}{
		{name: "help", args: []string{"-h"}, code: 0, usage: true},
		{name: "unknown flag", args: []string{"-bogus"}, code: 2, stderr: "staticpod-rollout: flag provided but not defined: -bogus", usage: true},
		{name: "zero nodes", args: []string{"-nodes", "0"}, code: 2, stderr: "staticpod-rollout: -nodes: 0 is not at least 1"},
		{name: "nodes not a number", args: []string{"-nodes", "many"}, code: 2,
			stderr: `staticpod-rollout: -nodes: invalid value "many": parse error`},
		{name: "zero revision", args: []string{"-kubeconfig", "kubeconfig", "-revision", "0"}, code: 2,
			stderr: "staticpod-rollout: -revision: 0 is not at least 1"},
		{name: "negative max-unavailable", args: []string{"-max-unavailable", "-1"}, code: 2,
			stderr: "staticpod-rollout: -max-unavailable: -1 is negative"},
		{name: "negative max-syncs", args: []string{"-max-syncs", "-1"}, code: 2, stderr: "staticpod-rollout: -max-syncs: -1 is negative"},
		{name: "negative timeout", args: []string{"-timeout", "-1s"}, code: 2, stderr: "staticpod-rollout: -timeout: -1s is negative"},
		{name: "bad timeout", args: []string{"-timeout", "soon"}, code: 2,
			stderr: `staticpod-rollout: -timeout: invalid value "soon": parse error`},
		{name: "simulate-kubelet without kubeconfig", args: []string{"-simulate-kubelet"}, code: 2,
			stderr: "staticpod-rollout: -simulate-kubelet: needs -kubeconfig"},
		{name: "revision without kubeconfig", args: []string{"-revision", "4"}, code: 2,
			stderr: "staticpod-rollout: -revision: needs -kubeconfig"},
		{name: "installer image without kubeconfig", args: []string{"-installer-image", "busybox"}, code: 2,
			stderr: "staticpod-rollout: -installer-image: needs -kubeconfig"},
		{name: "argument", args: []string{"now"}, code: 2, stderr: `staticpod-rollout: unexpected argument "now"`},
		{name: "bad node selector", args: []string{"-node-selector", "a b c"}, code: 2,
			stderr: "staticpod-rollout: -node-selector: "},
		{name: "flag without value", args: []string{"-nodes"}, code: 2, stderr: "staticpod-rollout: -nodes: needs a value"},
		{name: "unreadable kubeconfig", args: []string{"-kubeconfig", "/nonexistent/kubeconfig"}, code: 1,
			stderr: "staticpod-rollout: stat /nonexistent/kubeconfig: no such file or directory"},
		{name: "max-syncs hit", args: []string{"-max-syncs", "3"}, code: 1,
			stderr: "staticpod-rollout: revision 2 did not converge within 3 syncs (-max-syncs)"},
		{name: "timeout hit", args: []string{"-timeout", "1ns"}, code: 1,
			stderr: "staticpod-rollout: -timeout 1ns passed: context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			assert.Equal(t, tt.code, run(context.Background(), tt.args, &out, &errOut), errOut.String())
			stderr := errOut.String()
			if tt.usage {
				assert.Contains(t, stderr, "Usage of staticpod-rollout:")
				assert.Contains(t, stderr, "-simulate-kubelet")
				assert.True(t, strings.HasPrefix(stderr, tt.stderr), stderr)
				return
			}
			assert.True(t, strings.HasPrefix(stderr, tt.stderr), stderr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		})
	}
}
