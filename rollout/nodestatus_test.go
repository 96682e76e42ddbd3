package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNextNodeStatus(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name        string
		node        NodeStatus
		latest      int32
		obs         NodeObservation
		policy      Policy
		want        NodeStatus
		wantDelete  []string
		wantAfter   []string
		wantCreate  string
		wantEvents  []string
		wantReason  string
		wantRequeue time.Duration
	}{
		{
			name: "not in transition", node: node("a", 2, 0), latest: 3, obs: ready(2),
			want: node("a", 2, 0), wantReason: "not in transition",
		},
		{
			name: "operand ready at the target: current moves", node: node("a", 1, 2), latest: 2,
			obs:  withInstaller(ready(2), InstallerSucceeded),
			want: node("a", 2, 0), wantEvents: []string{EventNodeCurrentRevisionChanged},
			wantReason: "static pod of revision 2 is ready",
		},
		{
			name: "operand ready at the target keeps the failure record", latest: 2,
			node: failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, t0, "x"),
			obs:  ready(2),
			want: failed(node("a", 2, 0), 2, 1, FailureInstallerFailed, t0, "x"), wantEvents: []string{EventNodeCurrentRevisionChanged},
			wantReason: "static pod of revision 2 is ready",
		},
		{
			name: "newer revision pending: jump and delete the unfinished installer", node: node("a", 1, 2), latest: 4,
			obs:  withInstaller(ready(1), InstallerRunning),
			want: node("a", 1, 4), wantDelete: []string{"installer-2-a"}, wantCreate: "installer-4-a",
			wantEvents: []string{EventNodeTargetRevisionChanged}, wantReason: reasonNewRevisionPending,
		},
		{
			name: "an older target superseded by a newer revision keeps the failure record", latest: 3,
			node: failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, t0, "boom"),
			obs:  ready(1),
			want: failed(node("a", 1, 3), 2, 2, FailureInstallerFailed, t0, "boom"), wantCreate: "installer-3-a",
			wantEvents: []string{EventNodeTargetRevisionChanged}, wantReason: reasonNewRevisionPending,
		},
		{
			name: "newer revision pending while paused: no jump", node: node("a", 1, 2), latest: 3, policy: Policy{Paused: true},
			obs:  withInstaller(ready(1), InstallerRunning),
			want: node("a", 1, 2), wantReason: "installer installer-2-a is Running",
		},
		{
			name: "newer revision pending on an unreachable node: jump without installer", node: node("a", 1, 2), latest: 3,
			obs:  NodeObservation{Unreachable: true, Installer: InstallerState{Phase: InstallerSucceeded}},
			want: node("a", 1, 3), wantEvents: []string{EventNodeTargetRevisionChanged}, wantReason: reasonNewRevisionPending,
		},
		{
			name: "installer pending: wait with the pod message", node: node("a", 1, 2), latest: 2,
			obs:  NodeObservation{Operand: OperandState{Phase: OperandReady, Revision: 1}, Installer: InstallerState{Phase: InstallerPending, Message: "Unschedulable"}},
			want: node("a", 1, 2), wantReason: "installer installer-2-a is Pending: Unschedulable",
		},
		{
			name: "installer disappeared: recreate it, nothing failed", node: node("a", 1, 2), latest: 2, obs: ready(1),
			want: node("a", 1, 2), wantCreate: "installer-2-a", wantReason: "creating installer installer-2-a",
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
			name: "installer failed: keep target, record, back off", node: node("a", 1, 2), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{
				{Name: "installer", Message: "no space left"}, {Name: "sidecar", Message: "gone"}, {Name: "quiet"}}}},
			want:       failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, now, "installer: no space left", "sidecar: gone"),
			wantEvents: []string{EventInstallerPodFailed}, wantReason: "installer failed 1 time, retrying in 10s", wantRequeue: 10 * time.Second,
		},
		{
			name: "installer OOM killed counts as a failure", latest: 2,
			node: failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, t0, "old"),
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{
				{Name: "installer", OOMKilled: true}}}},
			want:       failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, now, "installer: OOMKilled"),
			wantEvents: []string{EventInstallerPodFailed}, wantReason: "installer failed 2 times, retrying in 15s", wantRequeue: 15 * time.Second,
		},
		{
			name: "installer failed without messages: fallback text", node: node("a", 1, 2), latest: 2,
			obs:        NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Message: "evicted"}},
			want:       failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, now, "installer installer-2-a failed without a termination message: evicted"),
			wantEvents: []string{EventInstallerPodFailed}, wantReason: "installer failed 1 time, retrying in 10s", wantRequeue: 10 * time.Second,
		},
		{
			name: "failure of an older revision restarts the count", latest: 3,
			node: failed(node("a", 1, 3), 2, 4, FailureInstallerFailed, t0, "old"),
			obs:  NodeObservation{Installer: InstallerState{Phase: InstallerFailed, Containers: []ContainerTermination{{Name: "i", Message: "m"}}}},
			want: failed(node("a", 1, 3), 3, 1, FailureInstallerFailed, now, "i: m"), wantEvents: []string{EventInstallerPodFailed},
			wantReason: "installer failed 1 time, retrying in 10s", wantRequeue: 10 * time.Second,
		},
		{
			name: "in backoff: no retry yet", latest: 2,
			node:       failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, now.Add(-4*time.Second), "x"),
			obs:        ready(1),
			want:       failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, now.Add(-4*time.Second), "x"),
			wantReason: "installer failed 1 time, retrying in 6s", wantRequeue: 6 * time.Second,
		},
		{
			name: "backoff elapsed: retry under a new name", latest: 2,
			node:       failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, now.Add(-15*time.Second), "x"),
			obs:        ready(1),
			want:       failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, now.Add(-15*time.Second), "x"),
			wantCreate: "installer-2-retry-2-a", wantReason: "creating installer installer-2-retry-2-a",
		},
		{
			name: "last allowed retry fails: give up", latest: 2, policy: Policy{MaxInstallerRetries: 1},
			node:       failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, t0, "x"),
			obs:        NodeObservation{Installer: InstallerState{Phase: InstallerFailed}},
			want:       failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, now, "installer installer-2-retry-1-a failed without a termination message"),
			wantEvents: []string{EventInstallerPodFailed, EventInstallerRetriesExhausted},
			wantReason: "installer failed 2 times, giving up on revision 2",
		},
		{
			name: "retries exhausted: no new installer", latest: 2, policy: Policy{MaxInstallerRetries: 1},
			node:       failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, t0, "x"),
			obs:        ready(1),
			want:       failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, t0, "x"),
			wantReason: "gave up on revision 2 after 2 failed installers",
		},
		{
			name: "installer stuck past the pending timeout: delete and fail", node: node("a", 1, 2), latest: 2,
			policy:    Policy{InstallerPendingTimeout: 5 * time.Minute},
			obs:       NodeObservation{Installer: InstallerState{Phase: InstallerPending, StartTime: now.Add(-5 * time.Minute)}},
			want:      failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, now, "installer installer-2-a did not finish within 5m0s (Pending)"),
			wantAfter: []string{"installer-2-a"}, wantEvents: []string{EventInstallerPodFailed},
			wantReason: "installer failed 1 time, retrying in 10s", wantRequeue: 10 * time.Second,
		},
		{
			name: "installer running within the timeout: wait for the rest", node: node("a", 1, 2), latest: 2,
			policy: Policy{InstallerPendingTimeout: 5 * time.Minute},
			obs:    NodeObservation{Installer: InstallerState{Phase: InstallerRunning, StartTime: now.Add(-2 * time.Minute)}},
			want:   node("a", 1, 2), wantReason: "installer installer-2-a is Running", wantRequeue: 3 * time.Minute,
		},
		{
			name: "installer succeeded, operand pending", node: node("a", 1, 2), latest: 2,
			obs:  withInstaller(pending(2), InstallerSucceeded),
			want: node("a", 1, 2), wantReason: reasonStaticPodPending,
		},
		{
			name: "installer succeeded, operand missing", node: node("a", 1, 2), latest: 2,
			obs:  withInstaller(NodeObservation{}, InstallerSucceeded),
			want: node("a", 1, 2), wantReason: reasonStaticPodPending,
		},
		{
			name: "installer succeeded, operand still at the old revision", node: node("a", 1, 2), latest: 2,
			obs:  withInstaller(ready(1), InstallerSucceeded),
			want: node("a", 1, 2), wantReason: "waiting for static pod of revision 2, found 1",
		},
		{
			name: "operand failed at the target: record, clear target", node: node("a", 1, 2), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 2, Message: "CrashLoopBackOff"}},
			want:       failed(node("a", 1, 0), 2, 1, FailureOperandFailed, now, "CrashLoopBackOff"),
			wantEvents: []string{EventOperandFailed}, wantReason: "static pod of revision 2 failed 1 time, retrying in 10s",
			wantRequeue: 10 * time.Second,
		},
		{
			name: "operand failed again on a retry: the count grows", node: failed(node("a", 1, 2), 2, 1, FailureOperandFailed, t0, "old"), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 2, Message: "CrashLoopBackOff"}},
			want:       failed(node("a", 1, 0), 2, 2, FailureOperandFailed, now, "CrashLoopBackOff"),
			wantEvents: []string{EventOperandFailed}, wantReason: "static pod of revision 2 failed 2 times, retrying in 15s",
			wantRequeue: 15 * time.Second,
		},
		{
			name: "operand failed on the last allowed retry: give up", policy: Policy{MaxInstallerRetries: 1}, latest: 2,
			node: failed(node("a", 1, 2), 2, 1, FailureOperandFailed, t0, "old"),
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 2, Message: "CrashLoopBackOff"}},
			want:       failed(node("a", 1, 0), 2, 2, FailureOperandFailed, now, "CrashLoopBackOff"),
			wantEvents: []string{EventOperandFailed, EventInstallerRetriesExhausted},
			wantReason: "static pod failed 2 times, giving up on revision 2",
		},
		{
			name: "operand failed at an old revision: wait for the new one", node: node("a", 1, 2), latest: 2,
			obs: NodeObservation{Installer: InstallerState{Phase: InstallerSucceeded},
				Operand: OperandState{Phase: OperandFailed, Revision: 1, Message: "old"}},
			want: node("a", 1, 2), wantReason: "waiting for static pod of revision 2, found 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NextNodeStatus(tt.node, tt.latest, tt.obs, tt.policy, now)
			assert.Equal(t, tt.want, d.Status)
			assert.Equal(t, tt.wantReason, d.Reason)
			assert.Equal(t, tt.wantRequeue, d.RequeueAfter)
			var deleted []string
			for _, i := range d.Delete {
				deleted = append(deleted, i.Name)
			}
			assert.Equal(t, tt.wantDelete, deleted)
			var after []string
			for _, i := range d.DeleteAfter {
				after = append(after, i.Name)
			}
			assert.Equal(t, tt.wantAfter, after, "deleted once the status is written")
			if tt.wantCreate == "" {
				assert.Nil(t, d.Create)
			} else {
				require.NotNil(t, d.Create)
				assert.Equal(t, tt.wantCreate, d.Create.Name)
				assert.Equal(t, d.Status.TargetRevision, d.Create.Revision)
				assert.Equal(t, tt.node.NodeName, d.Create.Node)
			}
			var events []string
			for _, e := range d.Events {
				events = append(events, e.Reason)
				assert.Equal(t, tt.node.NodeName, e.Node)
			}
			assert.Equal(t, tt.wantEvents, events)
		})
	}
}

// TestNextNodeStatusOOMTwiceThenSuccess drives one node through the upstream
// scenario step by step: an installer OOM killed twice, retried under new
// names after the backoff, then succeeding.
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
		{at: 10 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 1, wantCreate: "installer-2-retry-1-a"},
		{at: 11 * time.Second, obs: oom, wantTarget: 2, wantCurrent: 1, wantCount: 2},
		{at: 20 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 2},
		{at: 26 * time.Second, obs: ready(1), wantTarget: 2, wantCurrent: 1, wantCount: 2, wantCreate: "installer-2-retry-2-a"},
		{at: 30 * time.Second, obs: withInstaller(pending(2), InstallerSucceeded), wantTarget: 2, wantCurrent: 1, wantCount: 2},
		{at: 40 * time.Second, obs: withInstaller(ready(2), InstallerSucceeded), wantTarget: 0, wantCurrent: 2, wantCount: 2},
	}
	n := node("a", 1, 2)
	for i, s := range steps {
		d := NextNodeStatus(n, 2, s.obs, Policy{}, t0.Add(s.at))
		n = d.Status
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
