package rollout

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// stepSummary is the part of a step a table compares.
type stepSummary struct {
	Node   string
	Target int32
	Create string
}

func summarizeSteps(p Decision) []stepSummary {
	var out []stepSummary
	for _, s := range p.Steps {
		if !s.Acts() {
			continue
		}
		sum := stepSummary{Node: s.Node}
		if s.To != nil {
			sum.Target = s.To.TargetRevision
		}
		if s.Create != nil {
			sum.Create = s.Create.Name
		}
		out = append(out, sum)
	}
	return out
}

// planFor plans with every status node observed: a node missing from obs
// is observed as the zero NodeObservation (reachable, no operand).
func planFor(st Status, obs Observation, p Policy, now time.Time) (Decision, error) {
	full := Observation{}
	for _, n := range st.NodeStatuses {
		full[n.NodeName] = obs[n.NodeName]
	}
	for name, o := range obs {
		full[name] = o
	}
	return Decide(Input{Status: st, Observation: full, Policy: p, Now: now})
}

func TestDecide(t *testing.T) {
	now := t0.Add(time.Hour)
	threeFresh := []NodeStatus{node("a", 0, 0), node("b", 0, 0), node("c", 0, 0)}
	allReady := func(rev int32, names ...string) Observation {
		o := Observation{}
		for _, n := range names {
			o[n] = ready(rev)
		}
		return o
	}
	tests := []struct {
		name        string
		st          Status
		obs         Observation
		policy      Policy
		wantSteps   []stepSummary
		wantStart   string
		wantHolds   []heldBy
		wantRequeue time.Duration
	}{
		{
			name:      "three fresh nodes: one at a time",
			st:        Status{LatestAvailableRevision: 1, NodeStatuses: threeFresh},
			wantSteps: []stepSummary{{"a", 1, "installer-1-a"}},
			wantStart: "a",
		},
		{
			name:      "three fresh nodes with a budget of three",
			st:        Status{LatestAvailableRevision: 1, NodeStatuses: threeFresh},
			policy:    Policy{MaxUnavailable: 3},
			wantSteps: []stepSummary{{"a", 1, "installer-1-a"}, {"b", 1, "installer-1-b"}, {"c", 1, "installer-1-c"}},
			wantStart: "a",
		},
		{
			name: "one node already transitioning: nothing else starts",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 2), node("c", 1, 0)}},
			obs: Observation{"a": ready(1), "c": ready(1),
				"b": withInstaller(ready(1), InstallerRunning)},
			wantStart: "b",
		},
		{
			name: "a node that failed the latest revision retries it under a new name; the others wait",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0),
				failed(node("c", 1, 0), 2, 1, ReasonOperandFailed, t0, "crash")}},
			obs:       Observation{"a": ready(1), "b": ready(1), "c": {Operand: OperandState{Phase: OperandFailed, Revision: 2}}},
			policy:    Policy{MaxUnavailable: 3},
			wantSteps: []stepSummary{{"c", 2, "installer-2-retry-1-c"}},
			wantStart: "c",
		},
		{
			name: "a node that failed the latest revision waits for its backoff",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0),
				failed(node("c", 1, 0), 2, 2, ReasonOperandFailed, now.Add(-4*time.Second), "crash")}},
			obs:         Observation{"a": ready(1), "b": ready(1), "c": {Operand: OperandState{Phase: OperandFailed, Revision: 2}}},
			policy:      Policy{MaxUnavailable: 3},
			wantStart:   "c",
			wantHolds:   []heldBy{{HoldBackoff, "c"}},
			wantRequeue: 18500 * time.Millisecond,
		},
		{
			name: "a node that failed the latest revision more often than MaxInstallerRetries halts the rollout",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0),
				failed(node("c", 1, 0), 2, 2, ReasonOperandFailed, t0, "crash")}},
			obs:         Observation{"a": ready(1), "b": ready(1), "c": {Operand: OperandState{Phase: OperandFailed, Revision: 2}}},
			policy:      Policy{MaxUnavailable: 3, MaxInstallerRetries: 1},
			wantStart:   "c",
			wantHolds:   []heldBy{{HoldRetriesExhausted, "c"}},
			wantRequeue: defaultHoldDegradedAfter, // the hold turns Degraded then
		},
		{
			name: "a start node held back by another node's failure hands the retry to that node",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0),
				failed(node("c", 1, 0), 2, 1, ReasonOperandFailed, t0, "crash")}},
			obs:       Observation{"a": ready(2), "b": pending(1), "c": {Operand: OperandState{Phase: OperandFailed, Revision: 2}}},
			wantSteps: []stepSummary{{"c", 2, "installer-2-retry-1-c"}},
			wantStart: "c",
		},
		{
			// Found by TestSimRollout (seeds 309, 3570): c waited for b's
			// retry of revision 2 while b's start waited for c to be
			// available. c is down: it starts the latest revision.
			name: "a node already down is not held back by a revision another node failed",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0),
				retryAt(failed(node("b", 1, 0), 2, 1, ReasonOperandFailed, t0, "crash"), t0), node("c", 0, 0)}},
			obs:         Observation{"a": ready(2), "b": ready(1)},
			wantSteps:   []stepSummary{{"c", 2, "installer-2-c"}},
			wantStart:   "b",
			wantHolds:   []heldBy{{HoldNodeUnavailable, "c"}},
			wantRequeue: defaultHoldDegradedAfter,
		},
		{
			// Found by TestSimRollout (seed 514): a node in transition whose
			// operand is not ready was started again on every sync, so its
			// OperandReadyTimeout never ran out.
			name: "a node in transition that is down is never started again",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0),
				installed(node("b", 1, 2), t0.Add(time.Hour-time.Minute))}},
			obs:         Observation{"a": ready(1), "b": withInstaller(pending(2), InstallerSucceeded)},
			policy:      Policy{MaxUnavailable: 2, OperandReadyTimeout: dur(3 * time.Minute)},
			wantSteps:   []stepSummary{{"a", 2, "installer-2-a"}},
			wantStart:   "b",
			wantRequeue: 2 * time.Minute,
		},
		{
			// Found by TestSimRollout (seed 8747): c, healthy, waited for
			// a's failing revision and ended the walk before d, down, was
			// reached; a's retry waited for d.
			name: "a healthy node held back by a failing revision does not stop a node already down further on",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				retryAt(failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, t0, "crashed"), t0), node("b", 2, 0), node("c", 1, 0), node("d", 0, 0)}},
			obs:         Observation{"a": ready(1), "b": ready(2), "c": ready(1)},
			wantSteps:   []stepSummary{{"d", 2, "installer-2-d"}},
			wantStart:   "a",
			wantHolds:   []heldBy{{HoldNodeUnavailable, "d"}, {HoldRevisionFailing, "c"}},
			wantRequeue: defaultHoldDegradedAfter,
		},
		{
			name:      "nodes at different old revisions: the oldest first, to the latest",
			st:        Status{LatestAvailableRevision: 5, NodeStatuses: []NodeStatus{node("a", 4, 0), node("b", 2, 0), node("c", 3, 0)}},
			obs:       Observation{"a": ready(4), "b": ready(2), "c": ready(3)},
			wantSteps: []stepSummary{{"b", 5, "installer-5-b"}},
			wantStart: "b",
		},
		{
			name: "after the first node is at the latest, the next follows it",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 3, 0), node("b", 2, 0), node("c", 2, 0)}},
			obs:  allReady(0, "a", "b", "c"),
			// operands at revision 0 differ from every current revision: the oldest, a, starts and is at the latest already.
			wantSteps: []stepSummary{{"b", 3, "installer-3-b"}},
			wantStart: "a",
		},
		{
			name:      "unready operands chosen first",
			st:        Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 2, 0), node("c", 2, 0)}},
			obs:       Observation{"a": ready(2), "b": ready(2), "c": pending(2)},
			wantSteps: []stepSummary{{"c", 3, "installer-3-c"}},
			wantStart: "c",
		},
		{
			name:      "a broken operand does not let a healthy node go down too",
			st:        Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 3, 0), node("c", 2, 0)}},
			obs:       Observation{"a": ready(2), "b": pending(3), "c": ready(2)},
			wantStart: "b",
			// b is at the latest but not ready: a would be a second unavailable
			// node. The hold turns Degraded in HoldDegradedAfter.
			wantHolds:   []heldBy{{HoldNodeUnavailable, "b"}},
			wantRequeue: defaultHoldDegradedAfter,
		},
		{
			name:      "a completed node lets the next one start in the same plan",
			st:        Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2), node("b", 1, 0)}},
			obs:       Observation{"a": withInstaller(ready(2), InstallerSucceeded), "b": ready(1)},
			wantSteps: []stepSummary{{"a", 0, ""}, {"b", 2, "installer-2-b"}},
			wantStart: "b",
		},
		{
			name:      "paused: nothing starts",
			st:        Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0)}},
			obs:       allReady(1, "a"),
			policy:    Policy{Paused: true},
			wantStart: "a",
			wantHolds: []heldBy{{HoldPaused, ""}},
		},
		{
			name:      "paused: in-flight completion is still recorded",
			st:        Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2), node("b", 1, 0)}},
			obs:       Observation{"a": ready(2), "b": ready(1)},
			policy:    Policy{Paused: true},
			wantSteps: []stepSummary{{"a", 0, ""}},
			wantStart: "b",
			wantHolds: []heldBy{{HoldPaused, ""}},
		},
		{
			name: "soak: wait until every ready operand was ready long enough",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
			obs: Observation{"a": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(-10 * time.Second)}},
				"b": {Operand: OperandState{Phase: OperandReady, Revision: 1, ReadySince: now.Add(-time.Hour)}}},
			policy:      Policy{MinReadyDuration: dur(30 * time.Second)},
			wantStart:   "b",
			wantHolds:   []heldBy{{HoldSoaking, "b"}},
			wantRequeue: 20 * time.Second,
		},
		{
			name: "soak over: start",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
			obs: Observation{"a": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(-30 * time.Second)}},
				"b": {Operand: OperandState{Phase: OperandReady, Revision: 1, ReadySince: now.Add(-time.Hour)}}},
			policy:    Policy{MinReadyDuration: dur(30 * time.Second)},
			wantSteps: []stepSummary{{"b", 2, "installer-2-b"}},
			wantStart: "b",
		},
		{
			name:      "unreachable nodes count as unavailable and are never started",
			st:        Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0), node("c", 1, 0)}},
			obs:       Observation{"a": {Unreachable: true, Operand: ready(1).Operand}, "b": ready(1), "c": ready(1)},
			policy:    Policy{MaxUnavailable: 2},
			wantSteps: []stepSummary{{"b", 2, "installer-2-b"}},
			wantStart: "b", wantHolds: []heldBy{{HoldNodeUnavailable, "a"}},
			wantRequeue: defaultHoldDegradedAfter,
		},
		{
			name: "budget above one: a failing node stops the revision from spreading",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "x"), node("b", 1, 0), node("c", 1, 0)}},
			obs:         Observation{"a": ready(1), "b": ready(1), "c": ready(1)},
			policy:      Policy{MaxUnavailable: 3},
			wantStart:   "a",
			wantRequeue: 15 * time.Second,
		},
		{
			name: "budget above one: a failing node stops the revision wherever it is in the ring",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "x"), node("b", 1, 2), node("c", 1, 0), node("d", 1, 0)}},
			obs:         Observation{"a": ready(1), "b": withInstaller(ready(1), InstallerRunning), "c": ready(1), "d": ready(1)},
			policy:      Policy{MaxUnavailable: 4},
			wantStart:   "a",
			wantHolds:   []heldBy{{HoldRevisionFailing, "c"}},
			wantRequeue: 15 * time.Second,
		},
		{
			name: "a failure of another revision does not block",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "x"), node("b", 1, 0)}},
			obs:       Observation{"a": ready(1), "b": ready(1)},
			policy:    Policy{MaxUnavailable: 2},
			wantSteps: []stepSummary{{"a", 3, "installer-3-a"}, {"b", 3, "installer-3-b"}},
			wantStart: "a",
		},
		{
			name:      "budget above one: healthy nodes move together behind a healthy leader",
			st:        Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2), node("b", 1, 0), node("c", 1, 0)}},
			obs:       Observation{"a": withInstaller(ready(1), InstallerRunning), "b": ready(1), "c": ready(1)},
			policy:    Policy{MaxUnavailable: 2},
			wantSteps: []stepSummary{{"b", 2, "installer-2-b"}},
			wantStart: "a",
		},
		{
			name: "backoff wait is the requeue",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now.Add(-3*time.Second), "x")}},
			obs:         Observation{"a": ready(1)},
			wantStart:   "a",
			wantRequeue: 12 * time.Second,
		},
		{
			name:      "no nodes",
			st:        Status{LatestAvailableRevision: 2},
			wantStart: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := planFor(tt.st, tt.obs, tt.policy, now)
			require.NoError(t, err)
			assert.Equal(t, tt.wantSteps, summarizeSteps(plan))
			assert.Equal(t, tt.wantStart, plan.Start)
			assert.Equal(t, tt.wantHolds, holdsOf(plan.Holds))
			assert.Equal(t, tt.wantRequeue, plan.RequeueAfter)
			assert.Len(t, plan.Status.Conditions, 3)

			again, err := planFor(tt.st, tt.obs, tt.policy, now)
			require.NoError(t, err)
			assert.Equal(t, plan, again, "deterministic")
		})
	}
}

func TestDecideSortsAndDoesNotMutate(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("c", 1, 0), node("a", 1, 0), node("b", 1, 0)}}
	orig := st.DeepCopy()
	obs := Observation{"a": ready(1), "b": ready(1), "c": ready(1)}
	plan, err := planFor(st, obs, Policy{}, t0)
	require.NoError(t, err)
	assert.Equal(t, *orig, st, "input untouched")
	var names []string
	for _, n := range plan.Status.NodeStatuses {
		names = append(names, n.NodeName)
	}
	assert.Equal(t, []string{"a", "b", "c"}, names)

	reversed := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("b", 1, 0), node("a", 1, 0), node("c", 1, 0)}}
	other, err := planFor(reversed, obs, Policy{}, t0)
	require.NoError(t, err)
	assert.Equal(t, plan, other, "input order does not matter")
}

func TestDecideInvalid(t *testing.T) {
	tests := []struct {
		name   string
		st     Status
		obs    Observation
		policy Policy
	}{
		{name: "bad policy", st: Status{LatestAvailableRevision: 1}, policy: Policy{MaxUnavailable: -1}},
		{name: "duplicate nodes", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 0, 0), node("a", 0, 0)}}},
		{name: "target below current", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 3, 2)}}},
		{name: "unknown phase", st: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 0, 0)}},
			obs: Observation{"a": {Operand: OperandState{Phase: 7}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := planFor(tt.st, tt.obs, tt.policy, t0)
			assert.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
	_, err := Decide(Input{Status: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 0, 0)}}, Observation: Observation{}, Now: t0})
	assert.ErrorIs(t, err, converge.ErrInvalid, "an empty observation would drop every node (a cache that has not synced)")
	_, err = Decide(Input{Status: Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 0, 0)}}, Observation: Observation{"a": ready(0)}})
	assert.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, "rollout: invalid input: Now is zero", "a zero Now would put every stored time in the future")
}

func TestDecideConditionsAndEvents(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2), node("b", 1, 0)}}
	obs := Observation{"a": withInstaller(ready(2), InstallerSucceeded), "b": ready(1)}
	plan, err := planFor(st, obs, Policy{}, t0)
	require.NoError(t, err)
	assert.Equal(t, []converge.Event{
		{Type: converge.EventTypeNormal, Reason: ReasonNodeCurrentRevisionChanged, Message: `Updated node "a" from revision 1 to 2 because static pod is ready`},
		{Type: converge.EventTypeNormal, Reason: ReasonNodeTargetRevisionChanged, Message: `Updating node "b" from revision 1 to 2 because starting revision 2`},
	}, plan.Events)
	p, ok := conditions.Get(plan.Status.Conditions, conditions.TypeProgressing)
	require.True(t, ok)
	assert.Equal(t, metav1.ConditionTrue, p.Status)
	assert.Equal(t, "1 node is at revision 1; 1 node is at revision 2", p.Message)
	assert.Equal(t, "a: static pod is ready", plan.Reason)
}

func TestPlanString(t *testing.T) {
	st := Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 2, 3), node("b", 2, 0), node("c", 1, 2)}}
	obs := Observation{"a": {Operand: OperandState{Phase: OperandReady, Revision: 2}, Installer: InstallerState{Phase: InstallerRunning, StartTime: t0}},
		"b": ready(2), "c": withInstaller(ready(1), InstallerPending)}
	plan, err := planFor(st, obs, Policy{MaxUnavailable: 2, InstallerPendingTimeout: dur(time.Minute)}, t0)
	require.NoError(t, err)
	assert.Equal(t, `revision 3: c: new revision pending
start a (a is moving to revision 3)
  a: installer installer-3-a is Running
  c: new revision pending; current 1, target 3; delete installer-2-c
requeue after 1s`, plan.String())

	done, err := planFor(Status{LatestAvailableRevision: 1, NodeStatuses: []NodeStatus{node("a", 1, 0)}}, Observation{"a": ready(1)}, Policy{}, t0)
	require.NoError(t, err)
	assert.Equal(t, "revision 1: 1 node is at revision 1\nstart a (a has the oldest current revision)", done.String())

	timedOut, err := planFor(Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 2)}},
		Observation{"a": {Installer: InstallerState{Phase: InstallerPending, StartTime: t0}}},
		Policy{InstallerPendingTimeout: dur(time.Minute)}, t0.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, `revision 2: a: InstallerPodFailed 1 time, retrying in 15s
start a (a is moving to revision 2)
  a: InstallerPodFailed 1 time, retrying in 15s; current 1, target 2; delete installer-2-a
requeue after 15s`, timedOut.String())
}

// TestDecideUnreachableCountsAsUnavailable: an unreachable node counts
// against MaxUnavailable as a DaemonSet counts it, including one that
// became unreachable while its installer runs; it is never started; the
// hold is explained in Progressing at once and in Degraded once it lasts,
// naming the nodes and the way out.
func TestDecideUnreachableCountsAsUnavailable(t *testing.T) {
	now := t0.Add(time.Hour)
	three := []NodeStatus{node("a", 1, 0), node("b", 1, 0), node("c", 1, 0)}
	tests := []struct {
		name         string
		st           Status
		obs          Observation
		policy       Policy
		wantSteps    []stepSummary
		wantHolds    []heldBy
		wantProgress string
		wantDegraded string
	}{
		{
			name:         "one of three unreachable, maxUnavailable 1: nothing starts (etcd keeps quorum)",
			st:           Status{LatestAvailableRevision: 2, NodeStatuses: three},
			obs:          Observation{"a": ready(1), "b": ready(1), "c": {Unreachable: true, Operand: ready(1).Operand}},
			wantHolds:    []heldBy{{HoldNodeUnavailable, "c"}},
			wantProgress: ReasonRolloutHeld,
			wantDegraded: conditions.ReasonAsExpected,
		},
		{
			name: "unreachable while its installer runs: still counted, nothing else starts",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0),
				ordered(node("c", 1, 2), now.Add(-time.Second))}},
			obs:          Observation{"a": ready(1), "b": ready(1), "c": {Unreachable: true, Operand: OperandState{Phase: OperandReady, Revision: 1}, Installer: InstallerState{Phase: InstallerRunning}}},
			policy:       Policy{MaxUnavailable: 1},
			wantHolds:    []heldBy{{HoldNodeUnreachable, "c"}},
			wantProgress: ReasonRolloutHeld,
			wantDegraded: conditions.ReasonAsExpected,
		},
		{
			name:         "maxUnavailable 2: one more node may go, the unreachable one is skipped",
			st:           Status{LatestAvailableRevision: 2, NodeStatuses: three},
			obs:          Observation{"a": ready(1), "b": ready(1), "c": {Unreachable: true, Operand: ready(1).Operand}},
			policy:       Policy{MaxUnavailable: 2},
			wantSteps:    []stepSummary{{"a", 2, "installer-2-a"}},
			wantHolds:    []heldBy{{HoldNodeUnavailable, "c"}},
			wantProgress: ReasonRolloutHeld,
			wantDegraded: conditions.ReasonAsExpected,
		},
		{
			name:         "a hold older than HoldDegradedAfter is Degraded",
			st:           Status{LatestAvailableRevision: 2, NodeStatuses: three, HeldSince: mt(now.Add(-defaultHoldDegradedAfter))},
			obs:          Observation{"a": ready(1), "b": ready(1), "c": {Unreachable: true, Operand: ready(1).Operand}},
			wantHolds:    []heldBy{{HoldNodeUnavailable, "c"}},
			wantProgress: ReasonRolloutHeld,
			wantDegraded: ReasonRolloutHeld,
		},
		{
			name:         "a custom HoldDegradedAfter",
			st:           Status{LatestAvailableRevision: 2, NodeStatuses: three, HeldSince: mt(now.Add(-time.Minute))},
			obs:          Observation{"a": ready(1), "b": ready(1), "c": {Unreachable: true, Operand: ready(1).Operand}},
			policy:       Policy{HoldDegradedAfter: dur(time.Minute)},
			wantHolds:    []heldBy{{HoldNodeUnavailable, "c"}},
			wantProgress: ReasonRolloutHeld,
			wantDegraded: ReasonRolloutHeld,
		},
		{
			name:         "the node is dropped from the observation once gone for good: the rollout goes on",
			st:           Status{LatestAvailableRevision: 2, NodeStatuses: three, HeldSince: mt(now.Add(-time.Hour))},
			obs:          Observation{"a": ready(1), "b": ready(1)},
			wantSteps:    []stepSummary{{"c", 0, ""}, {"a", 2, "installer-2-a"}},
			wantProgress: ReasonNodesProgressing,
			wantDegraded: conditions.ReasonAsExpected,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Decide(Input{Status: tt.st, Observation: tt.obs, Policy: tt.policy, Now: now})
			require.NoError(t, err)
			assert.Equal(t, tt.wantSteps, summarizeSteps(plan))
			assert.Equal(t, tt.wantHolds, holdsOf(plan.Holds))
			prog, _ := conditions.Get(plan.Status.Conditions, conditions.TypeProgressing)
			assert.Equal(t, tt.wantProgress, prog.Reason)
			deg, _ := conditions.Get(plan.Status.Conditions, conditions.TypeDegraded)
			assert.Equal(t, tt.wantDegraded, deg.Reason)
			if tt.wantDegraded == ReasonRolloutHeld {
				assert.Contains(t, deg.Message, "c is unavailable (unreachable)")
				assert.Contains(t, deg.Message, "raise maxUnavailable, or drop a node that is gone for good from the node list")
			}
			if len(tt.wantHolds) > 0 {
				assert.Contains(t, prog.Message, "starting nodes is held")
				require.NotNil(t, plan.Status.HeldSince)
			} else {
				assert.Nil(t, plan.Status.HeldSince)
			}
			for _, s := range plan.Steps {
				if s.Create != nil {
					assert.False(t, tt.obs[s.Node].Unreachable, "no installer on an unreachable node")
				}
			}
		})
	}
}

// TestCurrentRevisionNeverGoesBackSilently: an operand observed below its
// node's current revision is reported once (event and Degraded), counts as
// unavailable, never as converged, and the node installs its current
// revision again; the current revision itself never goes down.
func TestCurrentRevisionNeverGoesBackSilently(t *testing.T) {
	now := t0.Add(time.Hour)
	st := Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 3, 0), node("b", 3, 0)}}
	obs := Observation{"a": ready(2), "b": ready(3)}

	plan, err := Decide(Input{Status: st, Observation: obs, Now: now})
	require.NoError(t, err)
	a, _ := plan.Status.Node("a")
	assert.Equal(t, int32(3), a.CurrentRevision, "never lowered")
	assert.Equal(t, int32(2), a.RegressedRevision)
	assert.Equal(t, int32(3), a.TargetRevision, "installed again, in the same plan")
	assert.Equal(t, []string{ReasonNodeRevisionRegressed, ReasonNodeTargetRevisionChanged}, eventReasons(plan.Events))
	assert.False(t, plan.Status.Converged())
	deg, _ := conditions.Get(plan.Status.Conditions, conditions.TypeDegraded)
	assert.Equal(t, ReasonNodeRevisionRegressed, deg.Reason)

	again, err := Decide(Input{Status: plan.Status, Observation: Observation{"a": withInstaller(ready(2), InstallerRunning), "b": ready(3)}, Now: now})
	require.NoError(t, err)
	assert.Empty(t, again.Events, "reported once")

	done, err := Decide(Input{Status: again.Status, Observation: Observation{"a": ready(3), "b": ready(3)}, Now: now})
	require.NoError(t, err)
	a, _ = done.Status.Node("a")
	assert.Equal(t, NodeStatus{NodeName: "a", CurrentRevision: 3}, a)
	assert.True(t, done.Final.Converged())
}

// TestRegressedReinstallBacksOff: a node whose operand regressed and whose
// reinstall of its current revision failed retries it after the backoff, as
// any failed attempt (found by TestSimRollout, seed 30728: the reinstall was
// retried at once, forever).
func TestRegressedReinstallBacksOff(t *testing.T) {
	now := t0.Add(time.Hour)
	n := retryAt(failed(NodeStatus{NodeName: "a", CurrentRevision: 4, RegressedRevision: 3}, 4, 1, ReasonOperandFailed, now, "crash"), now.Add(15*time.Second))
	require.True(t, n.Failing())
	st := Status{LatestAvailableRevision: 4, NodeStatuses: []NodeStatus{n, node("b", 4, 0)}}
	obs := Observation{"a": {Operand: OperandState{Phase: OperandFailed, Revision: 4}}, "b": ready(4)}

	waiting, err := Decide(Input{Status: st, Observation: obs, Now: now})
	require.NoError(t, err)
	assert.Empty(t, summarizeSteps(waiting), "no reinstall before the backoff")
	assert.Equal(t, 15*time.Second, waiting.RequeueAfter)

	retry, err := Decide(Input{Status: st, Observation: obs, Now: now.Add(15 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, []stepSummary{{"a", 4, "installer-4-retry-1-a"}}, summarizeSteps(retry))
	deg, _ := conditions.Get(retry.Status.Conditions, conditions.TypeDegraded)
	assert.Equal(t, ReasonOperandFailed, deg.Reason)
}

// TestLatestBelowWhatNodesRun: a latest revision lower than what nodes run
// is a stated rule, not Progressing forever: the engine never moves a node
// down, and such a node counts as at the latest revision.
func TestLatestBelowWhatNodesRun(t *testing.T) {
	st := Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 3, 0), node("b", 2, 0), node("c", 1, 4)}}
	plan, err := Decide(Input{Status: st, Observation: Observation{"a": ready(3), "b": ready(2), "c": withInstaller(ready(4), InstallerSucceeded)}, Now: t0})
	require.NoError(t, err)
	assert.True(t, plan.Final.Converged(), "c finished its install of 4; nobody is moved down to 2")
	assert.Equal(t, []Installer{{Name: "installer-4-c", Node: "c", Revision: 4}}, plan.Status.InstallersToDelete, "its finished installer goes")
	prog, _ := conditions.Get(plan.Status.Conditions, conditions.TypeProgressing)
	assert.Equal(t, metav1.ConditionFalse, prog.Status)
}

// TestDecideStatusCanAlwaysBeWritten: however many nodes and however
// long their errors (new ones or already persisted), the plan's status is
// one the API accepts and the engine trims what it persists.
func TestDecideStatusCanAlwaysBeWritten(t *testing.T) {
	long := strings.Repeat("e", 40000)
	st := Status{LatestAvailableRevision: 2}
	obs := Observation{}
	for i := range 1500 {
		name := fmt.Sprintf("unreachable-node-%04d", i)
		st.NodeStatuses = append(st.NodeStatuses, node(name, 1, 0))
		obs[name] = NodeObservation{Unreachable: true}
	}
	for i := range 50 {
		name := fmt.Sprintf("failing-node-%02d", i)
		st.NodeStatuses = append(st.NodeStatuses, ordered(node(name, 1, 2), t0))
		obs[name] = NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{{Name: "installer", Message: long}}}}
	}
	persisted := failed(node("persisted", 1, 0), 2, 1, ReasonOperandFailed, t0, long, long, long, long, long, long, long, long, long, long)
	st.NodeStatuses = append(st.NodeStatuses, persisted)
	obs["persisted"] = ready(1)

	plan, err := Decide(Input{Status: st, Observation: obs, Policy: Policy{MaxUnavailable: 2000}, Now: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.NoError(t, plan.Status.Validate())
	for _, c := range plan.Status.Conditions {
		assert.NoError(t, conditions.Validate(c), c.Type)
	}
	for _, n := range plan.Status.NodeStatuses {
		assert.LessOrEqual(t, len(n.LastFailedErrors), MaxFailedErrors, n.NodeName)
		for _, e := range n.LastFailedErrors {
			assert.LessOrEqual(t, len(e), MaxErrorLength, n.NodeName)
		}
	}
	for _, e := range plan.Events {
		assert.LessOrEqual(t, len(e.Message), MaxEventMessageLength)
	}
}

func eventReasons(events []converge.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Reason)
	}
	return out
}

// TestPlanClockSteppingBack: a hold or a soak whose start lies in the future
// (the clock stepped back) never waits longer than its own length.
func TestPlanClockSteppingBack(t *testing.T) {
	now := t0
	held, err := Decide(Input{Now: now,
		Status:      Status{LatestAvailableRevision: 2, HeldSince: mt(now.Add(time.Hour)), NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0)}},
		Observation: Observation{"a": ready(1), "b": {Unreachable: true}}})
	require.NoError(t, err)
	assert.Equal(t, now, held.Status.HeldSince.Time, "the hold counts from now")
	assert.Equal(t, defaultHoldDegradedAfter, held.RequeueAfter)

	soaked, err := Decide(Input{Now: now, Policy: Policy{MinReadyDuration: dur(30 * time.Second)},
		Status:      Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 1, 0)}},
		Observation: Observation{"a": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(time.Hour)}}, "b": ready(1)}})
	require.NoError(t, err)
	assert.Equal(t, []stepSummary{{"b", 2, "installer-2-b"}}, summarizeSteps(soaked), "a ready time in the future counts as soaked")
}
