package rollout_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/rollout"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// journal records the order of writes and installer calls across fakes.
type journal struct {
	entries []string
	store   *fake.RolloutStatusStore
	cluster *fake.RolloutCluster
	// failEnsure names an installer whose create fails.
	failEnsure string
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
	if i.Name == j.failEnsure {
		return errors.New("create refused")
	}
	return j.cluster.EnsureInstaller(ctx, i)
}

func (j *journal) DeleteInstaller(ctx context.Context, i rollout.Installer) error {
	j.entries = append(j.entries, "delete "+i.Name)
	return j.cluster.DeleteInstaller(ctx, i)
}

// harness syncs a Controller and keeps the events of every Result.
type harness struct {
	t      *testing.T
	c      *rollout.Controller
	events []converge.Event
}

func newHarness(t *testing.T, cfg rollout.Config) *harness {
	t.Helper()
	c, err := rollout.NewController(cfg)
	require.NoError(t, err)
	return &harness{t: t, c: c}
}

func newController(t *testing.T, store rollout.StatusStore, cluster *fake.RolloutCluster, clk *clocktesting.FakeClock, p rollout.Policy) *harness {
	return newHarness(t, rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk, Policy: p})
}

func (h *harness) sync(ctx context.Context) (converge.Result, error) {
	res, err := h.c.Sync(ctx)
	h.events = append(h.events, res.Events...)
	return res, err
}

func (h *harness) reasons() []string {
	var out []string
	for _, e := range h.events {
		out = append(out, e.Reason)
	}
	return out
}

// TestNewControllerBadInputIsAnError: nil and typed-nil host interfaces and
// a bad policy are errors wrapping ErrInvalid, never a panic later.
func TestNewControllerBadInputIsAnError(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	store := fake.NewRolloutStatusStore(1, 1, "a")
	var nilStore *fake.RolloutStatusStore
	var nilCluster *fake.RolloutCluster
	var nilClock *clocktesting.FakeClock
	tests := []struct {
		name string
		cfg  rollout.Config
	}{
		{name: "empty", cfg: rollout.Config{}},
		{name: "no status", cfg: rollout.Config{Installers: cluster, Operands: cluster}},
		{name: "typed nil status", cfg: rollout.Config{Status: nilStore, Installers: cluster, Operands: cluster}},
		{name: "typed nil installers", cfg: rollout.Config{Status: store, Installers: nilCluster, Operands: cluster}},
		{name: "nil func operands", cfg: rollout.Config{Status: store, Installers: cluster, Operands: rollout.OperandReaderFunc(nil)}},
		{name: "typed nil nodes", cfg: rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: nilCluster}},
		{name: "nil func nodes", cfg: rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: rollout.NodeListerFunc(nil)}},
		{name: "typed nil clock", cfg: rollout.Config{Status: store, Installers: cluster, Operands: cluster, Clock: nilClock}},
		{name: "bad policy", cfg: rollout.Config{Status: store, Installers: cluster, Operands: cluster, Policy: rollout.Policy{MaxUnavailable: -1}}},
		{name: "negative conflict retries", cfg: rollout.Config{Status: store, Installers: cluster, Operands: cluster, ConflictRetries: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := rollout.NewController(tt.cfg)
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.Nil(t, c)
		})
	}
	_, err := rollout.NewController(rollout.Config{Status: store, Operands: cluster, Nodes: nilCluster})
	assert.EqualError(t, err, "rollout: invalid config: Installers is required; Nodes holds a nil *fake.RolloutCluster",
		"every engine's wording for a missing field and a typed nil")
}

// TestSyncOnAControllerNotMadeByNewController: a nil or zero Controller
// answers Sync with an error matching converge.ErrInvalid, as addon's
// Machine and payload's Worker do, instead of panicking.
func TestSyncOnAControllerNotMadeByNewController(t *testing.T) {
	for name, c := range map[string]*rollout.Controller{"nil": nil, "zero": new(rollout.Controller)} {
		t.Run(name, func(t *testing.T) {
			res, err := c.Sync(context.Background())
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, "rollout: invalid Controller: not made by NewController")
			assert.Zero(t, res)
		})
	}
}

// TestControllerWritesBeforeActing: a superseded installer is recorded in
// the same write as the new target, deleted after it, and the new installer
// is created only once the old one is confirmed gone.
func TestControllerWritesBeforeActing(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	store := fake.NewRolloutStatusStore(3, 1, "a", "b")
	store.Status.NodeStatuses[0] = rollout.NodeStatus{NodeName: "a", CurrentRevision: 1, TargetRevision: 2, InstallerOrderedTime: &metaT0}
	cluster.Pods["installer-2-a"] = &fake.RolloutPod{
		Installer: rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"},
		State:     rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0}}
	j := &journal{store: store, cluster: cluster}
	h := newHarness(t, rollout.Config{Status: j, Installers: j, Operands: cluster, Clock: clk})

	_, err := h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"write", "delete installer-2-a", "write"}, j.entries,
		"target and the installer to delete written, the installer deleted, then its deletion confirmed")
	a, _ := store.Current().Node("a")
	assert.Equal(t, int32(3), a.TargetRevision)
	assert.Empty(t, store.Current().InstallersToDelete)

	j.entries = nil
	_, err = h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"write", "ensure installer-3-a"}, j.entries, "the new installer is ordered, then created")
}

var metaT0 = metaTime(t0)

// TestSyncWritesEveryDecisionOnceBeforeAnyInstaller: a sync that moves
// several nodes persists all their decisions in one status write, and only
// then creates their installers; a create that fails holds no other node
// back, and every decision and its event stay persisted beside the error.
func TestSyncWritesEveryDecisionOnceBeforeAnyInstaller(t *testing.T) {
	tests := []struct {
		name           string
		maxUnavailable int32
		failCreate     string // the installer whose create fails
		want           []string
		wantPods       []string
	}{
		{name: "one node", maxUnavailable: 1,
			want: []string{"write", "ensure installer-2-a"}, wantPods: []string{"installer-2-a"}},
		{name: "three nodes, one write", maxUnavailable: 3,
			want:     []string{"write", "ensure installer-2-a", "ensure installer-2-b", "ensure installer-2-c"},
			wantPods: []string{"installer-2-a", "installer-2-b", "installer-2-c"}},
		{name: "a refused create holds no other node back, and the last write records it", maxUnavailable: 3, failCreate: "installer-2-a",
			want:     []string{"write", "ensure installer-2-a", "ensure installer-2-b", "ensure installer-2-c", "write"},
			wantPods: []string{"installer-2-b", "installer-2-c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a", "b", "c", "d")
			store := fake.NewRolloutStatusStore(2, 1, "a", "b", "c", "d")
			j := &journal{store: store, cluster: cluster, failEnsure: tt.failCreate}
			h := newHarness(t, rollout.Config{Status: j, Installers: j, Operands: cluster, Nodes: cluster, Clock: clk,
				Policy: rollout.Policy{MaxUnavailable: tt.maxUnavailable}})

			_, err := h.sync(ctx)
			if tt.failCreate != "" {
				assert.ErrorContains(t, err, "creating installer "+tt.failCreate)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.want, j.entries)
			var pods []string
			for name := range cluster.Pods {
				pods = append(pods, name)
			}
			assert.ElementsMatch(t, tt.wantPods, pods)
			targets := 0
			for _, n := range store.Current().NodeStatuses {
				if n.TargetRevision == 2 {
					targets++
				}
			}
			assert.Equal(t, int(tt.maxUnavailable), targets, "every decision persisted")
			refused := 0
			if tt.failCreate != "" {
				refused = 1
			}
			assert.Len(t, h.events, targets+refused, "one event per persisted decision and refusal, even beside the error")
		})
	}
}

// TestControllerSyncReadsEachThingOnce: a sync lists the nodes once, reads
// the operands in one call from an OperandBatchReader (else once a node),
// and the installer of each node in transition once.
func TestControllerSyncReadsEachThingOnce(t *testing.T) {
	tests := []struct {
		name  string
		batch bool
		want  map[fake.RolloutMethod]int
	}{
		{name: "an OperandBatchReader is asked once a sync", batch: true,
			want: map[fake.RolloutMethod]int{fake.RolloutListNodes: 1, fake.RolloutGetOperands: 1, fake.RolloutGetInstaller: 1, fake.RolloutEnsureInstaller: 1}},
		{name: "an OperandReader is asked once a node",
			want: map[fake.RolloutMethod]int{fake.RolloutListNodes: 1, fake.RolloutGetOperand: 3, fake.RolloutGetInstaller: 1, fake.RolloutEnsureInstaller: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a", "b", "c")
			store := fake.NewRolloutStatusStore(2, 1, "a", "b", "c")
			store.Status.NodeStatuses[1].TargetRevision = 2
			var operands rollout.OperandReader = cluster
			if !tt.batch {
				operands = rollout.OperandReaderFunc(cluster.GetOperand)
			}
			h := newHarness(t, rollout.Config{Status: store, Installers: cluster, Operands: operands, Nodes: cluster, Clock: clk})

			_, err := h.sync(ctx)
			require.NoError(t, err)
			count := map[fake.RolloutMethod]int{}
			for _, call := range cluster.Recorded() {
				count[call.Method]++
			}
			assert.Equal(t, tt.want, count)
			assert.Equal(t, 1, store.Reads)
		})
	}
}

func TestControllerSyncConflicts(t *testing.T) {
	tests := []struct {
		name      string
		conflicts int
		api       bool
		retries   int
		wantErr   bool
	}{
		{name: "no conflict", conflicts: 0},
		{name: "one conflict is retried", conflicts: 1},
		{name: "the apiserver's own 409 is retried too", conflicts: 1, api: true},
		{name: "conflicts up to the retry budget", conflicts: 3},
		{name: "more conflicts than retries", conflicts: 4, wantErr: true},
		{name: "more 409s than retries", conflicts: 4, api: true, wantErr: true},
		{name: "custom retry budget", conflicts: 5, retries: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
			store := fake.NewRolloutStatusStore(2, 1, "a", "b")
			store.Conflicts, store.APIConflicts = tt.conflicts, tt.api
			h := newHarness(t, rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk, ConflictRetries: tt.retries})

			_, err := h.sync(ctx)
			if tt.wantErr {
				require.True(t, converge.IsConflict(err), "%v", err)
				assert.Contains(t, err.Error(), "rollout: writing status of node a")
				assert.Empty(t, cluster.CreatedInstallers(), "nothing acted on without a write")
				assert.Empty(t, h.reasons())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.conflicts, store.ConflictsReturned)
			a, _ := store.Current().Node("a")
			assert.Equal(t, int32(2), a.TargetRevision, "the transition survived the conflicts")
			assert.Equal(t, []rollout.Installer{{Node: "a", Revision: 2, Name: "installer-2-a"}}, cluster.CreatedInstallers())
			assert.Equal(t, []string{rollout.ReasonNodeTargetRevisionChanged}, h.reasons(), "reported once")
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
			c.SetError(fake.RolloutGetOperands, boom)
		}, wantErr: "rollout: reading operands: boom"},
		{name: "node list", setup: func(_ *fake.RolloutStatusStore, c *fake.RolloutCluster) {
			c.SetError(fake.RolloutListNodes, boom)
		}, wantErr: "rollout: listing nodes: boom"},
		{name: "installer create", setup: func(_ *fake.RolloutStatusStore, c *fake.RolloutCluster) {
			c.SetError(fake.RolloutEnsureInstaller, boom)
		}, wantErr: "rollout: creating installer installer-2-a: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a")
			store := fake.NewRolloutStatusStore(2, 1, "a")
			tt.setup(store, cluster)
			h := newController(t, store, cluster, clk, rollout.Policy{})
			_, ctx := ktesting.NewTestContext(t)
			_, err := h.sync(ctx)
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
	h := newController(t, store, cluster, clk, rollout.Policy{})

	_, err := h.sync(ctx)
	require.NoError(t, err)
	assert.True(t, store.Current().Converged())
	assert.Equal(t, 1, store.WriteCount(), "conditions and node order written once")
	st := store.Current()
	assert.Equal(t, "a", st.NodeStatuses[0].NodeName)
	assert.Len(t, st.Conditions, 3)

	clk.Step(time.Minute)
	_, err = h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, store.WriteCount(), "nothing to write the second time")
	assert.Empty(t, h.reasons())
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
	store.Status.NodeStatuses[0].InstallerOrderedTime = &metaT0
	store.Conflicts = 1
	j := &journal{store: store, cluster: cluster}
	h := newHarness(t, rollout.Config{Status: j, Installers: j, Operands: cluster, Clock: clk,
		Policy: rollout.Policy{InstallerPendingTimeout: dur(time.Minute)}})

	res, err := h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, store.ConflictsReturned, "the failure's first write was lost")
	assert.Equal(t, []string{"write", "write", "delete installer-2-a", "write"}, j.entries,
		"the failure is written before the installer goes; nothing is re-created")
	a, _ := store.Current().Node("a")
	assert.Equal(t, int32(2), a.TargetRevision)
	assert.Equal(t, int32(2), a.LastFailedRevision)
	assert.Equal(t, int32(1), a.LastFailedCount, "the timeout is recorded once")
	assert.Equal(t, []string{"installer installer-2-a did not finish within 1m0s (Pending)"}, a.LastFailedErrors)
	assert.Equal(t, []string{rollout.ReasonInstallerPodFailed}, h.reasons(), "reported once, after the successful write")
	assert.Empty(t, cluster.CreatedInstallers())
	assert.NotContains(t, cluster.Pods, "installer-2-a")
	assert.Empty(t, store.Current().InstallersToDelete, "confirmed gone")
	assert.Equal(t, 15*time.Second, res.RequeueAfter)

	clk.Step(15 * time.Second)
	_, err = h.sync(ctx)
	require.NoError(t, err)
	created := cluster.CreatedInstallers()
	require.Len(t, created, 1)
	assert.Equal(t, "installer-2-retry-1-a", created[0].Name, "the retry gets a new name")
}

// TestFailedDeleteIsRetriedAcrossRestarts: an installer that must go stays
// in the status while its delete fails, a new Controller (a restart) keeps
// deleting it, and the node's next installer waits until it is gone.
func TestFailedDeleteIsRetriedAcrossRestarts(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	cluster.Pods["installer-2-a"] = &fake.RolloutPod{
		Installer: rollout.Installer{Node: "a", Revision: 2, Name: "installer-2-a"},
		State:     rollout.InstallerState{Phase: rollout.InstallerRunning, StartTime: t0}}
	store := fake.NewRolloutStatusStore(3, 1, "a")
	store.Status.NodeStatuses[0].TargetRevision = 2
	store.Status.NodeStatuses[0].InstallerOrderedTime = &metaT0
	cluster.SetError(fake.RolloutDeleteInstaller, errors.New("apiserver unavailable"))

	res, err := newController(t, store, cluster, clk, rollout.Policy{}).sync(ctx)
	require.NoError(t, err, "a failed delete does not fail the sync")
	assert.Equal(t, []rollout.Installer{{Name: "installer-2-a", Node: "a", Revision: 2}}, store.Current().InstallersToDelete)
	assert.Positive(t, res.RequeueAfter, "looks again to retry the delete")

	restarted := newController(t, store, cluster, clk, rollout.Policy{})
	_, err = restarted.sync(ctx)
	require.NoError(t, err)
	assert.Empty(t, cluster.CreatedInstallers(), "no new installer while the old one may still run")
	assert.Len(t, store.Current().InstallersToDelete, 1, "still remembered after a restart")

	cluster.SetError(fake.RolloutDeleteInstaller, nil)
	_, err = restarted.sync(ctx)
	require.NoError(t, err)
	assert.Empty(t, store.Current().InstallersToDelete, "forgotten once confirmed gone")
	assert.NotContains(t, cluster.Pods, "installer-2-a")
	_, err = restarted.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Installer{{Name: "installer-3-a", Node: "a", Revision: 3}}, cluster.CreatedInstallers())
}

// TestNodeThatLeavesHasItsInstallerDeleted: a node dropped from the node
// list loses its status and its unfinished installer.
func TestNodeThatLeavesHasItsInstallerDeleted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	store := fake.NewRolloutStatusStore(2, 1, "a", "b")
	h := newController(t, store, cluster, clk, rollout.Policy{})
	_, err := h.sync(ctx)
	require.NoError(t, err)
	require.Contains(t, cluster.Pods, "installer-2-a")

	cluster.RemoveNode("a")
	cluster.AddNode("c")
	_, err = h.sync(ctx)
	require.NoError(t, err)
	st := store.Current()
	_, hasA := st.Node("a")
	_, hasC := st.Node("c")
	assert.False(t, hasA, "a left")
	assert.True(t, hasC, "c joined")
	assert.NotContains(t, cluster.Pods, "installer-2-a", "a's installer is deleted")
	assert.Empty(t, st.InstallersToDelete)
}

func TestControllerSyncBackoffRequeue(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	cluster.ScriptInstallers("a", fake.InstallerScript{Outcome: fake.InstallerFails, Message: "no disk"})
	store := fake.NewRolloutStatusStore(2, 1, "a")
	h := newController(t, store, cluster, clk, rollout.Policy{})

	_, err := h.sync(ctx)
	require.NoError(t, err)
	cluster.Tick()
	cluster.Tick()
	res, err := h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, res.RequeueAfter, "library-go's first retry waits 15 s")
	assert.Equal(t, []string{rollout.ReasonNodeTargetRevisionChanged, rollout.ReasonInstallerPodFailed}, h.reasons())

	clk.Step(14 * time.Second)
	res, err = h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, time.Second, res.RequeueAfter)
	assert.Len(t, cluster.CreatedInstallers(), 1, "no retry before the backoff")

	clk.Step(time.Second)
	_, err = h.sync(ctx)
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
	h := newHarness(t, rollout.Config{
		Status:     store,
		Installers: cluster,
		Operands: rollout.OperandReaderFunc(func(ctx context.Context, node string) (rollout.OperandState, error) {
			return cluster.GetOperand(ctx, node)
		}),
		Nodes: rollout.NodeListerFunc(func(context.Context) ([]rollout.Node, error) {
			return []rollout.Node{{Name: "a", Unreachable: true}, {Name: "b"}}, nil
		}),
		Clock:  clk,
		Policy: rollout.Policy{MaxUnavailable: 2},
	})
	_, err := h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []rollout.Installer{{Node: "b", Revision: 2, Name: "installer-2-b"}}, cluster.CreatedInstallers(), "unreachable a skipped")
	assert.Equal(t, []string{rollout.ReasonNodeTargetRevisionChanged}, h.reasons())
	b, _ := store.Current().Node("b")
	assert.Equal(t, int32(2), b.TargetRevision)
}

func TestControllerSyncCancelled(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	store := fake.NewRolloutStatusStore(2, 1, "a")
	h := newController(t, store, cluster, clk, rollout.Policy{})
	_, err := h.sync(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, store.WriteCount(), "nothing written once the context is done")
	assert.Empty(t, cluster.CreatedInstallers())
}

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }

// A failed status write names each node whose decisions it carried once,
// however many steps a node took in the sync (a node that joins and starts
// takes two).
func TestSyncWriteErrorNamesEachChangedNodeOnce(t *testing.T) {
	tests := []struct {
		name   string
		nodes  []string // in the cluster
		status []string // in the persisted status
		want   string
	}{
		{name: "a node that joins and starts", nodes: []string{"a"},
			want: "rollout: writing status of node a: write refused"},
		{name: "two nodes that join, one that starts", nodes: []string{"a", "b"},
			want: "rollout: writing status of node a and 1 more: write refused"},
		{name: "a known node that starts", nodes: []string{"a"}, status: []string{"a"},
			want: "rollout: writing status of node a: write refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, tt.nodes...)
			store := fake.NewRolloutStatusStore(2, 1, tt.status...)
			store.UpdateErr = errors.New("write refused")
			h := newHarness(t, rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk})
			_, err := h.sync(ctx)
			assert.EqualError(t, err, tt.want)
		})
	}
}

// TestControllerSyncOperandReadError: an OperandReader that fails names the
// node it failed for.
func TestControllerSyncOperandReadError(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a")
	store := fake.NewRolloutStatusStore(2, 1, "a")
	boom := errors.New("boom")
	h := newHarness(t, rollout.Config{Status: store, Installers: cluster, Clock: clk,
		Operands: rollout.OperandReaderFunc(func(context.Context, string) (rollout.OperandState, error) { return rollout.OperandState{}, boom })})
	_, err := h.sync(ctx)
	require.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "rollout: reading operand of node a: boom")
	assert.Zero(t, store.WriteCount())
}

// TestGateThatErrorsThenAdmits: a gate that cannot answer holds the node
// (fail safe), explained at once; once it admits, the node starts and the
// hold ends.
func TestGateThatErrorsThenAdmits(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	store := fake.NewRolloutStatusStore(2, 1, "a", "b")
	answer := errors.New("etcd: member list timed out")
	var asked []string
	gate := rollout.GateFunc(func(_ context.Context, d rollout.Disruption) error {
		asked = append(asked, d.Installer.Name)
		return answer
	})
	h := newHarness(t, rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk, Gate: gate})

	_, err := h.sync(ctx)
	require.NoError(t, err)
	st := store.Current()
	assert.Empty(t, cluster.CreatedInstallers(), "an error holds the node")
	assert.Equal(t, []string{"installer-2-a"}, asked, "one start is asked about at a time")
	progressing, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
	assert.Equal(t, rollout.ReasonRolloutHeld, progressing.Reason)
	assert.Contains(t, progressing.Message, "the gate holds a: etcd: member list timed out")
	require.NotNil(t, st.HeldSince)

	answer, asked = nil, nil
	clk.Step(time.Minute)
	_, err = h.sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"installer-2-a"}, asked)
	assert.Equal(t, []rollout.Installer{{Name: "installer-2-a", Node: "a", Revision: 2}}, cluster.CreatedInstallers())
	st = store.Current()
	assert.Nil(t, st.HeldSince, "the hold ended")
	progressing, _ = conditions.Get(st.Conditions, conditions.TypeProgressing)
	assert.Equal(t, rollout.ReasonNodesProgressing, progressing.Reason)
}

// TestNodeRemovedAndAddedAgainStartsAfresh: a node that leaves with its
// installer pending and comes back under the same name and UID starts at
// the revision its operand runs, and its new installer waits for the old
// one to be gone.
func TestNodeRemovedAndAddedAgainStartsAfresh(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	cluster.UIDs = map[string]string{"a": "uid-a", "b": "uid-b"}
	store := fake.NewRolloutStatusStore(2, 1, "a", "b")
	h := newController(t, store, cluster, clk, rollout.Policy{MaxUnavailable: 2})
	createdOnA := func() (out []rollout.Installer) {
		for _, inst := range cluster.CreatedInstallers() {
			if inst.Node == "a" {
				out = append(out, inst)
			}
		}
		return out
	}

	_, err := h.sync(ctx)
	require.NoError(t, err)
	require.Equal(t, []rollout.Installer{{Name: "installer-2-a", Node: "a", Revision: 2}}, createdOnA())

	cluster.RemoveNode("a")
	cluster.SetError(fake.RolloutDeleteInstaller, errors.New("apiserver unavailable"))
	clk.Step(time.Second)
	_, err = h.sync(ctx)
	require.NoError(t, err)
	_, found := store.Current().Node("a")
	assert.False(t, found, "a left")
	assert.Equal(t, []rollout.Installer{{Name: "installer-2-a", Node: "a", Revision: 2}}, store.Current().InstallersToDelete)

	cluster.AddNode("a")
	clk.Step(time.Second)
	_, err = h.sync(ctx)
	require.NoError(t, err)
	a, found := store.Current().Node("a")
	require.True(t, found)
	assert.Equal(t, rollout.NodeStatus{NodeName: "a", NodeUID: "uid-a", CurrentRevision: 1}, a, "nothing of its earlier life")
	assert.Len(t, createdOnA(), 1, "its installer waits for the old one, of the same name, to go")

	cluster.SetError(fake.RolloutDeleteInstaller, nil)
	for range 2 {
		clk.Step(5 * time.Second)
		_, err = h.sync(ctx)
		require.NoError(t, err)
	}
	assert.Empty(t, store.Current().InstallersToDelete)
	assert.Len(t, createdOnA(), 2, "then it starts again")
	pod, ok := cluster.Pod("installer-2-a")
	require.True(t, ok)
	assert.Equal(t, rollout.InstallerPending, pod.State.Phase, "a new pod, not the one deleted")
}

// TestOnDecisionSeesEachDecisionActedOn: OnDecision is handed each decision
// a sync acts on, before the write: its status is what is persisted, its
// events are the sync's, and a conflict decides again.
func TestOnDecisionSeesEachDecisionActedOn(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 1, "a", "b")
	store := fake.NewRolloutStatusStore(2, 1, "a", "b")
	var decided []rollout.Decision
	h := newHarness(t, rollout.Config{Status: store, Installers: cluster, Operands: cluster, Nodes: cluster, Clock: clk,
		OnDecision: func(d rollout.Decision) { decided = append(decided, d) }})
	store.Conflicts = 1

	res, err := h.sync(ctx)
	require.NoError(t, err)
	require.Len(t, decided, 2, "the conflict decided again")
	last := decided[1]
	assert.Equal(t, store.Current(), last.Status)
	assert.Equal(t, res.Events, last.Events)
	assert.Equal(t, res.RequeueAfter, last.RequeueAfter)
}
