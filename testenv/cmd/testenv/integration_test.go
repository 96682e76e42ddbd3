//go:build integration

package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunAgainstRealAPIServer starts the real environment and runs a command
// that finds the apiserver's loopback address in $KUBECONFIG.
func TestRunAgainstRealAPIServer(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--", "sh", "-c", `grep -q "server: https://127.0.0.1:" "$KUBECONFIG" && echo configured`}, &stdout, &stderr, startEnvironment)
	assert.Equal(t, 0, code, stderr.String())
	assert.Equal(t, "configured\n", stdout.String())
}
