package rollout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// journal records the order of writes and installer calls across fakes.
type journal struct {
	entries []string
	store   *fake.RolloutStatusStore
	cluster *fake.RolloutCluster
}

func (j *journal) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	return j.store.GetStatus(ctx)
}

func (j *journal) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	j.entries = append(j.entries, "write")
	return j.store.UpdateStatus(ctx, st, rv)
}

func (j *journal) GetInstaller(ctx context.Context, i rollout.Installer) (rollout.InstallerState, error) {
	return j.cluster.GetInstaller(ctx, i)
}

func (j *journal) EnsureInstaller(ctx context.Context, i rollout.Installer) error {
	j.entries = append(j.entries, "ensure "+i.Name)
	return j.cluster.EnsureInstaller(ctx, i)
}

func (j *journal) DeleteInstaller(ctx context.Context, i rollout.Installer) error {
	j.entries = append(j.entries, "delete "+i.Name)
	return j.cluster.DeleteInstaller(ctx, i)
}

func newController(store rollout.StatusStore, cluster *fake.RolloutCluster, clk *clocktesting.FakeClock, p rollout.Policy) (*rollout.Controller, *fake.RolloutEvents) {
	ev := &fake.RolloutEvents{}
	return &rollout.Controller{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Events: ev, Clock: clk, Policy: p}, ev
}

func TestControllerSyncNeedsHostInterfaces(t *testing.T) {
	_, err := (&rollout.Controller{}).Sync(context.Background())
	assert.ErrorIs(t, err, rollout.ErrInvalid)
	_, err = (*rollout.Controller)(nil).Sync(context.Background())
	assert.ErrorIs(t, err, rollout.ErrInvalid)
}

func TestControllerWritesBeforeActing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	store := fake.NewRolloutStatusStore(2, 1, "a", "b")
	store.Status.NodeStatuses[0] = rollout.NodeStatus{NodeName: "a", CurrentRevision: 1, TargetRevision: 2}
	store.Status.LatestAvailableRevision = 3
	cluster.Pods["installer-2-a"] = &fake.RolloutPod{
		Installer: rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"},
		State:     rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0}}
	j := &journal{store: store, cluster: cluster}
	c := &rollout.Controller{Status: j, Installers: j, Operands: cluster, Clock: clk}

	res, err := c.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"delete installer-2-a", "write", "ensure installer-3-a"}, j.entries,
		"superseded installer deleted, target written, then the new installer created")
	assert.False(t, res.Converged)
	a, _ := store.Current().Node("a")
	assert.Equal(t, int32(3), a.TargetRevision)
}

func TestControllerSyncReadsOncePerNode(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b", "c")
	store := fake.NewRolloutStatusStore(2, 1, "a", "b", "c")
	store.Status.NodeStatuses[1].TargetRevision = 2
	c, _ := newController(store, cluster, clk, rollout.Policy{})

	_, err := c.Sync(ctx)
	require.NoError(t, err)
	count := map[fake.RolloutMethod]int{}
	for _, call := range cluster.Recorded() {
		count[call.Method]++
	}
	assert.Equal(t, map[fake.RolloutMethod]int{fake.RolloutNodeReady: 3, fake.RolloutGetOperand: 3, fake.RolloutGetInstaller: 1, fake.RolloutEnsureInstaller: 1}, count)
	assert.Equal(t, 1, store.Reads)
}

func TestControllerSyncConflicts(t *testing.T) {
	tests := []struct {
		name      string
		conflicts int
		retries   int
		wantErr   bool
	}{
		{name: "no conflict", conflicts: 0},
		{name: "one conflict is retried", conflicts: 1},
		{name: "conflicts up to the retry budget", conflicts: 3},
		{name: "more conflicts than retries", conflicts: 4, wantErr: true},
		{name: "custom retry budget", conflicts: 5, retries: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
			store := fake.NewRolloutStatusStore(2, 1, "a", "b")
			store.Conflicts = tt.conflicts
			c, ev := newController(store, cluster, clk, rollout.Policy{})
			c.ConflictRetries = tt.retries

			_, err := c.Sync(ctx)
			if tt.wantErr {
				require.ErrorIs(t, err, rollout.ErrConflict)
				assert.Contains(t, err.Error(), "rollout: writing status of node a")
				assert.Empty(t, cluster.CreatedInstallers(), "nothing acted on without a write")
				assert.Empty(t, ev.Reasons())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.conflicts, store.ConflictsReturned)
			a, _ := store.Current().Node("a")
			assert.Equal(t, int32(2), a.TargetRevision, "the transition survived the conflicts")
			assert.Equal(t, []rollout.Installer{{Node: "a", Revision: 2, Name: "installer-2-a"}}, cluster.CreatedInstallers())
			assert.Equal(t, []string{rollout.EventNodeTargetRevisionChanged}, ev.Reasons())
		})
	}
}

func TestControllerSyncHostErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		setup   func(*fake.RolloutStatusStore, *fake.RolloutCluster)
		wantErr string
	}{
		{name: "status read", setup: func(s *fake.RolloutStatusStore, _ *fake.RolloutCluster) { s.GetErr = boom }, wantErr: "rollout: reading status: boom"},
		{name: "status write", setup: func(s *fake.RolloutStatusStore, _ *fake.RolloutCluster) { s.UpdateErr = boom }, wantErr: "rollout: writing status of node a: boom"},
		{name: "operand read", setup: func(_ *fake.RolloutStatusStore, c *fake.RolloutCluster) {
			c.Errors = map[fake.RolloutMethod]error{fake.RolloutGetOperand: boom}
		}, wantErr: "rollout: reading operand of node a: boom"},
		{name: "node read", setup: func(_ *fake.RolloutStatusStore, c *fake.RolloutCluster) {
			c.Errors = map[fake.RolloutMethod]error{fake.RolloutNodeReady: boom}
		}, wantErr: "rollout: reading node a: boom"},
		{name: "installer create", setup: func(_ *fake.RolloutStatusStore, c *fake.RolloutCluster) {
			c.Errors = map[fake.RolloutMethod]error{fake.RolloutEnsureInstaller: boom}
		}, wantErr: "rollout: creating installer installer-2-a: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a")
			store := fake.NewRolloutStatusStore(2, 1, "a")
			tt.setup(store, cluster)
			c, _ := newController(store, cluster, clk, rollout.Policy{})
			_, ctx := ktesting.NewTestContext(t)
			_, err := c.Sync(ctx)
			require.ErrorIs(t, err, boom)
			assert.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestControllerSyncIdempotentAndConditions(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 2, "a", "b")
	store := fake.NewRolloutStatusStore(2, 2, "b", "a")
	c, ev := newController(store, cluster, clk, rollout.Policy{})

	res, err := c.Sync(ctx)
	require.NoError(t, err)
	assert.True(t, res.Converged)
	assert.Equal(t, 1, store.WriteCount(), "conditions and node order written once")
	st := store.Current()
	assert.Equal(t, "a", st.NodeStatuses[0].NodeName)
	assert.Len(t, st.Conditions, 3)

	clk.Step(time.Minute)
	_, err = c.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, store.WriteCount(), "nothing to write the second time")
	assert.Empty(t, ev.Reasons())
}

// TestControllerPendingTimeoutSurvivesConflict loses exactly the write that
// records a timed-out installer: the re-plan must see the same timeout, not a
// missing installer to re-create under the same name.
func TestControllerPendingTimeoutSurvivesConflict(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0.Add(2 * time.Minute))
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	cluster.Pods["installer-2-a"] = &fake.RolloutPod{
		Installer: rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"},
		State:     rollout.InstallerState{Phase: rollout.InstallerPending, StartTime: t0}}
	store := fake.NewRolloutStatusStore(2, 1, "a")
	store.Status.NodeStatuses[0].TargetRevision = 2
	store.Conflicts = 1
	j := &journal{store: store, cluster: cluster}
	ev := &fake.RolloutEvents{}
	c := &rollout.Controller{Status: j, Installers: j, Operands: cluster, Events: ev, Clock: clk,
		Policy: rollout.Policy{InstallerPendingTimeout: time.Minute}}

	res, err := c.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, store.ConflictsReturned, "the failure's first write was lost")
	assert.Equal(t, []string{"write", "write", "delete installer-2-a"}, j.entries,
		"the failure is written before the installer goes; nothing is re-created")
	a, _ := store.Current().Node("a")
	assert.Equal(t, int32(2), a.TargetRevision)
	assert.Equal(t, int32(2), a.LastFailedRevision)
	assert.Equal(t, int32(1), a.LastFailedCount, "the timeout is recorded once")
	assert.Equal(t, []string{"installer installer-2-a did not finish within 1m0s (Pending)"}, a.LastFailedErrors)
	assert.Equal(t, []string{rollout.EventInstallerPodFailed}, ev.Reasons(), "reported once, after the successful write")
	assert.Empty(t, cluster.CreatedInstallers())
	assert.NotContains(t, cluster.Pods, "installer-2-a")
	assert.Equal(t, 10*time.Second, res.RequeueAfter)

	clk.Step(10 * time.Second)
	_, err = c.Sync(ctx)
	require.NoError(t, err)
	created := cluster.CreatedInstallers()
	require.Len(t, created, 1)
	assert.Equal(t, "installer-2-retry-1-a", created[0].Name, "the retry gets a new name")
}

func TestControllerSyncBackoffRequeue(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	cluster.ScriptInstallers("a", fake.InstallerScript{Outcome: fake.InstallerFails, Message: "no disk"})
	store := fake.NewRolloutStatusStore(2, 1, "a")
	c, ev := newController(store, cluster, clk, rollout.Policy{})

	_, err := c.Sync(ctx)
	require.NoError(t, err)
	cluster.Tick()
	cluster.Tick()
	res, err := c.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, res.RequeueAfter)
	assert.Equal(t, []string{rollout.EventNodeTargetRevisionChanged, rollout.EventInstallerPodFailed}, ev.Reasons())

	clk.Step(9 * time.Second)
	res, err = c.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Second, res.RequeueAfter)
	assert.Len(t, cluster.CreatedInstallers(), 1, "no retry before the backoff")

	clk.Step(time.Second)
	_, err = c.Sync(ctx)
	require.NoError(t, err)
	created := cluster.CreatedInstallers()
	require.Len(t, created, 2)
	assert.Equal(t, "installer-2-retry-1-a", created[1].Name)
}

func TestControllerFuncAdapters(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	store := fake.NewRolloutStatusStore(2, 1, "a", "b")
	var emitted []string
	c := &rollout.Controller{
		Status: struct {
			rollout.StatusReaderFunc
			rollout.StatusWriterFunc
		}{store.GetStatus, store.UpdateStatus},
		Installers: cluster,
		Operands: rollout.OperandReaderFunc(func(ctx context.Context, node string) (rollout.OperandState, error) {
			return cluster.GetOperand(ctx, node)
		}),
		Nodes: rollout.NodeReadinessFunc(func(_ context.Context, node string) (bool, error) { return node != "a", nil }),
		Events: rollout.EventSinkFunc(func(_ context.Context, e rollout.Event) {
			emitted = append(emitted, e.Node+" "+e.Reason)
		}),
		Clock: clk,
	}
	_, err := c.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Installer{{Node: "b", Revision: 2, Name: "installer-2-b"}}, cluster.CreatedInstallers(), "unreachable a skipped")
	assert.Equal(t, []string{"b " + rollout.EventNodeTargetRevisionChanged}, emitted)
	b, _ := store.Current().Node("b")
	assert.Equal(t, int32(2), b.TargetRevision, "written through the StatusWriterFunc")
}

func TestControllerSyncCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	store := fake.NewRolloutStatusStore(2, 1, "a")
	c, _ := newController(store, cluster, clk, rollout.Policy{})
	_, err := c.Sync(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, store.WriteCount(), "nothing written once the context is done")
	assert.Empty(t, cluster.CreatedInstallers())
}
