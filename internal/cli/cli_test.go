package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newFlags is a command with the kinds of flags the examples have.
func newFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.String("kubeconfig", "", "run on this cluster")
	fs.Int("nodes", 3, "how many nodes")
	fs.Int("workers", 4, "workers (-kubeconfig only)")
	fs.Duration("timeout", time.Minute, "how long")
	fs.Bool("v", false, "verbose")
	return fs
}

func TestParseAndExit(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // all of stderr, or its start when usage follows
		usage  bool   // stderr carries the usage
	}{
		{name: "no flags run", code: 0},
		{name: "flags run", args: []string{"-nodes", "7", "-v"}, code: 0},
		{name: "help prints usage and succeeds", args: []string{"-h"}, code: 0, stderr: "Usage of demo:\n", usage: true},
		{name: "unknown flag prints its error and usage", args: []string{"-addons", "3"}, code: 2,
			stderr: "demo: flag provided but not defined: -addons\nUsage of demo:\n", usage: true},
		{name: "bad number names its flag", args: []string{"-nodes", "many"}, code: 2, stderr: "demo: -nodes: invalid value \"many\": parse error\n"},
		{name: "bad duration names its flag", args: []string{"-timeout", "soon"}, code: 2, stderr: "demo: -timeout: invalid value \"soon\": parse error\n"},
		{name: "bad bool names its flag", args: []string{"-v=maybe"}, code: 2, stderr: "demo: -v: invalid boolean value \"maybe\": parse error\n"},
		{name: "missing value names its flag", args: []string{"-nodes"}, code: 2, stderr: "demo: -nodes: needs a value\n"},
		{name: "an argument is named", args: []string{"story"}, code: 2, stderr: "demo: unexpected argument \"story\"\n"},
		{name: "a flag that needs another is refused without it", args: []string{"-workers", "8"}, code: 2, stderr: "demo: -workers: needs -kubeconfig\n"},
		{name: "a flag that needs another runs with it", args: []string{"-kubeconfig", "k", "-workers", "8"}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			fs := newFlags()
			err := Parse(fs, tt.args, &stderr)
			if err == nil {
				err = Requires(fs, "kubeconfig", "workers", "timeout")
			}
			code := Exit(&stderr, "demo", err)
			assert.Equal(t, tt.code, code, stderr.String())
			assert.True(t, strings.HasPrefix(stderr.String(), tt.stderr), "stderr %q, want it to start with %q", stderr.String(), tt.stderr)
			if tt.usage {
				assert.Contains(t, stderr.String(), "-kubeconfig string")
			} else {
				assert.Equal(t, tt.stderr, stderr.String(), "one line, no usage, for a mistake the line names")
			}
		})
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{name: "success", err: nil, code: 0},
		{name: "help", err: flag.ErrHelp, code: 0},
		{name: "usage error prints its line", err: Errorf("nodes", "%d is not at least 1", 0), code: 2, stderr: "demo: -nodes: 0 is not at least 1\n"},
		{name: "wrapped usage error", err: fmt.Errorf("checking: %w", Errorf("nodes", "bad")), code: 2, stderr: "demo: -nodes: bad\n"},
		{name: "usage already printed", err: &UsageError{}, code: 2},
		{name: "failed run", err: errors.New("rollout failed"), code: 1, stderr: "demo: rollout failed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			assert.Equal(t, tt.code, Exit(&stderr, "demo", tt.err))
			assert.Equal(t, tt.stderr, stderr.String())
		})
	}
}
