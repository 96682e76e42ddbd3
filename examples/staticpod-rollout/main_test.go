package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
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
			if len(args) > 0 && args[0] == "-max-unavailable" {
				assert.Contains(t, s, "nodes at revision 2, 1 installing - held: the gate holds master-1: etcd quorum needs 2 of 3 members ready",
					"two of three members down would lose the quorum: the gate holds the second")
			}
			assert.Empty(t, errOut.String())
		})
	}
}

// TestRunPrintsTheNodeTableAndEachSync: the node table says "-" for no
// target and no failure, a sync line counts the nodes at the revision and
// those installing once each, and -plan prints each sync's decision.
func TestRunPrintsTheNodeTableAndEachSync(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"-plan"}, &out, &errOut), out.String()+errOut.String())
	s := out.String()
	assert.Contains(t, s, "[    0s] sync   1: 0/3 nodes at revision 2, 1 installing\n")
	assert.Contains(t, s, "[    5s] sync   6: 1/3 nodes at revision 2, 1 waiting to install\n", "a retry backs off")
	assert.Contains(t, s, "master-0  3        -       -            0")
	assert.Contains(t, s, "    plan: revision 2: master-0: starting revision 2\n"+
		"          start master-0 (master-0 has the oldest current revision)\n"+
		"            master-0: starting revision 2; current 1, target 2; create installer-2-master-0\n")
	assert.Contains(t, s, "master-1: InstallerPodFailed 1 time, retrying in 15s; current 1, target 2; delete installer-2-master-1")
	assert.Equal(t, 23, strings.Count(s, "    plan: "), "a plan a sync")
	assert.Empty(t, errOut.String())
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

// TestQuorumGate: a member goes down only while a majority of the members
// stays ready without it and without those the rollout counts down; a
// member that is not ready costs no vote; one or two members keep no quorum
// to protect.
func TestQuorumGate(t *testing.T) {
	tests := []struct {
		name    string
		nodes   []string
		notOK   []string // operands not ready
		away    []string // unreachable
		down    []string // what the rollout counts down already
		ask     string
		wantErr string
	}{
		{name: "three ready members: one may go", nodes: []string{"a", "b", "c"}, ask: "a"},
		{name: "one down already: no second", nodes: []string{"a", "b", "c"}, down: []string{"b"}, ask: "a",
			wantErr: "etcd quorum needs 2 of 3 members ready, 1 would be without a"},
		{name: "a member whose operand is not ready counts as down", nodes: []string{"a", "b", "c"}, notOK: []string{"c"}, ask: "a",
			wantErr: "etcd quorum needs 2 of 3 members ready, 1 would be without a"},
		{name: "an unreachable member counts as down", nodes: []string{"a", "b", "c"}, away: []string{"c"}, ask: "a",
			wantErr: "etcd quorum needs 2 of 3 members ready, 1 would be without a"},
		{name: "five members: two may be down", nodes: []string{"a", "b", "c", "d", "e"}, down: []string{"b"}, ask: "a"},
		{name: "five members: not three", nodes: []string{"a", "b", "c", "d", "e"}, down: []string{"b", "c"}, ask: "a",
			wantErr: "etcd quorum needs 3 of 5 members ready, 2 would be without a"},
		{name: "a member that is not ready costs no vote", nodes: []string{"a", "b", "c"}, notOK: []string{"a", "c"}, ask: "a"},
		{name: "the first install: no member is ready, so none costs a vote", nodes: []string{"a", "b", "c"}, notOK: []string{"a", "b", "c"}, ask: "a"},
		{name: "an unreachable member costs no vote", nodes: []string{"a", "b", "c"}, away: []string{"a"}, down: []string{"b"}, ask: "a"},
		{name: "a single member keeps no quorum to protect", nodes: []string{"a"}, ask: "a"},
		{name: "two members keep no quorum to protect", nodes: []string{"a", "b"}, down: []string{"b"}, ask: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster := fake.NewRolloutCluster(nil, 1, tt.nodes...)
			for _, n := range tt.notOK {
				cluster.SetOperand(n, rollout.OperandState{Phase: rollout.OperandPending, Revision: 1})
			}
			for _, n := range tt.away {
				cluster.SetUnreachable(n, true)
			}
			err := quorumGate(cluster)(context.Background(), rollout.Disruption{
				Installer: rollout.Installer{Name: "installer-2-" + tt.ask, Node: tt.ask, Revision: 2}, Down: tt.down})
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}
