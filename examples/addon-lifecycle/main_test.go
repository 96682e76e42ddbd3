package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // contained in stdout
		stderr string // all of stderr, or its start when usage follows
		usage  bool   // stderr carries the usage
	}{
		{name: "the in-memory story", code: 0, stdout: "done: v3 failed and was rolled back to v2"},
		{name: "diagram", args: []string{"-diagram"}, code: 0, stdout: "stateDiagram"},
		{name: "diagram with a bad value", args: []string{"-diagram", "-kubeconfig", "k", "-workers", "0"}, code: 2, stderr: "addon-lifecycle: -workers: 0 is less than 1\n"},
		{name: "help", args: []string{"-h"}, code: 0, stderr: "Usage of addon-lifecycle:\n", usage: true},
		{name: "unknown flag", args: []string{"-nodes", "3"}, code: 2, stderr: "addon-lifecycle: flag provided but not defined: -nodes\nUsage of addon-lifecycle:\n", usage: true},
		{name: "bad number", args: []string{"-kubeconfig", "k", "-addons", "many"}, code: 2, stderr: "addon-lifecycle: -addons: invalid value \"many\": parse error\n"},
		{name: "missing value", args: []string{"-kubeconfig", "k", "-addons"}, code: 2, stderr: "addon-lifecycle: -addons: needs a value\n"},
		{name: "bad duration", args: []string{"-kubeconfig", "k", "-timeout", "soon"}, code: 2, stderr: "addon-lifecycle: -timeout: invalid value \"soon\": parse error\n"},
		{name: "negative addons", args: []string{"-kubeconfig", "k", "-addons", "-1"}, code: 2, stderr: "addon-lifecycle: -addons: -1 is negative\n"},
		{name: "no workers", args: []string{"-kubeconfig", "k", "-workers", "0"}, code: 2, stderr: "addon-lifecycle: -workers: 0 is less than 1\n"},
		{name: "bad namespace", args: []string{"-kubeconfig", "k", "-namespace", "Not_A_Namespace"}, code: 2, stderr: "addon-lifecycle: -namespace: \"Not_A_Namespace\": "},
		{name: "every value out of range on one line", args: []string{"-kubeconfig", "k", "-addons", "-1", "-workers", "0"}, code: 2,
			stderr: "addon-lifecycle: -addons: -1 is negative, -workers: 0 is less than 1\n"},
		{name: "no timeout", args: []string{"-kubeconfig", "k", "-timeout", "0s"}, code: 2, stderr: "addon-lifecycle: -timeout: 0s is not positive\n"},
		{name: "workers without kubeconfig", args: []string{"-workers", "8"}, code: 2, stderr: "addon-lifecycle: -workers: needs -kubeconfig\n"},
		{name: "addons without kubeconfig", args: []string{"-addons", "200"}, code: 2, stderr: "addon-lifecycle: -addons: needs -kubeconfig\n"},
		{name: "namespace without kubeconfig", args: []string{"-namespace", "fleet"}, code: 2, stderr: "addon-lifecycle: -namespace: needs -kubeconfig\n"},
		{name: "timeout without kubeconfig", args: []string{"-timeout", "1m"}, code: 2, stderr: "addon-lifecycle: -timeout: needs -kubeconfig\n"},
		{name: "an argument", args: []string{"story"}, code: 2, stderr: "addon-lifecycle: unexpected argument \"story\"\n"},
		{name: "unreadable kubeconfig", args: []string{"-kubeconfig", "/nonexistent/kubeconfig"}, code: 1, stderr: "addon-lifecycle: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			assert.Equal(t, tt.code, code, stderr.String())
			assert.Contains(t, stdout.String(), tt.stdout)
			assert.True(t, strings.HasPrefix(stderr.String(), tt.stderr), "stderr %q, want it to start with %q", stderr.String(), tt.stderr)
			if tt.usage {
				assert.Contains(t, stderr.String(), "-kubeconfig string")
			} else {
				assert.NotContains(t, stderr.String(), "Usage", "no usage for a mistake the line names")
				assert.LessOrEqual(t, strings.Count(stderr.String(), "\n"), 1, "one line at most")
			}
			if tt.code != 0 {
				assert.Empty(t, stdout.String())
			}
		})
	}
}
