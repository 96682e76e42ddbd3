package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("apiVersion: v1\n"), 0o600))
	tests := []struct {
		name       string
		args       []string
		startErr   error
		wantCode   int
		wantStops  int
		wantStdout string
	}{
		{name: "command sees KUBECONFIG", args: []string{"--", "sh", "-c", `test "$KUBECONFIG" = "` + kubeconfig + `" && echo ok`}, wantCode: 0, wantStops: 1, wantStdout: "ok\n"},
		{name: "command's exit status is passed on", args: []string{"--", "sh", "-c", "exit 3"}, wantCode: 3, wantStops: 1},
		{name: "missing command", args: []string{"--", "/nonexistent/command"}, wantCode: 1, wantStops: 1},
		{name: "start fails", args: []string{"--", "true"}, startErr: errors.New("no apiserver"), wantCode: 1},
		{name: "help", args: []string{"-h"}, wantCode: 0, wantStdout: "usage: testenv [-- command [args...]]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stops := 0
			start := func(context.Context) (string, func() error, error) {
				if tt.startErr != nil {
					return "", nil, tt.startErr
				}
				return kubeconfig, func() error { stops++; return nil }, nil
			}
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr, start)
			assert.Equal(t, tt.wantCode, code, stderr.String())
			assert.Equal(t, tt.wantStops, stops)
			if tt.wantStdout != "" {
				assert.Equal(t, tt.wantStdout, stdout.String())
			}
		})
	}
}

func TestRunWithoutCommandWaitsForInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the interrupt has already come
	stops := 0
	var stdout, stderr bytes.Buffer
	code := run(ctx, nil, &stdout, &stderr, func(context.Context) (string, func() error, error) {
		return "/tmp/kc", func() error { stops++; return nil }, nil
	})
	assert.Equal(t, 0, code)
	assert.Equal(t, 1, stops)
	assert.Equal(t, "export KUBECONFIG=/tmp/kc\n", stdout.String())
}
