package addon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
)

// TestRuleReadySaysWhyNothingRollsBack: a failed upgrade whose rollback
// target is missing or unusable says so in Ready (reason and message), not
// only in Stalled, however long the driver's error is.
func TestRuleReadySaysWhyNothingRollsBack(t *testing.T) {
	huge := errors.New("helm: upgrade failed: " + strings.Repeat("manifest rejected; ", 2000))
	ready := func(reason, says string) func(*testing.T, addon.Decision) {
		return func(t *testing.T, d addon.Decision) {
			t.Helper()
			for _, typ := range []string{conditions.TypeReady, conditions.TypeStalled} {
				c := cond(t, d, typ)
				assert.Equal(t, reason, c.Reason, typ)
				assert.Contains(t, c.Message, says, typ)
			}
			assert.Equal(t, metav1.ConditionFalse, cond(t, d, conditions.TypeReady).Status)
		}
	}
	failing := claimed(addon.ActionUpgrade, "v1", "v2")
	runDecide(t, []decideRow{
		{name: "no version was ever healthy",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, failing, func(s *addon.Status) { s.LastGoodVersion = "" }),
			spec:   gen(1, "v2"), obs: outcome(errBoom),
			want: want{phase: addon.PhaseFailed, reason: addon.ReasonRollbackTargetMissing,
				check: ready(addon.ReasonRollbackTargetMissing, "not rolling back: no version was ever healthy")}},
		{name: "no version was ever healthy, behind an error longer than any message",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, failing, func(s *addon.Status) { s.LastGoodVersion = "" }),
			spec:   gen(1, "v2"), obs: outcome(huge),
			want: want{phase: addon.PhaseFailed, reason: addon.ReasonRollbackTargetMissing,
				check: ready(addon.ReasonRollbackTargetMissing, "not rolling back: no version was ever healthy")}},
		{name: "the last good version is the one that failed, behind an error longer than any message",
			status: st(addon.PhaseUpgrading, addon.ActionUpgrade, claimed(addon.ActionUpgrade, "v2", "v1"),
				func(s *addon.Status) { s.InstalledVersion, s.UpgradeFailures = "v2", 5 }),
			spec: gen(1, "v1"), obs: outcome(huge),
			want: want{phase: addon.PhaseFailed, reason: addon.ReasonRollbackTargetUnusable,
				check: ready(addon.ReasonRollbackTargetUnusable, "not rolling back: the last good version v1 is the version that failed")}},
	})
}
