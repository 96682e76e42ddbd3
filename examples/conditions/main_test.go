package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // each contained in stdout
		stderr string   // all of stderr
	}{
		{name: "the grace period holds Degraded at 12:01 and lets it through at 12:03", code: 0, stdout: []string{
			"at 12:01:00:\n", "  Degraded               False   AsExpected ",
			"at 12:03:00:\n", "  Degraded               True    NodeInstaller_InstallerPodFailed ",
			"  Ready                  False   NodeInstaller_InstallerPodFailed ",
		}},
		{name: "help", args: []string{"-h"}, code: 0, stderr: "Usage of conditions:\n"},
		{name: "unknown flag", args: []string{"-nodes", "3"}, code: 2,
			stderr: "conditions: flag provided but not defined: -nodes\nUsage of conditions:\n"},
		{name: "an argument", args: []string{"now"}, code: 2, stderr: "conditions: unexpected argument \"now\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, tt.code, run(context.Background(), tt.args, &stdout, &stderr))
			assert.Equal(t, tt.stderr, stderr.String())
			for _, want := range tt.stdout {
				assert.Contains(t, stdout.String(), want)
			}
			if tt.code != 0 {
				assert.Empty(t, stdout.String())
			}
		})
	}
}
