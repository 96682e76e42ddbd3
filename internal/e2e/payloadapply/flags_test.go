//go:build !integration

package payloadapply

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// wantLine is the one line printed for a bad value, "" for none.
		wantLine  string
		wantUsage bool
		wantHelp  bool
	}{
		{name: "defaults"},
		{name: "a cluster under leader election", args: []string{"-kubeconfig", "k", "-leader-elect", "-simulate-job-controller", "-identity", "a", "-lease-duration", "4s", "-renew-deadline", "3s", "-retry-period", "1s"}},
		{name: "help", args: []string{"-h"}, wantUsage: true, wantHelp: true},
		{name: "an unknown flag", args: []string{"-nodes", "3"}, wantLine: "payload-apply: flag provided but not defined: -nodes", wantUsage: true},
		{name: "an argument", args: []string{"extra"}, wantLine: "payload-apply: extra: takes no arguments"},
		{name: "no release", args: []string{"-release", ""}, wantLine: "payload-apply: -release: must not be empty"},
		{name: "negative interval", args: []string{"-interval", "-1s"}, wantLine: "payload-apply: -interval: must not be negative, got -1s"},
		{name: "unparsable interval", args: []string{"-interval", "soon"}, wantLine: `payload-apply: -interval: invalid value "soon": parse error`},
		{name: "unparsable bool", args: []string{"-plan=maybe"}, wantLine: `payload-apply: -plan: invalid boolean value "maybe": parse error`},
		{name: "missing value", args: []string{"-release"}, wantLine: "payload-apply: -release: needs a value"},
		{name: "unknown plan format", args: []string{"-plan", "-format", "svg"}, wantLine: `payload-apply: -format: unknown plan format "svg" (want text, mermaid or dot)`},
		{name: "leader election in memory", args: []string{"-leader-elect"}, wantLine: "payload-apply: -leader-elect: needs -kubeconfig"},
		{name: "simulated job controller in memory", args: []string{"-simulate-job-controller"}, wantLine: "payload-apply: -simulate-job-controller: needs -kubeconfig (the in-memory cluster simulates it already)"},
		{name: "lease not longer than the renew deadline", args: []string{"-lease-duration", "10s"}, wantLine: "payload-apply: -lease-duration: must be longer than -renew-deadline (10s), got 10s"},
		{name: "retry period not shorter than the renew deadline", args: []string{"-retry-period", "10s"}, wantLine: "payload-apply: -retry-period: must be positive and shorter than -renew-deadline (10s), got 10s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			o, err := ParseFlags(tt.args, &stderr)
			usage := strings.Contains(stderr.String(), "Usage of payload-apply:")
			assert.Equal(t, tt.wantUsage, usage, stderr.String())
			switch {
			case tt.wantHelp:
				assert.ErrorIs(t, err, flag.ErrHelp, "exit 0")
				assert.Contains(t, stderr.String(), "-simulate-job-controller")
			case tt.wantLine != "":
				assert.ErrorIs(t, err, ErrUsage, "exit 2")
				lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
				assert.Equal(t, tt.wantLine, lines[0])
				if !tt.wantUsage {
					assert.Len(t, lines, 1, "one line")
				}
			default:
				require.NoError(t, err)
				assert.Empty(t, stderr.String())
				assert.NotEmpty(t, o.Identity)
			}
		})
	}
}

func TestParseFlagsValues(t *testing.T) {
	o, err := ParseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", o.Release)
	assert.Equal(t, "default", o.Namespace)
	assert.Equal(t, "payload-apply", o.FieldManager())
	assert.Equal(t, "text", o.Format)
	assert.Equal(t, 15*time.Second, o.LeaseDuration)

	o, err = ParseFlags([]string{"-kubeconfig", "k", "-leader-elect", "-identity", "a", "-interval", "2s"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "payload-apply/a", o.FieldManager(), "each instance writes as itself")
	assert.Equal(t, 2*time.Second, o.Interval)
}
