package rollout

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func mt(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }

// ordered marks n's current attempt as ordered at t.
func ordered(n NodeStatus, t time.Time) NodeStatus { n.InstallerOrderedTime = mt(t); return n }

// unseen marks n's current attempt as ordered at t and not seen yet.
func unseen(n NodeStatus, t time.Time) NodeStatus {
	n = ordered(n, t)
	n.InstallerNotSeen = true
	return n
}

// installed marks n's current attempt as installed at t.
func installed(n NodeStatus, t time.Time) NodeStatus {
	n.InstallerOrderedTime, n.InstalledTime = nil, mt(t)
	return n
}

// retryAt sets n's retry time.
func retryAt(n NodeStatus, t time.Time) NodeStatus { n.RetryTime = mt(t); return n }

// nodeCase is one row of a NextNodeStatus table.
type nodeCase struct {
	name        string
	node        NodeStatus
	latest      int32
	obs         NodeObservation
	policy      Policy
	deleting    bool
	held        bool
	at          time.Time
	want        NodeStatus
	wantDelete  []string
	wantCreate  string
	wantEvents  []string
	wantReason  string
	wantRequeue time.Duration
}

func runNodeCases(t *testing.T, tests []nodeCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := tt.at
			if now.IsZero() {
				now = t0.Add(time.Hour)
			}
			d := NextNodeStatus(tt.node, NodeInput{Latest: tt.latest, Observation: tt.obs, Policy: tt.policy, Now: now, Deleting: tt.deleting, Held: tt.held})
			got := tt.node
			if d.To != nil {
				got = *d.To
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantReason, d.Reason)
			assert.Equal(t, tt.wantRequeue, d.RequeueAfter)
			var deleted []string
			for _, i := range d.Delete {
				deleted = append(deleted, i.Name)
			}
			assert.Equal(t, tt.wantDelete, deleted)
			if tt.wantCreate == "" {
				assert.Nil(t, d.Create)
			} else {
				require.NotNil(t, d.Create)
				assert.Equal(t, tt.wantCreate, d.Create.Name)
				assert.Equal(t, got.TargetRevision, d.Create.Revision)
				assert.Equal(t, tt.node.NodeName, d.Create.Node)
				assert.NotNil(t, got.InstallerOrderedTime, "an installer is ordered in the status before it is created")
			}
			var events []string
			for _, e := range d.Events {
				events = append(events, e.Reason)
				assert.Contains(t, e.Message, `"`+tt.node.NodeName+`"`, "the message names the node")
				assert.LessOrEqual(t, len(e.Message), MaxEventMessageLength)
			}
			assert.Equal(t, tt.wantEvents, events)
			if d.To != nil {
				assert.NoError(t, d.To.validate())
			}
		})
	}
}

func TestNextNodeStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	runNodeCases(t, []nodeCase{
		{
			name: "not in transition", node: node("a", 2, 0), latest: 3, obs: ready(2),
			want: node("a", 2, 0), wantReason: "nothing to do",
		},
		{
			name: "operand ready at the target: current moves", node: installed(node("a", 1, 2), t0), latest: 2,
			obs:  withInstaller(ready(2), InstallerSucceeded),
			want: node("a", 2, 0), wantEvents: []string{ReasonNodeCurrentRevisionChanged},
			wantReason: "static pod is ready",
			wantDelete: []string{"installer-2-a"},
		},
		{
			name: "operand ready at the target keeps the failure record", latest: 2,
			node: failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0, "x"),
			obs:  ready(2),
			want: failed(node("a", 2, 0), 2, 1, ReasonInstallerPodFailed, t0, "x"), wantEvents: []string{ReasonNodeCurrentRevisionChanged},
			wantReason: "static pod is ready",
		},
		{
			name: "an older target superseded by a newer revision keeps the failure record", latest: 3,
			node: failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0, "boom"),
			obs:  ready(1),
			want: unseen(failed(node("a", 1, 3), 2, 2, ReasonInstallerPodFailed, t0, "boom"), now), wantCreate: "installer-3-a",
			wantEvents: []string{ReasonNodeTargetRevisionChanged}, wantReason: "new revision pending",
		},
		{
			name: "newer revision pending while paused: no jump", node: ordered(node("a", 1, 2), now), latest: 3, policy: Policy{Paused: true},
			obs:  withInstaller(ready(1), InstallerRunning),
			want: ordered(node("a", 1, 2), now), wantReason: "installer installer-2-a is Running",
		},
		{
			name: "newer revision pending on an unreachable node: jump without installer", node: node("a", 1, 2), latest: 3,
			obs:  NodeObservation{Unreachable: true, Installer: InstallerState{Phase: InstallerSucceeded}},
			want: node("a", 1, 3), wantEvents: []string{ReasonNodeTargetRevisionChanged}, wantReason: "new revision pending",
			wantDelete:  []string{"installer-2-a"},
			wantRequeue: time.Second,
		},
		{
			name: "installer pending: wait with the pod message", node: ordered(node("a", 1, 2), t0), latest: 2,
			obs:  NodeObservation{Operand: OperandState{Phase: OperandReady, Revision: 1}, Installer: InstallerState{Phase: InstallerPending, Message: "Unschedulable"}},
			want: ordered(node("a", 1, 2), t0), wantReason: "installer installer-2-a is Pending: Unschedulable",
		},
		{
			name: "installer never ordered (a status from before): its start time counts", node: node("a", 1, 2), latest: 2,
			policy: Policy{InstallerPendingTimeout: dur(time.Minute)},
			obs:    NodeObservation{Installer: InstallerState{Phase: InstallerRunning, StartTime: now.Add(-20 * time.Second)}},
			want:   node("a", 1, 2), wantReason: "installer installer-2-a is Running", wantRequeue: 40 * time.Second,
		},
		{
			name: "installer never ordered and missing: order and create it", node: node("a", 1, 2), latest: 2, obs: ready(1),
			want: unseen(node("a", 1, 2), now), wantCreate: "installer-2-a", wantReason: "creating installer installer-2-a",
		},
		{
			name: "installer missing on an unreachable node: wait", node: node("a", 1, 2), latest: 2,
			obs:  NodeObservation{Unreachable: true},
			want: node("a", 1, 2), wantReason: "node is unreachable, not creating installer installer-2-a",
		},
		{
			name: "installer missing while paused: wait", node: node("a", 1, 2), latest: 2, obs: ready(1), policy: Policy{Paused: true},
			want: node("a", 1, 2), wantReason: "paused before creating installer installer-2-a",
		},
		{
			name: "installer failed: keep target, record, back off 15 s", node: ordered(node("a", 1, 2), t0), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{
				{Name: "installer", Message: "no space left"}, {Name: "sidecar", Message: "gone"}, {Name: "quiet"}}}},
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "installer: no space left", "sidecar: gone"), now.Add(15*time.Second)),
			wantEvents: []string{ReasonInstallerPodFailed}, wantReason: "InstallerPodFailed 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
			wantDelete: []string{"installer-2-a"},
		},
		{
			name: "installer OOM killed counts as a failure", latest: 2,
			node: ordered(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0, "old"), t0),
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{
				{Name: "installer", OOMKilled: true}}}},
			want:       retryAt(failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, now, "installer: OOMKilled"), now.Add(23*time.Second)),
			wantEvents: []string{ReasonInstallerPodFailed}, wantReason: "InstallerPodFailed 2 times, retrying in 23s", wantRequeue: 23 * time.Second,
			wantDelete: []string{"installer-2-retry-1-a"},
		},
		{
			name: "installer failed without messages: library-go's fallback text", node: node("a", 1, 2), latest: 2,
			obs:        NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Message: "evicted"}},
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "no detailed termination message, see the installer pod installer-2-a: evicted"), now.Add(15*time.Second)),
			wantEvents: []string{ReasonInstallerPodFailed}, wantReason: "InstallerPodFailed 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
			wantDelete: []string{"installer-2-a"},
		},
		{
			name: "failure of an older revision restarts the count", latest: 3,
			node: failed(node("a", 1, 3), 2, 4, ReasonInstallerPodFailed, t0, "old"),
			obs:  NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{{Name: "i", Message: "m"}}}},
			want: retryAt(failed(node("a", 1, 3), 3, 1, ReasonInstallerPodFailed, now, "i: m"), now.Add(15*time.Second)), wantEvents: []string{ReasonInstallerPodFailed},
			wantReason: "InstallerPodFailed 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
			wantDelete: []string{"installer-3-a"},
		},
		{
			name: "in backoff: no retry yet", latest: 2,
			node:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now.Add(-4*time.Second), "x"), now.Add(11*time.Second)),
			obs:        ready(1),
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now.Add(-4*time.Second), "x"), now.Add(11*time.Second)),
			wantReason: "installer failed 1 time, retrying in 11s", wantRequeue: 11 * time.Second,
		},
		{
			name: "backoff elapsed: retry under a new name", latest: 2,
			node:       retryAt(failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, now.Add(-23*time.Second), "x"), now),
			obs:        ready(1),
			want:       unseen(retryAt(failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, now.Add(-23*time.Second), "x"), now), now),
			wantCreate: "installer-2-retry-2-a", wantReason: "creating installer installer-2-retry-2-a",
		},
		{
			name: "last allowed retry fails: give up", latest: 2, policy: Policy{MaxInstallerRetries: 1},
			node:       failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0, "x"),
			obs:        NodeObservation{Installer: InstallerState{Phase: InstallerFailed}},
			want:       retryAt(failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, now, "no detailed termination message, see the installer pod installer-2-retry-1-a"), now.Add(23*time.Second)),
			wantEvents: []string{ReasonInstallerPodFailed, ReasonInstallerRetriesExhausted},
			wantReason: "InstallerPodFailed 2 times, giving up on revision 2",
			wantDelete: []string{"installer-2-retry-1-a"},
		},
		{
			name: "retries exhausted: no new installer", latest: 2, policy: Policy{MaxInstallerRetries: 1},
			node:       failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0, "x"),
			obs:        ready(1),
			want:       failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0, "x"),
			wantReason: "gave up on revision 2 after 2 failures",
		},
		{
			name: "installer running within the timeout: wait for the rest", node: ordered(node("a", 1, 2), now.Add(-2*time.Minute)), latest: 2,
			policy: Policy{InstallerPendingTimeout: dur(5 * time.Minute)},
			obs:    NodeObservation{Installer: InstallerState{Phase: InstallerRunning}},
			want:   ordered(node("a", 1, 2), now.Add(-2*time.Minute)), wantReason: "installer installer-2-a is Running", wantRequeue: 3 * time.Minute,
		},
		{
			name: "installer succeeded: the install time is recorded, operand pending", node: ordered(node("a", 1, 2), t0), latest: 2,
			obs:  withInstaller(pending(2), InstallerSucceeded),
			want: ordered(installed(node("a", 1, 2), now), t0), wantReason: "static pod is pending",
		},
		{
			name: "installer succeeded, operand missing", node: installed(node("a", 1, 2), t0), latest: 2,
			obs:  withInstaller(NodeObservation{}, InstallerSucceeded),
			want: installed(node("a", 1, 2), t0), wantReason: "static pod is pending",
		},
		{
			name: "installer succeeded and was pruned: not a disappearance", node: installed(node("a", 1, 2), t0), latest: 2,
			obs:  pending(2),
			want: installed(node("a", 1, 2), t0), wantReason: "static pod is pending",
		},
		{
			name: "installer succeeded, operand still at the old revision", node: installed(node("a", 1, 2), t0), latest: 2,
			obs:  withInstaller(ready(1), InstallerSucceeded),
			want: installed(node("a", 1, 2), t0), wantReason: "waiting for static pod of revision 2, found 1",
		},
		{
			name: "operand failed at the target: record, clear target", node: installed(node("a", 1, 2), t0), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 2, Message: "CrashLoopBackOff"}},
			want:       retryAt(failed(node("a", 1, 0), 2, 1, ReasonOperandFailed, now, "CrashLoopBackOff"), now.Add(15*time.Second)),
			wantEvents: []string{ReasonOperandFailed}, wantReason: "OperandFailed 1 time, retrying in 15s",
			wantRequeue: 15 * time.Second,
			wantDelete:  []string{"installer-2-a"},
		},
		{
			name: "operand failed on the last allowed retry: give up", policy: Policy{MaxInstallerRetries: 1}, latest: 2,
			node: failed(node("a", 1, 2), 2, 1, ReasonOperandFailed, t0, "old"),
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 2, Message: "CrashLoopBackOff"}},
			want:       retryAt(failed(node("a", 1, 0), 2, 2, ReasonOperandFailed, now, "CrashLoopBackOff"), now.Add(23*time.Second)),
			wantEvents: []string{ReasonOperandFailed, ReasonInstallerRetriesExhausted},
			wantReason: "OperandFailed 2 times, giving up on revision 2",
			wantDelete: []string{"installer-2-retry-1-a"},
		},
		{
			name: "operand failed at an old revision: wait for the new one", node: installed(node("a", 1, 2), t0), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 1, Message: "old"}},
			want: installed(node("a", 1, 2), t0), wantReason: "waiting for static pod of revision 2, found 1",
		},
	})
}

// TestNoInstallerOutlivesItsDecision: an installer that must go (timed out,
// superseded) is recorded for deletion with the status change that decides
// it, and the node's next installer waits until it is confirmed gone.
func TestNoInstallerOutlivesItsDecision(t *testing.T) {
	now := t0.Add(time.Hour)
	runNodeCases(t, []nodeCase{
		{
			name: "superseded while running: recorded for deletion, no new installer yet", node: ordered(node("a", 1, 2), t0), latest: 4,
			obs:  withInstaller(ready(1), InstallerRunning),
			want: node("a", 1, 4), wantDelete: []string{"installer-2-a"},
			wantEvents: []string{ReasonNodeTargetRevisionChanged}, wantReason: "new revision pending",
			wantRequeue: time.Second,
		},
		{
			name: "superseded while an older installer is still being deleted: no new installer yet", node: node("a", 1, 2), latest: 4,
			obs: ready(1), deleting: true,
			want: node("a", 1, 4), wantEvents: []string{ReasonNodeTargetRevisionChanged}, wantReason: "new revision pending",
			wantRequeue: time.Second,
		},
		{
			name: "missing installer while an older one is being deleted: wait", node: node("a", 1, 4), latest: 4,
			obs: ready(1), deleting: true,
			want: node("a", 1, 4), wantReason: "waiting for an older installer to be deleted before creating installer-4-a",
		},
		{
			name: "stuck past the pending timeout: fail and record for deletion", node: ordered(node("a", 1, 2), now.Add(-5*time.Minute)), latest: 2,
			policy:     Policy{InstallerPendingTimeout: dur(5 * time.Minute)},
			obs:        NodeObservation{Installer: InstallerState{Phase: InstallerPending}},
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "installer installer-2-a did not finish within 5m0s (Pending)"), now.Add(15*time.Second)),
			wantDelete: []string{"installer-2-a"}, wantEvents: []string{ReasonInstallerPodFailed},
			wantReason: "InstallerPodFailed 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
		},
	})
}

// TestVanishingInstallerIsAFailedAttempt: an installer the engine ordered
// that disappears before it finished counts as a failure, with library-go's
// reason InstallerPodDisappeared, a backoff, a new name for the retry and
// MaxInstallerRetries.
func TestVanishingInstallerIsAFailedAttempt(t *testing.T) {
	now := t0.Add(time.Hour)
	runNodeCases(t, []nodeCase{
		{
			name: "ordered, seen, then missing: a failure with a backoff", node: ordered(node("a", 1, 2), t0), latest: 2, obs: ready(1),
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodDisappeared, now, "installer installer-2-a disappeared before it finished"), now.Add(15*time.Second)),
			wantEvents: []string{ReasonInstallerPodDisappeared}, wantReason: "InstallerPodDisappeared 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
			wantDelete: []string{"installer-2-a"},
		},
		{
			name: "the last allowed attempt vanishes: give up", node: ordered(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodDisappeared, t0, "x"), t0), latest: 2,
			obs: ready(1), policy: Policy{MaxInstallerRetries: 1},
			want:       retryAt(failed(node("a", 1, 2), 2, 2, ReasonInstallerPodDisappeared, now, "installer installer-2-retry-1-a disappeared before it finished"), now.Add(23*time.Second)),
			wantEvents: []string{ReasonInstallerPodDisappeared, ReasonInstallerRetriesExhausted}, wantReason: "InstallerPodDisappeared 2 times, giving up on revision 2",
			wantDelete: []string{"installer-2-retry-1-a"},
		},
	})
}

// TestOrderedInstallerNeverSeenIsNoFailedAttempt: an installer ordered
// and never seen that is missing (the process died before creating it, or
// the pod cache has not seen it yet) is created again under the same name:
// no failure, event, backoff or retry spent; the seen mark clears once an
// observation shows the installer in any phase, and a seen installer that
// is missing is a failed attempt.
func TestOrderedInstallerNeverSeenIsNoFailedAttempt(t *testing.T) {
	now := t0.Add(time.Hour)
	retry := unseen(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, t0, "x"), t0)
	runNodeCases(t, []nodeCase{
		{
			name: "ordered, never seen, missing: created again under the same name", node: unseen(node("a", 1, 2), t0), latest: 2, obs: ready(1),
			want: unseen(node("a", 1, 2), t0), wantCreate: "installer-2-a", wantReason: "installer installer-2-a ordered and not seen yet, ensuring it",
		},
		{
			name: "a retry ordered, never seen, missing: created again, no retry spent", node: retry, latest: 2, obs: ready(1),
			policy: Policy{MaxInstallerRetries: 1},
			want:   retry, wantCreate: "installer-2-retry-1-a", wantReason: "installer installer-2-retry-1-a ordered and not seen yet, ensuring it",
		},
		{
			name: "ordered, never seen, missing on an unreachable node: wait", node: unseen(node("a", 1, 2), t0), latest: 2,
			obs:  NodeObservation{Unreachable: true},
			want: unseen(node("a", 1, 2), t0), wantReason: "node is unreachable, not creating installer installer-2-a",
		},
		{
			name: "ordered, never seen, missing while paused: wait", node: unseen(node("a", 1, 2), t0), latest: 2, obs: ready(1),
			policy: Policy{Paused: true},
			want:   unseen(node("a", 1, 2), t0), wantReason: "paused before creating installer installer-2-a",
		},
		{
			name: "ordered, never seen, missing while an older installer goes: wait", node: unseen(node("a", 1, 2), t0), latest: 2, obs: ready(1),
			deleting: true,
			want:     unseen(node("a", 1, 2), t0), wantReason: "waiting for an older installer to be deleted before creating installer-2-a",
		},
		{
			name: "ordered, never seen, missing, up and held by maxUnavailable: the order is withdrawn, no failure", node: unseen(node("a", 1, 2), t0), latest: 2,
			obs: ready(1), held: true,
			want: node("a", 1, 2), wantReason: "maxUnavailable reached, withdrawing the order of installer installer-2-a, which was never seen",
		},
		{
			name: "an installer shown pending is seen", node: unseen(node("a", 1, 2), t0), latest: 2,
			obs:  withInstaller(ready(1), InstallerPending),
			want: ordered(node("a", 1, 2), t0), wantReason: "installer installer-2-a is Pending",
		},
		{
			name: "an installer shown failed is seen, and its failure recorded", node: unseen(node("a", 1, 2), t0), latest: 2,
			obs:        withInstaller(ready(1), InstallerFailed),
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "no detailed termination message, see the installer pod installer-2-a"), now.Add(15*time.Second)),
			wantEvents: []string{ReasonInstallerPodFailed}, wantReason: "InstallerPodFailed 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
			wantDelete: []string{"installer-2-a"},
		},
	})
}

// TestStuckOperandIsAFailure: an operand not ready OperandReadyTimeout after
// its installer succeeded is a failed attempt of that revision; 0 waits
// forever, as library-go does.
func TestStuckOperandIsAFailure(t *testing.T) {
	now := t0.Add(time.Hour)
	runNodeCases(t, []nodeCase{
		{
			name: "within the timeout: wait for the rest", node: installed(node("a", 1, 2), now.Add(-time.Minute)), latest: 2,
			obs: withInstaller(pending(2), InstallerSucceeded), policy: Policy{OperandReadyTimeout: dur(3 * time.Minute)},
			want: installed(node("a", 1, 2), now.Add(-time.Minute)), wantReason: "static pod is pending", wantRequeue: 2 * time.Minute,
		},
		{
			name: "past the timeout: OperandNotReady, target cleared", node: installed(node("a", 1, 2), now.Add(-3*time.Minute)), latest: 2,
			obs: withInstaller(pending(2), InstallerSucceeded), policy: Policy{OperandReadyTimeout: dur(3 * time.Minute)},
			want: retryAt(failed(node("a", 1, 0), 2, 1, ReasonOperandNotReady, now,
				"static pod of revision 2 was not ready within 3m0s of its installer succeeding"), now.Add(15*time.Second)),
			wantEvents: []string{ReasonOperandNotReady}, wantReason: "OperandNotReady 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
			wantDelete: []string{"installer-2-a"},
		},
		{
			name: "no timeout: wait forever", node: installed(node("a", 1, 2), t0.Add(-24*time.Hour)), latest: 2,
			obs:  withInstaller(pending(2), InstallerSucceeded),
			want: installed(node("a", 1, 2), t0.Add(-24*time.Hour)), wantReason: "static pod is pending",
		},
	})
}

// TestClockSteppingBackNeverLengthensAWait: a time the status holds in the
// future (the clock stepped back) is moved to now, so no backoff, pending
// or ready timeout waits longer than its own length.
func TestClockSteppingBackNeverLengthensAWait(t *testing.T) {
	now := t0
	later := t0.Add(time.Hour)
	runNodeCases(t, []nodeCase{
		{
			name: "retry time an hour ahead: waits one backoff from now", at: now, latest: 2,
			node:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, later, "x"), later.Add(15*time.Second)),
			obs:        ready(1),
			want:       retryAt(failed(node("a", 1, 2), 2, 1, ReasonInstallerPodFailed, now, "x"), now.Add(15*time.Second)),
			wantReason: "installer failed 1 time, retrying in 15s", wantRequeue: 15 * time.Second,
		},
		{
			name: "ordered an hour ahead: the pending timeout counts from now", at: now, latest: 2,
			node: ordered(node("a", 1, 2), later), policy: Policy{InstallerPendingTimeout: dur(time.Minute)},
			obs:  withInstaller(ready(1), InstallerPending),
			want: ordered(node("a", 1, 2), now), wantReason: "installer installer-2-a is Pending", wantRequeue: time.Minute,
		},
		{
			name: "installed an hour ahead: the ready timeout counts from now", at: now, latest: 2,
			node: installed(node("a", 1, 2), later), policy: Policy{OperandReadyTimeout: dur(time.Minute)},
			obs:  withInstaller(pending(2), InstallerSucceeded),
			want: installed(node("a", 1, 2), now), wantReason: "static pod is pending", wantRequeue: time.Minute,
		},
	})
}

// TestCountersSaturate: a failure count at its maximum stays there and its
// backoff stays at the cap; nothing wraps or panics.
func TestCountersSaturate(t *testing.T) {
	now := t0.Add(time.Hour)
	n := ordered(failed(node("a", 1, 2), 2, math.MaxInt32, ReasonInstallerPodFailed, t0, "x"), t0)
	d := NextNodeStatus(n, NodeInput{Latest: 2, Observation: NodeObservation{Installer: InstallerState{Phase: InstallerFailed}}, Now: now})
	require.NotNil(t, d.To)
	assert.Equal(t, int32(math.MaxInt32), d.To.LastFailedCount)
	assert.Equal(t, now.Add(10*time.Minute), d.To.RetryTime.Time, "the cap")
	assert.Equal(t, "installer-2-retry-2147483647-a", InstallerName(*d.To))
}

// TestNextNodeStatusOOMTwiceThenSuccess drives one node through the upstream
// scenario step by step: an installer OOM killed twice, retried under new
// names after library-go's backoff (15 s, then 22.5 s), then succeeding.
func TestNextNodeStatusOOMTwiceThenSuccess(t *testing.T) {
	oom := NodeObservation{Operand: OperandState{Phase: OperandReady, Revision: 1},
		Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{{Name: "installer", OOMKilled: true}}}}
	steps := []struct {
		at          time.Duration
		obs         NodeObservation
		wantTarget  int32
		wantCurrent int32
		wantCount   int32
		wantCreate  string
	}{
		{at: 0, obs: oom, wantTarget: 2, wantCurrent: 1, wantCount: 1},
		{at: 5 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 1},
		{at: 15 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 1, wantCreate: "installer-2-retry-1-a"},
		{at: 16 * time.Second, obs: oom, wantTarget: 2, wantCurrent: 1, wantCount: 2},
		{at: 38 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 2},
		{at: 39 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 2, wantCreate: "installer-2-retry-2-a"},
		{at: 45 * time.Second, obs: withInstaller(pending(2), InstallerSucceeded), wantTarget: 2, wantCurrent: 1, wantCount: 2},
		{at: 50 * time.Second, obs: withInstaller(ready(2), InstallerSucceeded), wantTarget: 0, wantCurrent: 2, wantCount: 2},
	}
	n := ordered(node("a", 1, 2), t0)
	for i, s := range steps {
		d := NextNodeStatus(n, NodeInput{Latest: 2, Observation: s.obs, Now: t0.Add(s.at)})
		if d.To != nil {
			n = *d.To
		}
		assert.Equal(t, s.wantTarget, n.TargetRevision, "step %d target", i)
		assert.Equal(t, s.wantCurrent, n.CurrentRevision, "step %d current", i)
		assert.Equal(t, s.wantCount, n.LastFailedCount, "step %d count", i)
		if s.wantCreate == "" {
			assert.Nil(t, d.Create, "step %d create", i)
		} else if assert.NotNil(t, d.Create, "step %d create", i) {
			assert.Equal(t, s.wantCreate, d.Create.Name, "step %d create", i)
		}
	}
	assert.False(t, n.Failing())
}
