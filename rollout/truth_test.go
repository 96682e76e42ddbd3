package rollout

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

// The rules of what runs on a node being the truth, each pinned by a named
// table; rows marked "found by TestSimRollout" pin a bug its world found.

// decideCase is one row: a status, what the host observed, and what the
// decision must say.
type decideCase struct {
	name       string
	st         Status
	obs        Observation
	policy     Policy
	now        time.Time // zero: t0 + 1h
	admissions map[string]string
	gated      bool
	check      func(t *testing.T, d Decision)
}

func runDecideCases(t *testing.T, tests []decideCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.now
			if now.IsZero() {
				now = t0.Add(time.Hour)
			}
			d, err := Decide(Input{Status: tt.st, Observation: tt.obs, Policy: tt.policy, Now: now, Gated: tt.gated, Admissions: tt.admissions})
			require.NoError(t, err)
			require.NoError(t, d.Status.Validate())
			tt.check(t, d)
		})
	}
}

// started lists the installers a decision creates.
func started(d Decision) []string {
	var out []string
	for _, s := range d.Steps {
		if s.Create != nil {
			out = append(out, s.Create.Name)
		}
	}
	return out
}

func deleting(d Decision) []string {
	var out []string
	for _, i := range d.Status.InstallersToDelete {
		out = append(out, i.Name)
	}
	return out
}

func nodeOf(t *testing.T, d Decision, name string) NodeStatus {
	t.Helper()
	n, ok := d.Status.Node(name)
	require.True(t, ok, "node %s", name)
	return n
}

func condition(d Decision, typ string) metav1.Condition {
	c, _ := conditions.Get(d.Status.Conditions, typ)
	return c
}

func withUID(n NodeStatus, uid string) NodeStatus { n.NodeUID = uid; return n }

func observed(uid string, o NodeObservation) NodeObservation { o.UID = uid; return o }

func operand(phase OperandPhase, rev int32) NodeObservation {
	return NodeObservation{Operand: OperandState{Phase: phase, Revision: rev}}
}

// TestNoInstallerOutlivesItsDecisionInAnyPhase: every installer of a node
// is the one its decision wants or is recorded for deletion, whatever its
// phase, and one that may still run keeps its node unavailable; a node never
// runs a revision below one it reached.
func TestNoInstallerOutlivesItsDecisionInAnyPhase(t *testing.T) {
	now := t0.Add(time.Hour)
	retrying := ordered(failed(node("a", 1, 2), 2, 1, ReasonOperandNotReady, t0, "x"), now.Add(-time.Minute))
	runDecideCases(t, []decideCase{
		{
			name: "a retry installer still pending when the operand becomes ready on its own is deleted, and may still run",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{retrying, node("b", 1, 0)}},
			obs:  Observation{"a": withInstaller(ready(2), InstallerPending), "b": ready(1)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, NodeStatus{NodeName: "a", CurrentRevision: 2, LastFailedRevision: 2, LastFailedCount: 1,
					LastFailedReason: ReasonOperandNotReady, LastFailedTime: mt(t0), LastFailedErrors: []string{"x"}}, nodeOf(t, d, "a"))
				assert.Equal(t, []string{"installer-2-retry-1-a"}, deleting(d))
				assert.Empty(t, started(d), "b waits: a's installer may still run and take a down")
				assert.Equal(t, []heldBy{{HoldNodeUnavailable, "a"}}, holdsOf(d.Holds))
				assert.Contains(t, d.Holds[0].Message, "a is unavailable (an old installer may still run)")
			},
		},
		{
			name: "an installer that succeeded is deleted once its node is done, and the next node starts at once",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{ordered(installed(node("a", 1, 2), t0), t0), node("b", 1, 0)}},
			obs:  Observation{"a": withInstaller(ready(2), InstallerSucceeded), "b": ready(1)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-2-a"}, deleting(d))
				assert.Equal(t, []string{"installer-2-b"}, started(d), "a finished installer can no longer run")
			},
		},
		{
			name: "a failed installer is deleted when the failure is recorded",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{ordered(node("a", 1, 2), t0)}},
			obs:  Observation{"a": withInstaller(ready(1), InstallerFailed)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-2-a"}, deleting(d))
				assert.Equal(t, "installer-2-retry-1-a", InstallerName(nodeOf(t, d, "a")), "the retry has a name of its own")
			},
		},
		{
			name:   "a timed-out installer is deleted",
			st:     Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{ordered(node("a", 1, 2), now.Add(-time.Hour))}},
			obs:    Observation{"a": withInstaller(ready(1), InstallerPending)},
			policy: Policy{InstallerPendingTimeout: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-2-a"}, deleting(d))
				assert.Equal(t, ReasonInstallerPodFailed, nodeOf(t, d, "a").LastFailedReason)
			},
		},
		{
			name: "an installer seen missing is deleted too: a cache may not show it yet",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{ordered(node("a", 1, 2), t0)}},
			obs:  Observation{"a": ready(1)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-2-a"}, deleting(d))
				assert.Equal(t, ReasonInstallerPodDisappeared, nodeOf(t, d, "a").LastFailedReason)
			},
		},
		{
			// Found by TestSimRollout (seed 485): a node installing an older
			// revision its leader ran, while its operand ran a newer one
			// ready, installed the older one over it.
			name: "a node whose operand runs a revision above its target ready is done, its installer deleted",
			st:   Status{LatestAvailableRevision: 4, NodeStatuses: []NodeStatus{ordered(node("a", 0, 3), t0), node("b", 3, 0)}},
			obs:  Observation{"a": withInstaller(ready(4), InstallerPending), "b": ready(3)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, NodeStatus{NodeName: "a", CurrentRevision: 4}, nodeOf(t, d, "a"))
				assert.Equal(t, []string{"installer-3-a"}, deleting(d))
			},
		},
		{
			// Found by TestSimRollout (seed 2909): a node whose operand ran
			// a revision, failing, was started at its leader's older one.
			name: "a node is never started below the revision its operand runs, even failing",
			st: Status{LatestAvailableRevision: 4, NodeStatuses: []NodeStatus{
				retryAt(failed(node("a", 0, 0), 4, 1, ReasonOperandFailed, t0, "crashed"), t0), node("b", 3, 0)}},
			obs: Observation{"a": operand(OperandFailed, 4), "b": ready(3)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-4-retry-1-a"}, started(d), "a retries revision 4, never 3")
			},
		},
	})
}

// TestANodeIsWhoItIs: a node is its UID; a new machine under the same name
// starts afresh at the revision its own operand runs, and nothing of its
// predecessor counts as its history.
func TestANodeIsWhoItIs(t *testing.T) {
	now := t0.Add(time.Hour)
	predecessor := withUID(retryAt(failed(ordered(installed(node("a", 2, 3), t0), t0), 3, 2, ReasonInstallerPodFailed, t0, "x"), t0), "u1")
	runDecideCases(t, []decideCase{
		{
			name: "a machine replaced under the same name starts afresh, its predecessor's installer deleted",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{predecessor, withUID(node("b", 3, 0), "ub")}},
			obs:  Observation{"a": observed("u2", withInstaller(NodeObservation{}, InstallerSucceeded)), "b": observed("ub", ready(3))},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, NodeStatus{NodeName: "a", NodeUID: "u2"}, nodeOf(t, d, "a"), "no revision, no failure: a new machine")
				assert.Equal(t, []string{"installer-3-retry-2-a"}, deleting(d))
			},
		},
		{
			name: "a new machine with an operand of its own starts at the revision it runs",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{withUID(node("a", 3, 0), "u1")}},
			obs:  Observation{"a": observed("u2", ready(2))},
			check: func(t *testing.T, d Decision) {
				require.NotEmpty(t, d.Steps)
				assert.Equal(t, int32(2), d.Steps[0].To.CurrentRevision)
				assert.Equal(t, []string{"installer-3-a"}, started(d))
				assert.Contains(t, d.Events[0].Message, "from revision 2 to 3", "the event names the revision it ran")
			},
		},
		{
			// Found by TestSimRollout (seed 13): the new machine's first
			// installer has its predecessor's name; created while the
			// predecessor's was still there, it found it finished.
			name: "the new machine's installer waits until its predecessor's, of the same name, is deleted",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{withUID(ordered(node("a", 2, 3), t0), "u1")}},
			obs:  Observation{"a": observed("u2", withInstaller(NodeObservation{}, InstallerSucceeded))},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-a"}, deleting(d))
				assert.Empty(t, started(d))
				again, err := Decide(Input{Status: d.Final, Observation: Observation{"a": observed("u2", NodeObservation{})}, Now: now})
				require.NoError(t, err)
				assert.Equal(t, []string{"installer-3-a"}, started(again), "once it is gone")
			},
		},
		{
			name: "a status without a UID takes the one observed and keeps its history",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{failed(node("a", 3, 0), 3, 1, ReasonOperandFailed, t0, "x")}},
			obs:  Observation{"a": observed("u1", ready(3))},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, "u1", a.NodeUID)
				assert.Equal(t, int32(1), a.LastFailedCount)
				assert.True(t, d.StatusChanged)
			},
		},
		{
			name: "a node that joins starts at the revision its operand runs, not 0",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0)}},
			obs:  Observation{"a": ready(2), "b": observed("ub", ready(1))},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-2-b"}, started(d))
				b := nodeOf(t, d, "b")
				assert.Equal(t, int32(1), b.CurrentRevision)
				assert.Equal(t, "ub", b.NodeUID)
				assert.Equal(t, `Updating node "b" from revision 1 to 2 because starting revision 2`, d.Events[0].Message)
			},
		},
	})
}

// TestObservedTruthOverRecordedStatus: a node whose operand is missing, or
// not at its current revision, is not converged: the status records it,
// the node is installed again within the budget, and the conditions say why.
func TestObservedTruthOverRecordedStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	runDecideCases(t, []decideCase{
		{
			name: "an operand at or above the current revision is not missing, whatever the target",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				{NodeName: "a", CurrentRevision: 1, TargetRevision: 2, OperandMissing: true, InstallerOrderedTime: mt(now.Add(-time.Minute))}}},
			obs: Observation{"a": {Operand: OperandState{Phase: OperandPending, Revision: 2}}},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(3), a.TargetRevision, "revision 3 supersedes 2")
				assert.False(t, a.OperandMissing, "the operand runs revision 2")
				again, err := Decide(Input{Status: d.Final, Now: now.Add(time.Second), Observation: Observation{"a": {
					Operand: OperandState{Phase: OperandPending, Revision: 2}, Installer: InstallerState{Phase: InstallerPending}}}})
				require.NoError(t, err)
				assert.False(t, again.StatusChanged, "a second look at the same world writes nothing")
			},
		},
		{
			name: "a vanished operand is recorded, installed again and explained",
			st:   Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 2, 0), node("b", 2, 0)}},
			obs:  Observation{"a": {}, "b": ready(2)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.True(t, a.OperandMissing)
				assert.Equal(t, []string{"installer-2-a"}, started(d))
				assert.Equal(t, []string{ReasonNodeOperandMissing, ReasonNodeTargetRevisionChanged}, eventReasons(d.Events))
				assert.False(t, d.Final.Converged())
				deg := condition(d, conditions.TypeDegraded)
				assert.Equal(t, ReasonNodeOperandMissing, deg.Reason)
				assert.Contains(t, deg.Message, "a runs no operand at its current revision 2")
				assert.Equal(t, metav1.ConditionTrue, condition(d, conditions.TypeProgressing).Status)
			},
		},
		{
			name: "an operand ready above the current revision is adopted",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{node("a", 2, 0)}},
			obs:  Observation{"a": ready(3)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, NodeStatus{NodeName: "a", CurrentRevision: 3}, nodeOf(t, d, "a"))
				assert.Empty(t, started(d), "nothing to install")
				assert.Equal(t, []string{ReasonNodeCurrentRevisionChanged}, eventReasons(d.Events))
			},
		},
		{
			// Found by TestSimRollout (seed 15): a node in transition kept
			// an OperandMissing its operand had left behind, counted as
			// down, and got its next installer past the budget.
			name: "a node in transition whose operand came back is up again, and taken down only within the budget",
			st: Status{LatestAvailableRevision: 6, NodeStatuses: []NodeStatus{
				{NodeName: "a", CurrentRevision: 1, TargetRevision: 6, OperandMissing: true}, node("b", 6, 0)}},
			obs: Observation{"a": ready(4), "b": {}},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(4), a.CurrentRevision)
				assert.False(t, a.OperandMissing)
				assert.Equal(t, []string{"installer-6-b"}, started(d), "b is down and installed again; a, which is up, waits")
			},
		},
		{
			// Found by TestSimRollout (seed 15): a regressed node counted as
			// down and was installed again with another node down.
			name: "a regressed operand that runs ready is up: installing it again takes the budget",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{{NodeName: "a", CurrentRevision: 3, RegressedRevision: 2}, node("b", 3, 0)}},
			obs:  Observation{"a": ready(2), "b": operand(OperandFailed, 3)},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d), "b is down: a, up, waits for the budget")
			},
		},
		{
			// Found by TestSimRollout (seed 60): a node's reinstall waited
			// for the node before it in the walk, which waited for the
			// budget the missing operand took.
			name: "a reinstall does not wait for the node before it in transition",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				{NodeName: "a", CurrentRevision: 2, OperandMissing: true},
				retryAt(failed(node("c", 1, 2), 2, 1, ReasonInstallerPodDisappeared, t0, "x"), t0)}},
			obs: Observation{"a": {}, "c": ready(1)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-2-a"}, started(d))
			},
		},
	})
	_ = now
}

// TestEveryHoldIsExplained: whatever holds back the start of a node is
// explained in Progressing at once and in Degraded after HoldDegradedAfter,
// with no duration in either.
func TestEveryHoldIsExplained(t *testing.T) {
	now := t0.Add(time.Hour)
	long := mt(now.Add(-time.Hour))
	unreachable := NodeObservation{Unreachable: true, Operand: OperandState{Phase: OperandReady, Revision: 1}}
	runDecideCases(t, []decideCase{
		{
			name: "every node unreachable",
			st:   Status{LatestAvailableRevision: 2, HeldSince: long, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0)}},
			obs:  Observation{"a": unreachable, "b": unreachable},
			check: func(t *testing.T, d Decision) {
				prog, deg := condition(d, conditions.TypeProgressing), condition(d, conditions.TypeDegraded)
				assert.Equal(t, ReasonRolloutHeld, prog.Reason)
				assert.Equal(t, []heldBy{{HoldNodeUnreachable, "a"}, {HoldNodeUnreachable, "b"}}, holdsOf(d.Holds))
				assert.Contains(t, prog.Message, "starting nodes is held: a is unreachable and cannot move")
				assert.Equal(t, ReasonRolloutHeld, deg.Reason)
				assert.Equal(t, metav1.ConditionTrue, deg.Status)
			},
		},
		{
			name:   "an unreachable node that needs a revision, the others done",
			st:     Status{LatestAvailableRevision: 2, HeldSince: long, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 2, 0)}},
			obs:    Observation{"a": unreachable, "b": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []heldBy{{HoldNodeUnreachable, "a"}}, holdsOf(d.Holds))
				assert.Equal(t, "a is unreachable and cannot move: drop a node that is gone for good from the node list", d.Holds[0].Message, "the way out")
				assert.Equal(t, ReasonRolloutHeld, condition(d, conditions.TypeDegraded).Reason)
			},
		},
		{
			name:  "the gate",
			st:    Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0)}},
			obs:   Observation{"a": ready(1)},
			gated: true, admissions: map[string]string{"installer-2-a": "quorum would be lost"},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d))
				assert.Equal(t, []heldBy{{HoldGateDenied, "a"}}, holdsOf(d.Holds))
				assert.Equal(t, "the gate holds a: quorum would be lost", d.Holds[0].Message, "the gate's answer")
				assert.Equal(t, now, d.Status.HeldSince.Time)
				assert.Equal(t, defaultHoldDegradedAfter, d.RequeueAfter, "when the hold turns Degraded")
			},
		},
		{
			name: "a failure on another node",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				node("a", 1, 0), retryAt(failed(node("b", 1, 0), 2, 1, ReasonOperandFailed, now, "x"), now.Add(time.Minute)), node("c", 2, 0)}},
			obs:    Observation{"a": ready(1), "b": ready(1), "c": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []heldBy{{HoldBackoff, "b"}, {HoldRevisionFailing, "a"}}, holdsOf(d.Holds))
			},
		},
		{
			name: "an installer not yet deleted",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0)},
				InstallersToDelete: []Installer{{Name: "installer-1-a", Node: "a", Revision: 1}}},
			obs: Observation{"a": ready(1)},
			check: func(t *testing.T, d Decision) {
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldOldInstaller, "a"})
			},
		},
		{
			// Found by TestSimRollout (seed 4334): a soak stopped the walk
			// before the gate's denial, which the hold lost until the next
			// sync, and Degraded counted the hold from there again.
			name: "a soak does not hide a hold",
			st: Status{LatestAvailableRevision: 2, HeldSince: long, NodeStatuses: []NodeStatus{
				node("a", 1, 0), node("b", 2, 0)}},
			obs:    Observation{"a": ready(1), "b": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(-time.Second)}}},
			policy: Policy{MinReadyDuration: dur(time.Minute)},
			gated:  true, admissions: map[string]string{"installer-2-a": "quorum would be lost"},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []heldBy{{HoldGateDenied, "a"}}, holdsOf(d.Holds))
				assert.Equal(t, long, d.Status.HeldSince)
			},
		},
		{
			name: "a soak after a hold holds until a node moves",
			st: Status{LatestAvailableRevision: 2, HeldSince: long, NodeStatuses: []NodeStatus{
				node("a", 1, 0), node("b", 2, 0)}},
			obs:    Observation{"a": ready(1), "b": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(-time.Second)}}},
			policy: Policy{MinReadyDuration: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d))
				assert.Equal(t, []heldBy{{HoldSoaking, "a"}}, holdsOf(d.Holds))
				assert.Equal(t, long, d.Status.HeldSince)
				assert.Equal(t, metav1.ConditionTrue, condition(d, conditions.TypeDegraded).Status)
			},
		},
		{
			name: "a soak beside another hold holds too, in the sync the hold starts",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				node("a", 1, 0), node("b", 2, 0), node("c", 1, 0)}},
			obs: Observation{"a": ready(1), "b": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(-time.Second)}},
				"c": unreachable},
			policy: Policy{MinReadyDuration: dur(time.Minute), MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldSoaking, "a"})
				assert.Equal(t, now, d.Status.HeldSince.Time)
			},
		},
		{
			name: "a soak alone is a wait: a hold that neither sets HeldSince nor turns Degraded",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				node("a", 1, 0), node("b", 2, 0)}},
			obs:    Observation{"a": ready(1), "b": {Operand: OperandState{Phase: OperandReady, Revision: 2, ReadySince: now.Add(-time.Second)}}},
			policy: Policy{MinReadyDuration: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d))
				assert.Equal(t, []heldBy{{HoldSoaking, "a"}}, holdsOf(d.Holds), "the soak is said")
				assert.Equal(t, ReasonNodesProgressing, condition(d, conditions.TypeProgressing).Reason)
				assert.Equal(t, metav1.ConditionFalse, condition(d, conditions.TypeDegraded).Status)
				assert.Nil(t, d.Status.HeldSince)
				assert.Equal(t, 59*time.Second, d.RequeueAfter)
			},
		},
	})
}

// TestStatusChangesOnlyWhenTheWorldChanges: a decision in which only the
// clock moved, and no deadline, timeout or backoff passed, writes nothing.
func TestStatusChangesOnlyWhenTheWorldChanges(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name       string
		st         Status
		obs        Observation
		admissions map[string]string
		laters     []time.Duration // before the next deadline
	}{
		{
			name:   "a hold older than HoldDegradedAfter",
			st:     Status{LatestAvailableRevision: 2, HeldSince: mt(now.Add(-time.Hour)), NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0)}},
			obs:    Observation{"a": {Unreachable: true, Operand: ready(1).Operand}, "b": ready(1)},
			laters: []time.Duration{0, time.Second, time.Minute, time.Hour},
		},
		{
			name:   "a failure waiting for its backoff",
			st:     Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{retryAt(failed(node("a", 1, 0), 2, 3, ReasonOperandFailed, now, "x"), now.Add(30*time.Second))}},
			obs:    Observation{"a": ready(1)},
			laters: []time.Duration{0, time.Second, 29 * time.Second},
		},
		{
			// Found by TestSimRollout (seed 907): a hold named a node's
			// state before the node was decided, and the next sync wrote it
			// again with the state decided.
			name: "a retry held by the budget, explained once every node is decided",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				failed(node("a", 1, 2), 2, 1, ReasonInstallerPodDisappeared, t0, "x"), node("b", 1, 0)}},
			obs:        Observation{"a": ready(1), "b": {}},
			admissions: map[string]string{"installer-2-b": "quorum would be lost"},
			laters:     []time.Duration{0, time.Second, time.Minute},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gated := tt.admissions != nil
			first, err := Decide(Input{Status: tt.st, Observation: tt.obs, Now: now, Gated: gated, Admissions: tt.admissions})
			require.NoError(t, err)
			require.Empty(t, started(first), "the world changes only with the clock")
			for _, later := range tt.laters {
				again, err := Decide(Input{Status: first.Final, Observation: tt.obs, Now: now.Add(later), Gated: gated, Admissions: tt.admissions})
				require.NoError(t, err)
				assert.False(t, again.StatusChanged, "%v later: %s", later, again)
			}
			for _, c := range first.Status.Conditions {
				assert.NotRegexp(t, `\d+(m|h)\d*s|\d+s\b`, c.Message, "no duration in %s", c.Type)
			}
		})
	}
}

// TestGate: before a start, the gate is asked about it, one start at a
// time and with what the rollout counts down; a denial holds the node.
func TestGate(t *testing.T) {
	three := func() Status {
		return Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{node("a", 1, 0), node("b", 1, 0), node("c", 1, 0)}}
	}
	allReady := Observation{"a": ready(1), "b": ready(1), "c": ready(1)}
	runDecideCases(t, []decideCase{
		{
			name: "an unanswered start is asked about, not made", st: three(), obs: allReady, gated: true,
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				require.NotNil(t, d.Unadmitted)
				assert.Equal(t, Disruption{Installer: Installer{Name: "installer-2-a", Node: "a", Revision: 2}}, *d.Unadmitted)
				assert.Empty(t, started(d))
			},
		},
		{
			name: "the next start is asked about with the one admitted before it down", st: three(), obs: allReady, gated: true,
			policy: Policy{MaxUnavailable: 2}, admissions: map[string]string{"installer-2-a": ""},
			check: func(t *testing.T, d Decision) {
				require.NotNil(t, d.Unadmitted)
				assert.Equal(t, Disruption{Installer: Installer{Name: "installer-2-b", Node: "b", Revision: 2}, Down: []string{"a"}}, *d.Unadmitted)
			},
		},
		{
			name: "admitted starts are made, a denied one holds its node", st: three(), obs: allReady, gated: true,
			policy: Policy{MaxUnavailable: 2}, admissions: map[string]string{"installer-2-a": "", "installer-2-b": "no quorum"},
			check: func(t *testing.T, d Decision) {
				assert.Nil(t, d.Unadmitted, "c waits: the budget holds two")
				assert.Equal(t, []string{"installer-2-a"}, started(d))
				assert.Equal(t, []heldBy{{HoldGateDenied, "b"}}, holdsOf(d.Holds))
			},
		},
		{
			name: "a node in transition that is up is asked about before its next installer takes it down",
			st: Status{LatestAvailableRevision: 2, NodeStatuses: []NodeStatus{
				retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0, "x"), t0)}},
			obs: Observation{"a": ready(1)}, gated: true,
			check: func(t *testing.T, d Decision) {
				require.NotNil(t, d.Unadmitted)
				assert.Equal(t, "installer-2-retry-1-a", d.Unadmitted.Installer.Name)
				assert.Empty(t, started(d))
			},
		},
		{
			name: "without a gate nothing is asked", st: three(), obs: allReady,
			check: func(t *testing.T, d Decision) {
				assert.Nil(t, d.Unadmitted)
				assert.Equal(t, []string{"installer-2-a"}, started(d))
			},
		},
	})
}

// TestBudgetCountsWhatMayRun: a node is unavailable while an installer of
// it may run; one in transition between attempts that is up is taken down
// only within the budget, and a node already down repairs itself.
func TestBudgetCountsWhatMayRun(t *testing.T) {
	runDecideCases(t, []decideCase{
		{
			// Found by TestSimRollout (seed 14): the retry of a node whose
			// failed installer left its operand ready took it down while
			// two other nodes were.
			name: "the retry of a node that is up waits for the budget",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				retryAt(failed(node("a", 2, 3), 3, 1, ReasonInstallerPodDisappeared, t0, "x"), t0), node("b", 2, 0), node("c", 2, 0)}},
			obs:    Observation{"a": ready(2), "b": {Unreachable: true, Operand: ready(2).Operand}, "c": operand(OperandFailed, 2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-c"}, started(d), "c, already down, goes; a, up, waits")
				assert.NotEmpty(t, d.Holds)
			},
		},
		{
			name: "the retry of a node already down is no new disruption",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				retryAt(failed(node("a", 2, 3), 3, 1, ReasonInstallerPodDisappeared, t0, "x"), t0), node("b", 2, 0)}},
			obs: Observation{"a": operand(OperandFailed, 2), "b": {Unreachable: true, Operand: ready(2).Operand}},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-retry-1-a"}, started(d))
			},
		},
		{
			// Found by TestSimRollout (seed 2245): a node already down could
			// retry only as the start of a pass, which a node in transition
			// held by the budget the down node took.
			name: "a node already down retries a revision it failed without being the start of the pass",
			st: Status{LatestAvailableRevision: 4, NodeStatuses: []NodeStatus{
				retryAt(failed(node("a", 2, 4), 4, 1, ReasonInstallerPodFailed, t0, "x"), t0),
				retryAt(failed(node("b", 4, 0), 4, 1, ReasonInstallerPodDisappeared, t0, "x"), t0)}},
			obs: Observation{"a": ready(2), "b": {}},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-4-retry-1-b"}, started(d), "b installs its revision again; a waits for the budget")
			},
		},
	})
}

// TestFallback: a fallback from a revision, made by the startup monitor on
// the node or decided with Policy.FallbackTimeout, is recorded once with
// library-go's names, spaced by the fallback backoff, keeps other healthy
// nodes off the revision, and a newer revision supersedes it.
func TestFallback(t *testing.T) {
	now := t0.Add(time.Hour)
	monitor := func(rev, forRev int32, at time.Time) NodeObservation {
		return NodeObservation{Operand: OperandState{Phase: OperandReady, Revision: rev,
			Fallback: &OperandFallback{ForRevision: forRev, Reason: "NeverStartedUp", Message: "did not start", Time: at}}}
	}
	fellBack := func(n NodeStatus, rev, count int32, at time.Time) NodeStatus {
		n.LastFailedRevision, n.LastFallbackCount, n.LastFailedReason, n.LastFailedTime = rev, count, ReasonOperandFailedFallback, mt(at)
		n.RetryTime = mt(at.Add(min(20*time.Minute*time.Duration(1<<(count-1)), 2*time.Hour)))
		n.LastFailedErrors = []string{"fell back"}
		return n
	}
	counts := func(n NodeStatus, failures, fallbacks int32) NodeStatus {
		n.LastFailedCount, n.LastFallbackCount = failures, fallbacks
		return n
	}
	retryAt := func(n NodeStatus, at time.Time) NodeStatus { n.RetryTime = mt(at); return n }
	refused := func(n NodeStatus, rev int32, at time.Time) NodeStatus {
		n.LastFailedRevision, n.LastFailedReason, n.LastFailedTime = rev, ReasonInstallerCreateFailed, mt(at)
		return n
	}
	runDecideCases(t, []decideCase{
		{
			name: "the startup monitor's fallback is recorded, with library-go's names, and spaced by the fallback backoff",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(installed(node("a", 2, 3), now.Add(-time.Minute)), now.Add(-2*time.Minute))}},
			obs:  Observation{"a": withInstaller(monitor(2, 3, now.Add(-time.Second)), InstallerSucceeded)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(3), a.LastFailedRevision)
				assert.Equal(t, ReasonOperandFailedFallback, a.LastFailedReason)
				assert.Equal(t, int32(1), a.LastFallbackCount)
				assert.Equal(t, int32(0), a.LastFailedCount, "fallbacks are not failed installs")
				assert.Equal(t, now.Add(20*time.Minute), a.RetryTime.Time, "library-go's fallback backoff, not the installer's")
				assert.False(t, a.InTransition())
				assert.Equal(t, []string{"fell back to revision 2: NeverStartedUp: did not start"}, a.LastFailedErrors)
				assert.Equal(t, []string{ReasonOperandFailedFallback}, eventReasons(d.Events))
				deg := condition(d, conditions.TypeDegraded)
				assert.Equal(t, ReasonOperandFailedFallback, deg.Reason)
				assert.Contains(t, deg.Message, "failing on revision 3:\na: fell back to revision 2")
			},
		},
		{
			name: "a fallback seen again is the one recorded",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{fellBack(node("a", 2, 0), 3, 1, now.Add(-time.Minute))}},
			obs:  Observation{"a": monitor(2, 3, now.Add(-2*time.Minute))},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, fellBack(node("a", 2, 0), 3, 1, now.Add(-time.Minute)), nodeOf(t, d, "a"))
				assert.Empty(t, d.Events)
			},
		},
		{
			name: "the fallback of an earlier attempt, before the retry's installer ran, is not a new one",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(fellBack(node("a", 2, 3), 3, 1, now.Add(-time.Hour)), now.Add(-time.Minute))}},
			obs:  Observation{"a": withInstaller(monitor(2, 3, now.Add(-time.Hour)), InstallerPending)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, int32(1), nodeOf(t, d, "a").LastFallbackCount)
				assert.Empty(t, d.Events)
			},
		},
		{
			// Found by TestSimRollout (seed 641): the monitor fell back from
			// the previous attempt after the node's retry was ordered, and
			// the retry, whose installer vanished, ignored it.
			name: "a fallback made since the attempt was ordered counts, whatever its installer did",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(node("a", 2, 3), now.Add(-time.Minute))}},
			obs:  Observation{"a": monitor(2, 3, now.Add(-time.Second))},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, ReasonOperandFailedFallback, nodeOf(t, d, "a").LastFailedReason)
			},
		},
		{
			// Found by TestSimRollout (seed 11111): after a refused create,
			// the retry installed the revision and the monitor fell back
			// from it, but a clock stepped back dated the fallback before
			// the retry's order, and the engine waited for the operand.
			name: "once its installer succeeded, a fallback the status has no record of is new, whatever its time",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				counts(ordered(installed(refused(node("a", 2, 3), 3, now.Add(-20*time.Minute)), now.Add(-time.Minute)), now.Add(-time.Minute)), 1, 0)}},
			obs: Observation{"a": withInstaller(monitor(2, 3, now.Add(-2*time.Minute)), InstallerSucceeded)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, ReasonOperandFailedFallback, a.LastFailedReason)
				assert.Equal(t, int32(1), a.LastFallbackCount)
				assert.False(t, a.InTransition(), "the node runs its last good revision")
				assert.Equal(t, []string{ReasonOperandFailedFallback}, eventReasons(d.Events))
			},
		},
		{
			name:   "the engine falls back when the operand is not ready within FallbackTimeout: it installs the last good revision",
			st:     Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(installed(node("a", 2, 3), now.Add(-2*time.Minute)), now.Add(-3*time.Minute))}},
			obs:    Observation{"a": withInstaller(pending(3), InstallerSucceeded)},
			policy: Policy{FallbackTimeout: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(2), a.TargetRevision, "the last good revision, again")
				assert.Equal(t, int32(2), a.CurrentRevision, "the current revision never goes down")
				assert.Equal(t, ReasonOperandFailedFallback, a.LastFailedReason)
				assert.Equal(t, []string{"installer-3-a"}, deleting(d))
				again, err := Decide(Input{Status: d.Final, Observation: Observation{"a": pending(3)}, Now: now, Policy: Policy{FallbackTimeout: dur(time.Minute)}})
				require.NoError(t, err)
				assert.Equal(t, []string{"installer-2-a"}, started(again), "at once: no backoff for a fallback's install")
			},
		},
		{
			name:   "with OperandReadyTimeout as long as FallbackTimeout the fallback wins",
			st:     Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(installed(node("a", 2, 3), now.Add(-2*time.Minute)), now.Add(-3*time.Minute))}},
			obs:    Observation{"a": withInstaller(pending(3), InstallerSucceeded)},
			policy: Policy{FallbackTimeout: dur(2 * time.Minute), OperandReadyTimeout: dur(2 * time.Minute)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, ReasonOperandFailedFallback, a.LastFailedReason)
				assert.Equal(t, int32(2), a.TargetRevision)
			},
		},
		{
			name:   "with OperandReadyTimeout shorter than FallbackTimeout the wait is a failed attempt, not a fallback",
			st:     Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(installed(node("a", 2, 3), now.Add(-time.Minute)), now.Add(-2*time.Minute))}},
			obs:    Observation{"a": withInstaller(pending(3), InstallerSucceeded)},
			policy: Policy{FallbackTimeout: dur(2 * time.Minute), OperandReadyTimeout: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, ReasonOperandNotReady, a.LastFailedReason)
				assert.Equal(t, int32(0), a.TargetRevision)
				assert.Equal(t, int32(0), a.LastFallbackCount)
			},
		},
		{
			name:   "with no last good revision there is nothing to fall back to",
			st:     Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{ordered(installed(node("a", 0, 3), now.Add(-time.Hour)), now.Add(-time.Hour))}},
			obs:    Observation{"a": withInstaller(pending(3), InstallerSucceeded)},
			policy: Policy{FallbackTimeout: dur(time.Minute)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, ordered(installed(node("a", 0, 3), now.Add(-time.Hour)), now.Add(-time.Hour)), nodeOf(t, d, "a"))
				assert.Empty(t, d.Events)
			},
		},
		{
			name: "the revision is retried after the fallback backoff, not before",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{fellBack(node("a", 2, 0), 3, 2, now.Add(-39*time.Minute))}},
			obs:  Observation{"a": ready(2)},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d))
				assert.Equal(t, time.Minute, d.RequeueAfter, "40 minutes after the second fallback")
			},
		},
		{
			name: "no other healthy node starts the revision while a node is in fallback for it",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				fellBack(node("a", 2, 0), 3, 1, now), node("b", 3, 0), node("c", 2, 0)}},
			obs:    Observation{"a": ready(2), "b": ready(3), "c": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d), "c would follow b to revision 3")
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldFallenBack, "c"})
			},
		},
		{
			// Found by TestSimRollout (seed 49): with a node in fallback
			// and a new machine down, each waited for the other.
			name: "a node already down may start the revision another node fell back from",
			st:   Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{fellBack(node("a", 2, 0), 3, 1, now.Add(-time.Hour)), node("b", 0, 0)}},
			obs:  Observation{"a": ready(2), "b": {}},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-b"}, started(d))
			},
		},
		{
			name: "a newer revision supersedes the fallback",
			st: Status{LatestAvailableRevision: 4, NodeStatuses: []NodeStatus{
				fellBack(node("a", 2, 0), 3, 1, now), node("b", 2, 0)}},
			obs:    Observation{"a": ready(2), "b": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-4-a", "installer-4-b"}, started(d))
			},
		},
		{
			// Found by TestSimRollout (seed 225): the install of the last
			// good revision was superseded at once by the revision the node
			// had just fallen back from.
			name: "the install of the last good revision is not superseded by the revision fallen back from",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 2, 2), 3, 1, now), now)}},
			obs: Observation{"a": withInstaller(pending(3), InstallerPending)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, int32(2), nodeOf(t, d, "a").TargetRevision)
				assert.Empty(t, d.Events)
			},
		},
		{
			// Found by TestSimRollout (seeds 540 and 3180): a failed install
			// of the last good revision replaced the fallback's record, and
			// the revision fallen back from was retried at once.
			name: "a failed install of the last good revision keeps the fallback's record and backs off",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 2, 2), 3, 1, now.Add(-25*time.Minute)), now.Add(-time.Minute))}},
			obs: Observation{"a": pending(3)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(3), a.LastFailedRevision)
				assert.Equal(t, ReasonOperandFailedFallback, a.LastFailedReason)
				assert.Equal(t, int32(1), a.LastFailedCount, "the failed install of revision 2")
				assert.Equal(t, now.Add(15*time.Second), a.RetryTime.Time)
				assert.Empty(t, started(d))
				later, err := Decide(Input{Status: d.Final, Observation: Observation{"a": {}}, Now: now.Add(10 * time.Second)})
				require.NoError(t, err)
				assert.Empty(t, started(later), "the reinstall backs off as well")
			},
		},
		{
			name: "a failed install of a revision below the one fallen back from keeps the fallback's record: the fallback backoff still spaces its retry",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 1, 2), 3, 1, now.Add(-time.Minute)), now.Add(-30*time.Second)), node("b", 2, 0)}},
			obs: Observation{"a": withInstaller(monitor(1, 3, now.Add(-time.Minute)), InstallerFailed), "b": ready(2)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(3), a.LastFailedRevision, "the revision fallen back from, not the one that failed")
				assert.Equal(t, ReasonOperandFailedFallback, a.LastFailedReason)
				assert.Equal(t, []int32{1, 1}, []int32{a.LastFallbackCount, a.LastFailedCount})
				assert.Equal(t, now.Add(19*time.Minute), a.RetryTime.Time, "the fallback's retry time, later than the installer backoff's")
				assert.False(t, a.InTransition())
				assert.Equal(t, []string{ReasonInstallerPodFailed}, eventReasons(d.Events))
				for _, after := range []time.Duration{time.Minute, 18 * time.Minute} {
					later, err := Decide(Input{Status: d.Final, Observation: Observation{"a": ready(1), "b": ready(2)}, Now: now.Add(after)})
					require.NoError(t, err)
					assert.Empty(t, started(later), "neither revision 3 nor 2 starts on a before the fallback backoff, %v later", after)
				}
				later, err := Decide(Input{Status: d.Final, Observation: Observation{"a": ready(1), "b": ready(2)}, Now: now.Add(19 * time.Minute)})
				require.NoError(t, err)
				assert.Equal(t, []string{"installer-3-retry-2-a"}, started(later), "a retries revision 3 once the fallback backoff passed")
			},
		},
		{
			name: "a node in fallback that installs a revision below the one it fell back from is still in fallback: no other node starts that one",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(installed(fellBack(node("a", 1, 2), 3, 1, now.Add(-10*time.Minute)), now.Add(-time.Minute)), now.Add(-2*time.Minute)),
				failed(node("b", 2, 3), 3, 1, ReasonInstallerPodFailed, now.Add(-time.Hour), "installer failed")}},
			obs:    Observation{"a": withInstaller(pending(2), InstallerSucceeded), "b": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Empty(t, started(d), "b, up, waits while a is in fallback from revision 3")
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldFallenBack, "b"})
			},
		},
		{
			name: "a node in transition that is up does not retry a revision another node fell back from: the node in fallback retries it first",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				fellBack(node("a", 2, 0), 3, 1, now.Add(-time.Hour)),
				failed(node("b", 2, 3), 3, 1, ReasonInstallerPodFailed, now.Add(-time.Hour), "installer failed"), node("c", 2, 0)}},
			obs:    Observation{"a": monitor(2, 3, now.Add(-time.Hour)), "b": ready(2), "c": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-retry-1-a"}, started(d), "b, up, waits; a is handed the start")
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldFallenBack, "b"})
			},
		},
		{
			name: "a fallback observed in this decision holds the retry of a node decided before it",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				failed(node("a", 2, 3), 3, 1, ReasonInstallerPodFailed, now.Add(-time.Hour), "installer failed"),
				ordered(installed(node("b", 2, 3), now.Add(-time.Minute)), now.Add(-2*time.Minute)), node("c", 2, 0)}},
			obs:    Observation{"a": ready(2), "b": withInstaller(monitor(2, 3, now.Add(-time.Second)), InstallerSucceeded), "c": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, ReasonOperandFailedFallback, nodeOf(t, d, "b").LastFailedReason)
				assert.Empty(t, started(d))
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldFallenBack, "a"})
			},
		},
		{
			// Each waited for the other: a, the start of the pass, for b's
			// fallback; b, not the start, for its turn to retry.
			name: "a node that is up and failing a revision hands the start to the node in fallback from it",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				failed(node("a", 2, 0), 3, 1, ReasonOperandNotReady, now.Add(-2*time.Hour), "not ready"),
				fellBack(node("b", 2, 0), 3, 1, now.Add(-2*time.Hour))}},
			obs: Observation{"a": ready(2), "b": monitor(2, 3, now.Add(-2*time.Hour))},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, "b", d.Start)
				assert.Equal(t, []string{"installer-3-retry-1-b"}, started(d))
			},
		},
		{
			name: "the fallback a failed retry left running is the one recorded, not a second one",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				retryAt(counts(failed(node("a", 2, 3), 3, 1, ReasonInstallerPodFailed, now.Add(-time.Minute), "installer failed"), 1, 1), now.Add(14*time.Second))}},
			obs: Observation{"a": monitor(2, 3, now.Add(-30*time.Minute))},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(1), a.LastFallbackCount)
				assert.Equal(t, ReasonInstallerPodFailed, a.LastFailedReason)
				assert.Empty(t, d.Events)
				assert.Equal(t, retryAt(counts(failed(node("a", 2, 3), 3, 1, ReasonInstallerPodFailed, now.Add(-time.Minute), "installer failed"), 1, 1), now.Add(14*time.Second)), a)
			},
		},
		{
			name: "with one node unreachable and MaxUnavailable 2, the node in fallback retries once its backoff passed",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				fellBack(node("a", 2, 0), 3, 1, now.Add(-time.Hour)), node("b", 2, 0), node("c", 2, 0)}},
			obs:    Observation{"a": monitor(2, 3, now.Add(-time.Hour)), "b": {Unreachable: true, Operand: ready(2).Operand}, "c": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-retry-1-a"}, started(d), "c waits for a")
			},
		},
		{
			name: "a fallback count at its limit stays there, its backoff at 2 h, and its retry keeps a name",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 2, 3), 3, math.MaxInt32, now.Add(-3*time.Hour)), now.Add(-time.Minute))}},
			obs: Observation{"a": withInstaller(monitor(2, 3, now.Add(-time.Second)), InstallerSucceeded)},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(math.MaxInt32), a.LastFallbackCount)
				assert.Equal(t, now.Add(2*time.Hour), a.RetryTime.Time)
				assert.Equal(t, []string{"installer-3-retry-2147483647-a"}, deleting(d), "the next retry, of the same name, waits for it to go")
			},
		},
		{
			name: "a fallback backoff shorter than the installer's does not cut the installer backoff of a failed install of the last good revision",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 2, 2), 3, 1, now.Add(-25*time.Minute)), now.Add(-time.Minute))}},
			obs: Observation{"a": pending(3)},
			policy: Policy{FallbackBackoff: converge.Backoff{Initial: dur(time.Minute), Max: dur(time.Minute)},
				InstallerBackoff: converge.Backoff{Initial: dur(time.Hour), Max: dur(time.Hour)}},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				require.Equal(t, now.Add(time.Hour), a.RetryTime.Time, "the installer backoff after the failed install")
				p := Policy{FallbackBackoff: converge.Backoff{Initial: dur(time.Minute), Max: dur(time.Minute)},
					InstallerBackoff: converge.Backoff{Initial: dur(time.Hour), Max: dur(time.Hour)}}
				later, err := Decide(Input{Status: d.Final, Observation: Observation{"a": pending(3)}, Policy: p, Now: now.Add(time.Second)})
				require.NoError(t, err)
				assert.Equal(t, a.RetryTime, nodeOf(t, later, "a").RetryTime, "a later sync keeps it")
			},
		},
		{
			name: "a clock that stepped back during the fallback backoff does not make the recorded fallback a new one",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 2, 3), 3, 1, now.Add(-time.Minute)), now.Add(-time.Second))}},
			obs: Observation{"a": withInstaller(monitor(2, 3, now.Add(30*time.Minute)), InstallerPending)},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, int32(1), nodeOf(t, d, "a").LastFallbackCount)
				assert.Empty(t, d.Events)
			},
		},
		{
			name: "a recorded fallback is not new while no installer of the revision succeeded since, whatever the times say",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				ordered(fellBack(node("a", 2, 3), 3, 1, now.Add(-time.Hour)), now.Add(-10*time.Minute))}},
			obs: Observation{"a": monitor(2, 3, now.Add(-5*time.Minute))},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(1), a.LastFallbackCount)
				assert.Equal(t, ReasonInstallerPodDisappeared, a.LastFailedReason, "the retry's installer vanished before it ran")
				assert.Equal(t, []string{ReasonInstallerPodDisappeared}, eventReasons(d.Events))
			},
		},
		{
			name: "a node whose operand runs a fallback for a revision is in fallback for it, whatever failure its status records since",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "installer failed"), node("b", 3, 0), node("c", 2, 0)}},
			obs:    Observation{"a": monitor(1, 3, now.Add(-2*time.Hour)), "b": ready(3), "c": ready(2)},
			policy: Policy{MaxUnavailable: 2},
			check: func(t *testing.T, d Decision) {
				assert.NotContains(t, started(d), "installer-3-c")
				assert.Contains(t, holdsOf(d.Holds), heldBy{HoldFallenBack, "c"})
			},
		},
		{
			name: "a recorded fallback is not new after a retry whose installer failed, once a clock that stepped back passes the fallback's time",
			st: Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{
				retryAt(counts(failed(node("a", 2, 3), 3, 1, ReasonInstallerPodFailed, now.Add(-time.Hour), "installer failed"), 1, 1), now.Add(-time.Minute))}},
			obs: Observation{"a": monitor(2, 3, now.Add(-time.Minute))},
			check: func(t *testing.T, d Decision) {
				a := nodeOf(t, d, "a")
				assert.Equal(t, int32(1), a.LastFallbackCount)
				assert.NotContains(t, eventReasons(d.Events), ReasonOperandFailedFallback)
			},
		},
		{
			name:   "fallbacks do not count against MaxInstallerRetries",
			st:     Status{LatestAvailableRevision: 3, NodeStatuses: []NodeStatus{fellBack(node("a", 2, 0), 3, 5, now.Add(-3*time.Hour))}},
			obs:    Observation{"a": ready(2)},
			policy: Policy{MaxInstallerRetries: 1},
			check: func(t *testing.T, d Decision) {
				assert.Equal(t, []string{"installer-3-retry-5-a"}, started(d))
			},
		},
	})
}

// TestFallbackBackoffParityWithLibraryGo: library-go waits 10 min · 2^n
// after n fallbacks, at most 2 h.
func TestFallbackBackoffParityWithLibraryGo(t *testing.T) {
	for count := int32(1); count <= 6; count++ {
		want := min(10*time.Minute*time.Duration(1<<count), 2*time.Hour)
		n := NodeStatus{LastFailedReason: ReasonOperandFailedFallback, LastFallbackCount: count}
		assert.Equal(t, want, Policy{}.retryDelay(n, 0.9), "after %d fallbacks", count)
	}
	assert.True(t, strings.Contains(Policy{}.backoff().Max.Duration.String(), "10m"))
}
