//go:build !integration

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestRunRejectsBadArgumentsBeforeConnecting checks that bad command-line
// arguments are usage errors, found before any connection is attempted (no
// cluster is configured here).
func TestRunRejectsBadArgumentsBeforeConnecting(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
		// stderr is what the flag package wrote (once), before the usage.
		stderr string
	}{
		{name: "an unknown flag", args: []string{"-no-such-flag"}, want: errUsage, stderr: "flag provided but not defined: -no-such-flag\nUsage of sample:\n"},
		{name: "a flag without its value", args: []string{"-payload"}, want: errUsage, stderr: "flag needs an argument: -payload\nUsage of sample:\n"},
		{name: "a payload that is not namespace/name", args: []string{"-payload=cluster"}, want: errUsage},
		{name: "a payload with an empty namespace", args: []string{"-payload=/cluster"}, want: errUsage},
		{name: "a positional argument", args: []string{"-leader-elect", "extra"}, want: errUsage},
		{name: "help is not an error to report", args: []string{"-help"}, want: flag.ErrHelp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stderr, nil)
			assert.True(t, errors.Is(err, tt.want), "%v", err)
			if tt.stderr != "" {
				assert.True(t, strings.HasPrefix(stderr.String(), tt.stderr), "stderr %q", stderr.String())
				assert.Same(t, errUsage, err, "the error is on stderr already: main prints nothing more")
			}
		})
	}
}
