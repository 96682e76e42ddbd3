package rollout_test

import (
	"fmt"
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

// sim is a multi-node rollout driven by the Controller against the fakes,
// through fixed scenarios (TestSimRollout explores random ones).
type sim struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	cluster *fake.RolloutCluster
	store   *fake.RolloutStatusStore
	events  []converge.Event
	policy  rollout.Policy
	// maxUnavailable is the most reachable nodes seen in transition or not ready after any sync.
	maxUnavailable int
	maxTransition  int
	syncs          int
}

// newSim builds five nodes in different states, latest revision 4:
// a at 3, b at 1, c at 2, d at 3 with a crashed operand, e at 2.
func newSim(t *testing.T, p rollout.Policy) *sim {
	clk := clocktesting.NewFakeClock(t0)
	cluster := fake.NewRolloutCluster(clk, 0, "a", "b", "c", "d", "e")
	store := &fake.RolloutStatusStore{Status: rollout.Status{LatestAvailableRevision: 4}}
	for _, n := range []struct {
		name string
		rev  int32
	}{{"a", 3}, {"b", 1}, {"c", 2}, {"d", 3}, {"e", 2}} {
		store.Status.NodeStatuses = append(store.Status.NodeStatuses, rollout.NodeStatus{NodeName: n.name, CurrentRevision: n.rev})
		cluster.Operands[n.name] = rollout.OperandState{Phase: rollout.OperandReady, Revision: n.rev, ReadySince: t0}
	}
	cluster.Operands["d"] = rollout.OperandState{Phase: rollout.OperandFailed, Revision: 3, Message: "crashed"}
	return &sim{t: t, clk: clk, cluster: cluster, store: store, policy: p}
}

func (s *sim) controller() *rollout.Controller {
	c, err := rollout.NewController(rollout.Config{Status: s.store, Installers: s.cluster, Operands: s.cluster, Nodes: s.cluster,
		Clock: s.clk, Policy: s.policy})
	require.NoError(s.t, err)
	return c
}

func (s *sim) reasons() []string {
	var out []string
	for _, e := range s.events {
		out = append(out, e.Reason)
	}
	return out
}

// run syncs with c until converged or max syncs, letting the kubelet move
// and the clock advance in between, and checks the budget after every sync.
func (s *sim) run(c *rollout.Controller, max int) bool {
	s.t.Helper()
	_, ctx := ktesting.NewTestContext(s.t)
	for range max {
		res, err := c.Sync(ctx)
		require.NoError(s.t, err)
		s.events = append(s.events, res.Events...)
		s.syncs++
		s.check()
		if s.store.Current().Converged() {
			return true
		}
		step := time.Second
		if !s.cluster.Tick() && res.RequeueAfter > 0 {
			step = res.RequeueAfter
		}
		s.clk.Step(step)
	}
	return false
}

// check records how many reachable nodes are in transition or not ready
// now, and how many are in transition in every status written.
func (s *sim) check() {
	st := s.store.Current()
	unavailable := 0
	for _, n := range st.NodeStatuses {
		if s.cluster.Unreachable[n.NodeName] {
			continue
		}
		if n.InTransition() || s.cluster.Operand(n.NodeName).Phase != rollout.OperandReady {
			unavailable++
		}
	}
	for _, n := range st.NodeStatuses {
		if s.cluster.Unreachable[n.NodeName] {
			unavailable++
		}
	}
	s.maxUnavailable = max(s.maxUnavailable, unavailable)
	for _, w := range s.store.Writes {
		inTransition := 0
		for _, n := range w.NodeStatuses {
			if n.InTransition() && !s.cluster.Unreachable[n.NodeName] {
				inTransition++
			}
		}
		s.maxTransition = max(s.maxTransition, inTransition)
	}
}

// orderedAt is when the engine ordered the named installer, as the writes
// tell (its finished installers are deleted).
func (s *sim) orderedAt(name string) time.Time {
	s.t.Helper()
	for _, w := range s.store.Writes {
		for _, n := range w.NodeStatuses {
			if n.InstallerOrderedTime != nil && rollout.InstallerName(n) == name {
				return n.InstallerOrderedTime.Time
			}
		}
	}
	s.t.Fatalf("no write orders %s", name)
	return time.Time{}
}

func (s *sim) installerOrder() []string {
	var out []string
	for _, i := range s.cluster.CreatedInstallers() {
		out = append(out, i.Name)
	}
	return out
}

func TestSimulationWorstFirst(t *testing.T) {
	s := newSim(t, rollout.Policy{})
	require.True(t, s.run(s.controller(), 100))

	// d (crashed operand) first, then the oldest current revisions, ties by name.
	assert.Equal(t, []string{"installer-4-d", "installer-4-b", "installer-4-c", "installer-4-e", "installer-4-a"}, s.installerOrder())
	assert.LessOrEqual(t, s.maxUnavailable, 1, "MaxUnavailable never exceeded")
	assert.Equal(t, 1, s.maxTransition)
	for _, n := range s.store.Current().NodeStatuses {
		assert.Equal(t, rollout.NodeStatus{NodeName: n.NodeName, CurrentRevision: 4}, n)
	}
	p, _ := conditions.Get(s.store.Current().Conditions, conditions.TypeProgressing)
	assert.Equal(t, metav1.ConditionFalse, p.Status)
	assert.Equal(t, "5 nodes are at revision 4", p.Message)
	current := 0
	for _, r := range s.reasons() {
		if r == rollout.ReasonNodeCurrentRevisionChanged {
			current++
		}
	}
	assert.Equal(t, 5, current, "one current-revision change per node")
}

func TestSimulationMaxUnavailable(t *testing.T) {
	for _, budget := range []int32{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			s := newSim(t, rollout.Policy{MaxUnavailable: budget})
			s.cluster.ScriptInstallers("c", fake.InstallerScript{Outcome: fake.InstallerFails, Message: "flaky"})
			require.True(t, s.run(s.controller(), 200))
			assert.LessOrEqual(t, s.maxUnavailable, int(budget))
			assert.LessOrEqual(t, s.maxTransition, int(budget))
			if budget > 1 {
				assert.Greater(t, s.maxTransition, 1, "a larger budget is used")
			}
			assert.True(t, s.store.Current().Converged())
		})
	}
}

func TestSimulationRestartAndConflicts(t *testing.T) {
	reference := newSim(t, rollout.Policy{})
	require.True(t, reference.run(reference.controller(), 100))

	t.Run("restart mid-rollout", func(t *testing.T) {
		s := newSim(t, rollout.Policy{})
		assert.False(t, s.run(s.controller(), 7), "still rolling out")
		mid := s.store.Current()
		assert.False(t, mid.Converged())
		require.True(t, s.run(s.controller(), 100), "a new controller continues from status alone")
		assert.Equal(t, reference.installerOrder(), s.installerOrder())
		assert.Equal(t, reference.store.Current().NodeStatuses, s.store.Current().NodeStatuses)
	})

	t.Run("injected conflicts lose nothing", func(t *testing.T) {
		s := newSim(t, rollout.Policy{})
		c := s.controller()
		_, ctx := ktesting.NewTestContext(t)
		converged := false
		for i := 0; i < 200 && !converged; i++ {
			if i%2 == 0 {
				s.store.Conflicts = 1
			}
			res, err := c.Sync(ctx)
			require.NoError(t, err)
			s.events = append(s.events, res.Events...)
			s.check()
			converged = s.store.Current().Converged()
			step := time.Second
			if !s.cluster.Tick() && res.RequeueAfter > 0 {
				step = res.RequeueAfter
			}
			s.clk.Step(step)
		}
		require.True(t, converged)
		assert.Positive(t, s.store.ConflictsReturned)
		assert.Equal(t, reference.installerOrder(), s.installerOrder())
		assert.Equal(t, reference.reasons(), s.reasons(), "every transition reported once")
		assert.LessOrEqual(t, s.maxUnavailable, 1)
	})
}

func TestSimulationFailuresAndRetries(t *testing.T) {
	s := newSim(t, rollout.Policy{})
	s.cluster.ScriptInstallers("b",
		fake.InstallerScript{Outcome: fake.InstallerOOMKilled},
		fake.InstallerScript{Outcome: fake.InstallerOOMKilled},
	)
	s.cluster.ScriptInstallers("e", fake.InstallerScript{Outcome: fake.InstallerDisappears, PendingTicks: 1})
	require.True(t, s.run(s.controller(), 200))
	assert.Equal(t, []string{"installer-4-d", "installer-4-b", "installer-4-retry-1-b", "installer-4-retry-2-b",
		"installer-4-c", "installer-4-e", "installer-4-retry-1-e", "installer-4-a"}, s.installerOrder(), "e's installer, seen and then vanished, is a failed attempt, retried under a new name")
	b, _ := s.store.Current().Node("b")
	assert.Equal(t, int32(4), b.CurrentRevision)
	assert.Equal(t, int32(2), b.LastFailedCount)
	assert.Equal(t, []string{"installer: OOMKilled"}, b.LastFailedErrors)
	assert.False(t, b.Failing())
	e, _ := s.store.Current().Node("e")
	assert.Equal(t, rollout.ReasonInstallerPodDisappeared, e.LastFailedReason, "a vanished installer is a failure")
	assert.Contains(t, s.reasons(), rollout.ReasonInstallerPodDisappeared)
}

func TestSimulationPendingTimeoutAndGiveUp(t *testing.T) {
	s := newSim(t, rollout.Policy{InstallerPendingTimeout: dur(time.Minute), MaxInstallerRetries: 1})
	s.cluster.ScriptInstallers("d",
		fake.InstallerScript{Outcome: fake.InstallerHangs},
		fake.InstallerScript{Outcome: fake.InstallerHangs},
	)
	assert.False(t, s.run(s.controller(), 300))
	d, _ := s.store.Current().Node("d")
	assert.Equal(t, int32(4), d.TargetRevision)
	assert.Equal(t, int32(2), d.LastFailedCount)
	assert.Equal(t, []string{"installer-4-d", "installer-4-retry-1-d"}, s.installerOrder(), "gave up after one retry; the budget holds the rest")
	assert.NotContains(t, s.cluster.Pods, "installer-4-d", "timed out installers are deleted")
	deg, _ := conditions.Get(s.store.Current().Conditions, conditions.TypeDegraded)
	assert.Equal(t, metav1.ConditionTrue, deg.Status)
	assert.Equal(t, rollout.ReasonInstallerRetriesExhausted, deg.Reason)
	assert.Contains(t, deg.Message, "1 node is failing on revision 4:\nd: installer installer-4-retry-1-d did not finish within 1m0s (Pending)")

	// A newer revision supersedes the stuck one and the rollout converges.
	s.store.SetLatest(5)
	require.True(t, s.run(s.controller(), 300))
}

// TestUnreachableCountsAsUnavailable: an unreachable node counts against
// MaxUnavailable, so with a budget of 1 nothing else is taken down while it
// is away (etcd keeps its quorum); the hold is reported, Degraded once it
// lasts, and the rollout goes on once the node is back. With a budget of 2
// the others proceed and the unreachable node is still never started.
func TestUnreachableCountsAsUnavailable(t *testing.T) {
	s := newSim(t, rollout.Policy{})
	s.cluster.SetOperand("d", rollout.OperandState{Phase: rollout.OperandReady, Revision: 3, ReadySince: t0})
	s.cluster.SetUnreachable("a", true)
	assert.False(t, s.run(s.controller(), 100))
	assert.Empty(t, s.installerOrder(), "no node is started while a is away")
	st := s.store.Current()
	prog, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
	assert.Equal(t, rollout.ReasonRolloutHeld, prog.Reason)
	assert.Equal(t, []converge.Hold{{Reason: rollout.HoldNodeUnavailable, Object: "a",
		Message: "a is unavailable (unreachable) and maxUnavailable 1 is reached: raise maxUnavailable, or drop a node that is gone for good from the node list"}},
		st.Holds, "persisted, with the way out")
	assert.Contains(t, prog.Message, "starting nodes is held: "+st.Holds[0].Message)
	deg, _ := conditions.Get(st.Conditions, conditions.TypeDegraded)
	assert.Equal(t, rollout.ReasonRolloutHeld, deg.Reason, "the hold lasted longer than 10 minutes")
	assert.Contains(t, deg.Message, "raise maxUnavailable, or drop a node that is gone for good from the node list")

	s.cluster.SetUnreachable("a", false)
	require.True(t, s.run(s.controller(), 100))
	assert.Nil(t, s.store.Current().HeldSince, "the hold is over")
	assert.Empty(t, s.store.Current().Holds)

	two := newSim(t, rollout.Policy{MaxUnavailable: 2})
	two.cluster.SetOperand("d", rollout.OperandState{Phase: rollout.OperandReady, Revision: 3, ReadySince: t0})
	two.cluster.SetUnreachable("a", true)
	assert.False(t, two.run(two.controller(), 100))
	for _, n := range two.store.Current().NodeStatuses {
		if n.NodeName == "a" {
			assert.Equal(t, rollout.NodeStatus{NodeName: "a", CurrentRevision: 3}, n, "never started")
			continue
		}
		assert.Equal(t, int32(4), n.CurrentRevision, n.NodeName)
	}
	assert.LessOrEqual(t, two.maxUnavailable, 2)
}

func TestSimulationSoak(t *testing.T) {
	s := newSim(t, rollout.Policy{MinReadyDuration: dur(30 * time.Second)})
	require.True(t, s.run(s.controller(), 300))
	created := s.cluster.CreatedInstallers()
	require.Len(t, created, 5)
	for i := 1; i < len(created); i++ {
		prev := s.cluster.Operand(created[i-1].Node).ReadySince
		assert.GreaterOrEqual(t, s.orderedAt(created[i].Name).Sub(prev), 30*time.Second,
			"%s started only after %s soaked", created[i].Name, created[i-1].Node)
	}
}

func TestSimulationPaused(t *testing.T) {
	s := newSim(t, rollout.Policy{})
	assert.False(t, s.run(s.controller(), 4))
	before := s.installerOrder()
	require.NotEmpty(t, before)

	s.policy.Paused = true
	assert.False(t, s.run(s.controller(), 50))
	assert.Equal(t, before, s.installerOrder(), "paused: no new installer")
	for _, n := range s.store.Current().NodeStatuses {
		assert.False(t, n.InTransition(), "the node in flight finished, nothing else started: %s", n.NodeName)
	}

	s.policy.Paused = false
	require.True(t, s.run(s.controller(), 100))
}

func TestSimulationOperandFailsOnceThenRecovers(t *testing.T) {
	s := newSim(t, rollout.Policy{})
	s.cluster.OperandFails = map[string]map[int32]string{"b": {4: "CrashLoopBackOff"}}
	c := s.controller()
	converged := false
	var failedAt time.Time
	for range 200 {
		if converged = s.run(c, 1); converged {
			break
		}
		if b, _ := s.store.Current().Node("b"); b.LastFailedReason == rollout.ReasonOperandFailed && failedAt.IsZero() {
			failedAt = b.LastFailedTime.Time
			delete(s.cluster.OperandFails, "b") // the next static pod of revision 4 comes up
		}
	}
	require.True(t, converged, "the failed node retried the latest revision and the rollout finished")
	require.False(t, failedAt.IsZero())

	assert.Equal(t, []string{"installer-4-d", "installer-4-b", "installer-4-retry-1-b", "installer-4-c", "installer-4-e", "installer-4-a"},
		s.installerOrder(), "b retries under a new name before anyone else starts revision 4")
	retry := s.orderedAt("installer-4-retry-1-b")
	assert.GreaterOrEqual(t, retry.Sub(failedAt), 15*time.Second, "retried after the backoff")
	assert.LessOrEqual(t, s.maxUnavailable, 1, "MaxUnavailable never exceeded")
	assert.Equal(t, 1, s.maxTransition)
	b, _ := s.store.Current().Node("b")
	assert.Equal(t, int32(4), b.CurrentRevision)
	assert.False(t, b.Failing())
	deg, _ := conditions.Get(s.store.Current().Conditions, conditions.TypeDegraded)
	assert.Equal(t, metav1.ConditionFalse, deg.Status)
}

func TestSimulationOperandFailsUntilRetriesExhausted(t *testing.T) {
	s := newSim(t, rollout.Policy{MaxInstallerRetries: 2})
	s.cluster.OperandFails = map[string]map[int32]string{"b": {4: "CrashLoopBackOff"}}
	assert.False(t, s.run(s.controller(), 200))
	assert.Equal(t, []string{"installer-4-d", "installer-4-b", "installer-4-retry-1-b", "installer-4-retry-2-b"}, s.installerOrder(),
		"two retries, then nothing else starts the failing revision")
	b, _ := s.store.Current().Node("b")
	assert.Equal(t, rollout.NodeStatus{NodeName: "b", CurrentRevision: 1, LastFailedRevision: 4, LastFailedCount: 3,
		LastFailedReason: rollout.ReasonOperandFailed, LastFailedErrors: []string{"CrashLoopBackOff"}, LastFailedTime: b.LastFailedTime, RetryTime: b.RetryTime}, b)
	assert.LessOrEqual(t, s.maxUnavailable, 1)
	deg, _ := conditions.Get(s.store.Current().Conditions, conditions.TypeDegraded)
	assert.Equal(t, metav1.ConditionTrue, deg.Status)
	assert.Equal(t, rollout.ReasonInstallerRetriesExhausted, deg.Reason)
	assert.Equal(t, "1 node is failing on revision 4:\nb: CrashLoopBackOff\nb: gave up after 3 failures (maxInstallerRetries 2); "+
		"starting nodes is held: b gave up on revision 4 after 3 failures; revision 4 is failing on b: e waits", deg.Message)
	assert.Contains(t, s.reasons(), rollout.ReasonInstallerRetriesExhausted)

	// A newer revision moves the node that gave up, and the rollout converges.
	delete(s.cluster.OperandFails, "b")
	s.store.SetLatest(5)
	require.True(t, s.run(s.controller(), 300))
}
