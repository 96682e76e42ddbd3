package fake

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/rollout"
)

var rolloutT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestRolloutClusterInstallerOutcomes(t *testing.T) {
	tests := []struct {
		name        string
		script      []InstallerScript
		failOperand string
		ticks       int
		wantPhase   rollout.InstallerPhase
		wantCont    []rollout.ContainerTermination
		wantOperand rollout.OperandState
	}{
		{
			name: "succeeds by default and the operand becomes ready", ticks: 3,
			wantPhase:   rollout.InstallerSucceeded,
			wantOperand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 2, ReadySince: rolloutT0},
		},
		{
			name: "operand fails as scripted", ticks: 3, failOperand: "CrashLoopBackOff",
			wantPhase:   rollout.InstallerSucceeded,
			wantOperand: rollout.OperandState{Phase: rollout.OperandFailed, Revision: 2, Message: "CrashLoopBackOff"},
		},
		{
			name: "fails with a message", ticks: 2, script: []InstallerScript{{Outcome: InstallerFails, Message: "disk full"}},
			wantPhase:   rollout.InstallerFailed,
			wantCont:    []rollout.ContainerTermination{{Name: "installer", Message: "disk full"}},
			wantOperand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1, ReadySince: rolloutT0},
		},
		{
			name: "OOM killed", ticks: 2, script: []InstallerScript{{Outcome: InstallerOOMKilled}},
			wantPhase:   rollout.InstallerFailed,
			wantCont:    []rollout.ContainerTermination{{Name: "installer", OOMKilled: true}},
			wantOperand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1, ReadySince: rolloutT0},
		},
		{
			name: "hangs pending", ticks: 5, script: []InstallerScript{{Outcome: InstallerHangs}},
			wantPhase:   rollout.InstallerPending,
			wantOperand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1, ReadySince: rolloutT0},
		},
		{
			name: "disappears", ticks: 1, script: []InstallerScript{{Outcome: InstallerDisappears}},
			wantPhase:   rollout.InstallerNotFound,
			wantOperand: rollout.OperandState{Phase: rollout.OperandReady, Revision: 1, ReadySince: rolloutT0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := NewRolloutCluster(clocktesting.NewFakePassiveClock(rolloutT0), 1, "a")
			c.ScriptInstallers("a", tt.script...)
			if tt.failOperand != "" {
				c.OperandFails = map[string]map[int32]string{"a": {2: tt.failOperand}}
			}
			inst := rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"}
			require.NoError(t, c.EnsureInstaller(ctx, inst))
			st, err := c.GetInstaller(ctx, inst)
			require.NoError(t, err)
			assert.Equal(t, rollout.InstallerPending, st.Phase)
			assert.Equal(t, rolloutT0, st.StartTime)
			for range tt.ticks {
				c.Tick()
			}
			st, err = c.GetInstaller(ctx, inst)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPhase, st.Phase)
			assert.Equal(t, tt.wantCont, st.Containers)
			op, err := c.GetOperand(ctx, "a")
			require.NoError(t, err)
			assert.Equal(t, tt.wantOperand, op)
		})
	}
}

func TestRolloutClusterAttemptsAndCalls(t *testing.T) {
	ctx := context.Background()
	c := NewRolloutCluster(clocktesting.NewFakePassiveClock(rolloutT0), 0, "a")
	c.ScriptInstallers("a", InstallerScript{Outcome: InstallerFails, Message: "first"})
	first := rollout.Installer{Node: "a", Revision: 1, Name: "installer-1-a"}
	retry := rollout.Installer{Node: "a", Revision: 1, Name: "installer-1-retry-1-a"}
	require.NoError(t, c.EnsureInstaller(ctx, first))
	require.NoError(t, c.EnsureInstaller(ctx, first), "ensure is idempotent")
	require.NoError(t, c.EnsureInstaller(ctx, retry))
	c.Tick()
	c.Tick()
	a, _ := c.GetInstaller(ctx, first)
	b, _ := c.GetInstaller(ctx, retry)
	assert.Equal(t, rollout.InstallerFailed, a.Phase, "first attempt scripted to fail")
	assert.Equal(t, rollout.InstallerSucceeded, b.Phase, "second attempt unscripted")
	assert.Equal(t, []rollout.Installer{first, retry}, c.CreatedInstallers())

	require.NoError(t, c.DeleteInstaller(ctx, first))
	require.NoError(t, c.DeleteInstaller(ctx, first), "deleting a missing pod is fine")
	gone, _ := c.GetInstaller(ctx, first)
	assert.Equal(t, rollout.InstallerNotFound, gone.Phase)

	missing, err := c.GetOperand(ctx, "nowhere")
	require.NoError(t, err)
	assert.Equal(t, rollout.OperandNotFound, missing.Phase)

	calls := c.Recorded()
	require.Len(t, calls, 9)
	assert.Equal(t, RolloutCall{Method: RolloutEnsureInstaller, Node: "a", Installer: "installer-1-a"}, calls[0])
	assert.Equal(t, RolloutCall{Method: RolloutGetOperand, Node: "nowhere"}, calls[8])
}

func TestRolloutClusterUnreachableAndErrors(t *testing.T) {
	ctx := context.Background()
	c := NewRolloutCluster(clocktesting.NewFakePassiveClock(rolloutT0), 1, "a")
	c.SetUnreachable("a", true)
	nodes, err := c.ListNodes(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Node{{Name: "a", Unreachable: true}}, nodes)
	inst := rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"}
	require.NoError(t, c.EnsureInstaller(ctx, inst))
	assert.False(t, c.Tick(), "nothing moves on an unreachable node")
	c.SetUnreachable("a", false)
	assert.True(t, c.Tick())

	boom := errors.New("boom")
	c.Errors = map[RolloutMethod]error{RolloutGetOperand: boom, RolloutEnsureInstaller: boom}
	_, err = c.GetOperand(ctx, "a")
	assert.ErrorIs(t, err, boom)
	assert.ErrorIs(t, c.EnsureInstaller(ctx, rollout.Installer{Node: "a", Name: "x"}), boom)
}

func TestRolloutStatusStoreVersions(t *testing.T) {
	ctx := context.Background()
	s := NewRolloutStatusStore(2, 1, "a", "b")
	st, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, "0", rv)
	assert.Equal(t, int32(2), st.LatestAvailableRevision)

	st.NodeStatuses[0].TargetRevision = 2
	rv2, err := s.UpdateStatus(ctx, st, rv)
	require.NoError(t, err)
	assert.Equal(t, "1", rv2)

	_, err = s.UpdateStatus(ctx, st, rv)
	require.ErrorIs(t, err, converge.ErrConflict, "stale version")

	s.Conflicts = 1
	_, err = s.UpdateStatus(ctx, st, rv2)
	require.ErrorIs(t, err, converge.ErrConflict, "injected conflict")
	assert.Equal(t, 2, s.ConflictsReturned)

	cur, rv3, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(2), cur.NodeStatuses[0].TargetRevision, "the first write stuck")
	_, err = s.UpdateStatus(ctx, cur, rv3)
	require.NoError(t, err)
	assert.Equal(t, 2, s.WriteCount())
	assert.Equal(t, 2, s.Reads)

	cur.NodeStatuses[0].CurrentRevision = 9
	assert.Equal(t, int32(1), s.Current().NodeStatuses[0].CurrentRevision, "store keeps its own copy")

	s.UpdateErr = errors.New("down")
	_, err = s.UpdateStatus(ctx, cur, "4")
	assert.EqualError(t, err, "down")
}

func TestRolloutFakesConcurrent(t *testing.T) {
	ctx := context.Background()
	c := NewRolloutCluster(clocktesting.NewFakePassiveClock(rolloutT0), 1, "a", "b")
	s := NewRolloutStatusStore(1, 1, "a", "b")
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.EnsureInstaller(ctx, rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"})
			_, _ = c.GetOperand(ctx, "b")
			c.Tick()
			st, rv, _ := s.GetStatus(ctx)
			_, _ = s.UpdateStatus(ctx, st, rv)
			_, _ = c.ListNodes(ctx)
		}()
	}
	wg.Wait()
	assert.Len(t, c.Recorded(), 24)
	assert.Len(t, c.CreatedInstallers(), 1)
}

func TestRolloutClusterMembershipAndFaults(t *testing.T) {
	ctx := context.Background()
	c := NewRolloutCluster(clocktesting.NewFakePassiveClock(rolloutT0), 1, "a", "b")
	c.AddNode("c")
	c.AddNode("c")
	c.RemoveNode("a")
	nodes, err := c.ListNodes(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Node{{Name: "b"}, {Name: "c"}}, nodes, "added once, removed, in order")

	c.OperandHangs = map[string]map[int32]bool{"b": {2: true}}
	c.SetOperand("b", rollout.OperandState{Phase: rollout.OperandPending, Revision: 2})
	c.Tick()
	assert.Equal(t, rollout.OperandPending, c.Operand("b").Phase, "a hanging operand stays pending")

	inst := rollout.Installer{Node: "b", Revision: 2, Name: "installer-2-b"}
	require.NoError(t, c.EnsureInstaller(ctx, inst))
	c.SetError(RolloutDeleteInstaller, errors.New("apiserver down"))
	require.Error(t, c.DeleteInstaller(ctx, inst))
	_, exists := c.Pod(inst.Name)
	assert.True(t, exists, "a failed delete leaves the pod")
	c.SetError(RolloutDeleteInstaller, nil)
	require.NoError(t, c.DeleteInstaller(ctx, inst))
	assert.Equal(t, []rollout.Installer{inst}, c.Deleted)
	c.ResetCalls()
	assert.Empty(t, c.Recorded())
}

func TestRolloutStatusStoreAPIConflicts(t *testing.T) {
	ctx := context.Background()
	s := NewRolloutStatusStore(1, 1, "a")
	s.APIConflicts, s.Conflicts = true, 1
	st, rv, err := s.GetStatus(ctx)
	require.NoError(t, err)
	_, err = s.UpdateStatus(ctx, st, rv)
	assert.True(t, apierrors.IsConflict(err), "the apiserver's own 409: %v", err)
	assert.True(t, converge.IsConflict(err))
}
