package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// In memory the program installs version 1, upgrades to version 2, and
// ends with the release's history: revision 1 superseded, 2 deployed.
func TestRunInMemory(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(nil, &out))
	text := out.String()
	for _, want := range []string{
		"event Normal InstallSucceeded: Initializing -> Checking",
		"at Helm revision 1\n",
		"event Normal UpgradeSucceeded: Upgrading -> Checking",
		"at Helm revision 2\n",
	} {
		assert.Contains(t, text, want)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	assert.Regexp(t, `^1\s+superseded\s+converge: install of `, lines[len(lines)-2])
	assert.Regexp(t, `^2\s+deployed\s+converge: upgrade of `, lines[len(lines)-1])
	assert.NotContains(t, text, "Warning", "no step failed")
}

// A flag the program does not know is an error, and nothing runs.
func TestRunRefusesAnUnknownFlag(t *testing.T) {
	var out bytes.Buffer
	assert.Error(t, run([]string{"-no-such-flag"}, &out))
	assert.Empty(t, out.String())
}
