package rollout_test

import (
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

// TestInstallerThatNeverStartsIsAHold: a node whose installer stays pending
// (a cordoned node, an image that cannot be pulled) is a typed hold
// (InstallerPending) on that node, whose message says when the installer
// was ordered (RFC 3339, never a duration); Progressing says it from the
// first sync that sees the installer pending, and Degraded once it was
// ordered HoldDegradedAfter ago (the sync asks to look again then).
func TestInstallerThatNeverStartsIsAHold(t *testing.T) {
	tests := []struct {
		name         string
		policy       rollout.Policy
		since        time.Duration // since the installer was ordered; 0: the first sync that sees it pending
		wantDegraded bool
	}{
		{name: "shown in Progressing at once, not Degraded"},
		{name: "not Degraded before HoldDegradedAfter (10 min by default)", since: 10*time.Minute - time.Second},
		{name: "Degraded once ordered HoldDegradedAfter ago", since: 10 * time.Minute, wantDegraded: true},
		{name: "Degraded after an hour, still naming the node", since: time.Hour, wantDegraded: true},
		{name: "a shorter HoldDegradedAfter", policy: rollout.Policy{HoldDegradedAfter: metav1.Duration{Duration: time.Minute}},
			since: time.Minute, wantDegraded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(t0)
			cluster := fake.NewRolloutCluster(clk, 1, "a", "b", "c")
			cluster.ScriptInstallers("b", fake.InstallerScript{Outcome: fake.InstallerHangs})
			store := fake.NewRolloutStatusStore(2, 1, "a", "b", "c")
			h := newController(t, store, cluster, clk, tt.policy)
			for i := 0; ; i++ {
				require.Less(t, i, 50, "b is started")
				_, err := h.sync(ctx)
				require.NoError(t, err)
				if _, ok := cluster.Pod("installer-2-b"); ok {
					break
				}
				cluster.Tick()
				clk.Step(time.Second)
			}
			b, _ := store.Current().Node("b")
			ordered := b.InstallerOrderedTime.Time
			want := "b: installer installer-2-b, ordered at " + ordered.UTC().Format(time.RFC3339) + ", has not started"
			clk.Step(time.Second)
			res, err := h.sync(ctx) // sees installer-2-b pending
			require.NoError(t, err)
			st := store.Current()
			assert.Contains(t, st.Holds, converge.Hold{Reason: rollout.HoldInstallerPending, Object: "b", Message: want})
			progressing, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
			assert.Contains(t, progressing.Message, want)
			if tt.since > 0 {
				clk.SetTime(ordered.Add(tt.since))
				_, err = h.sync(ctx)
				require.NoError(t, err)
				st = store.Current()
			} else {
				assert.Equal(t, 10*time.Minute-time.Second, res.RequeueAfter, "looks again when the hold turns Degraded")
			}
			degraded, _ := conditions.Get(st.Conditions, conditions.TypeDegraded)
			assert.Equal(t, tt.wantDegraded, degraded.Status == metav1.ConditionTrue, degraded.Message)
			if tt.wantDegraded {
				assert.Equal(t, rollout.ReasonRolloutHeld, degraded.Reason)
				assert.Contains(t, degraded.Message, want)
			}
			c, _ := st.Node("c")
			assert.False(t, c.InTransition(), "c waits: maxUnavailable 1 is reached")
		})
	}
}
