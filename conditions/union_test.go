package conditions

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

func TestUnion(t *testing.T) {
	now := t0.Add(time.Hour)
	long := now.Add(-30 * time.Minute)
	tests := []struct {
		name  string
		conds []metav1.Condition
		opts  UnionOptions
		want  metav1.Condition
	}{
		{
			name: "no sub-conditions is the default",
			opts: UnionOptions{Type: "Degraded"},
			want: cond("Degraded", False, ReasonAsExpected, ""),
		},
		{
			name:  "all fine keeps their messages",
			conds: []metav1.Condition{at(cond("FooDegraded", False, "AsExpected", "foo fine"), long), at(cond("BarDegraded", False, "AsExpected", ""), long)},
			opts:  UnionOptions{Type: "Degraded"},
			want:  cond("Degraded", False, ReasonAsExpected, "FooDegraded: foo fine"),
		},
		{
			name: "one bad source",
			conds: []metav1.Condition{
				at(cond("FooDegraded", True, "Crashing", "pod foo crashes"), long),
				at(cond("BarDegraded", False, "AsExpected", "bar fine"), long),
			},
			opts: UnionOptions{Type: "Degraded"},
			want: cond("Degraded", True, "Foo_Crashing", "FooDegraded: pod foo crashes"),
		},
		{
			name: "two bad sources sorted by type",
			conds: []metav1.Condition{
				at(cond("FooDegraded", True, "Crashing", "pod foo crashes"), long),
				at(cond("BarDegraded", True, "Slow", ""), long),
			},
			opts: UnionOptions{Type: "Degraded"},
			want: cond("Degraded", True, "Bar_Slow::Foo_Crashing", "BarDegraded: Slow\nFooDegraded: pod foo crashes"),
		},
		{
			name: "the union's own type and other types are ignored",
			conds: []metav1.Condition{
				at(cond("Degraded", True, "Old", "stale union"), long),
				at(cond("FooAvailable", False, "Down", ""), long),
				at(cond("FooDegraded", False, "AsExpected", ""), long),
			},
			opts: UnionOptions{Type: "Degraded"},
			want: cond("Degraded", False, ReasonAsExpected, ""),
		},
		{
			name: "unknown counts when nothing is bad",
			conds: []metav1.Condition{
				at(cond("FooDegraded", Unknown, "NoData", "cannot read foo"), long),
				at(cond("BarDegraded", False, "AsExpected", ""), long),
			},
			opts: UnionOptions{Type: "Degraded"},
			want: cond("Degraded", Unknown, "Foo_NoData", "FooDegraded: cannot read foo"),
		},
		{
			name: "bad beats unknown",
			conds: []metav1.Condition{
				at(cond("FooDegraded", Unknown, "NoData", ""), long),
				at(cond("BarDegraded", True, "Broken", "bar broken"), long),
			},
			opts: UnionOptions{Type: "Degraded"},
			want: cond("Degraded", True, "Bar_Broken", "BarDegraded: bar broken"),
		},
		{
			name: "positive union defaults to true",
			conds: []metav1.Condition{
				at(cond("FooAvailable", False, "Down", "foo is down"), long),
				at(cond("BarAvailable", True, "Up", ""), long),
			},
			opts: UnionOptions{Type: "Available"},
			want: cond("Available", False, "Foo_Down", "FooAvailable: foo is down"),
		},
		{
			name:  "explicit default",
			conds: []metav1.Condition{at(cond("FooUpgradeable", False, "Pinned", "foo pinned"), long)},
			opts:  UnionOptions{Type: "Upgradeable", Default: True},
			want:  cond("Upgradeable", False, "Foo_Pinned", "FooUpgradeable: foo pinned"),
		},
		{
			name:  "bad source without reason shows its prefix",
			conds: []metav1.Condition{at(cond("FooDegraded", True, "", ""), long)},
			opts:  UnionOptions{Type: "Degraded"},
			want:  cond("Degraded", True, "Foo", ""),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Union(tt.conds, tt.opts, now)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			require.NoError(t, Validate(got))
		})
	}
}

// TestUnionInertia follows one sub-condition that turns bad at t0 through a
// fixed timeline: with a five-minute grace period it counts only from t0+5m.
func TestUnionInertia(t *testing.T) {
	inertia := InertiaByType(5*time.Minute, map[string]time.Duration{"FlakyDegraded": 10 * time.Minute})
	steady := at(cond("FooDegraded", True, "Crashing", "foo crashes"), t0)
	flaky := at(cond("FlakyDegraded", True, "Blip", "flaky blips"), t0)
	tests := []struct {
		name       string
		conds      []metav1.Condition
		now        time.Time
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "just turned bad", conds: []metav1.Condition{steady}, now: t0, wantStatus: False, wantReason: ReasonAsExpected},
		{name: "bad for 4m59s", conds: []metav1.Condition{steady}, now: t0.Add(5*time.Minute - time.Second), wantStatus: False, wantReason: ReasonAsExpected},
		{name: "bad for exactly the grace period", conds: []metav1.Condition{steady}, now: t0.Add(5 * time.Minute), wantStatus: True, wantReason: "Foo_Crashing"},
		{name: "per-type grace period holds longer", conds: []metav1.Condition{flaky, steady}, now: t0.Add(6 * time.Minute), wantStatus: True, wantReason: "Foo_Crashing"},
		{name: "per-type grace period ends", conds: []metav1.Condition{flaky, steady}, now: t0.Add(10 * time.Minute), wantStatus: True, wantReason: "Flaky_Blip::Foo_Crashing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Union(tt.conds, UnionOptions{Type: "Degraded", Inertia: inertia}, tt.now)
			require.NoError(t, err)
			assert.Equal(t, tt.wantStatus, got.Status)
			assert.Equal(t, tt.wantReason, got.Reason)
		})
	}
}

func TestUnionBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts UnionOptions
	}{
		{name: "empty type", opts: UnionOptions{}},
		{name: "unknown default", opts: UnionOptions{Type: "Degraded", Default: Unknown}},
		{name: "nonsense default", opts: UnionOptions{Type: "Degraded", Default: "Maybe"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Union(nil, tt.opts, t0)
			require.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
}

func TestUnionStaysWithinTheAPILimits(t *testing.T) {
	longMsg := strings.Repeat("installer failed: exit status 1; ", 60)
	tests := []struct {
		name  string
		count int
		msg   string
		typ   func(i int) string
	}{
		{name: "1,500 bad sources with short messages", count: 1500, msg: "unreachable", typ: func(i int) string { return fmt.Sprintf("Node%04dDegraded", i) }},
		{name: "50 bad sources with long messages", count: 50, msg: longMsg, typ: func(i int) string { return fmt.Sprintf("Node%02dDegraded", i) }},
		{name: "one bad source with a message at the API limit", count: 1, msg: strings.Repeat("m", MaxMessageLength), typ: func(int) string { return "NodeDegraded" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subs := make([]metav1.Condition, tt.count)
			for i := range subs {
				subs[i] = cond(tt.typ(i), True, "InstallerPodFailed", tt.msg)
			}
			got, err := Union(subs, UnionOptions{Type: "Degraded"}, t0)
			require.NoError(t, err)
			assert.Equal(t, True, got.Status)
			assert.LessOrEqual(t, len(got.Message), MaxMessageLength)
			assert.LessOrEqual(t, len(got.Reason), MaxReasonLength)
			var conds []metav1.Condition
			_, err = Set(&conds, got, t0)
			require.NoError(t, err, "the union must be a condition Set accepts")
			if tt.count > 1 {
				assert.Contains(t, got.Message, " more")
				assert.Contains(t, got.Reason, "More")
			}
		})
	}
}

func TestUnionReasonIsValidForQualifiedAndMalformedSources(t *testing.T) {
	subs := []metav1.Condition{
		cond("example.com/FooDegraded", True, "Crashing", ""),
		cond("BarDegraded", True, "not camel case", ""),
		cond("9Degraded", True, "", ""),
	}
	got, err := Union(subs, UnionOptions{Type: "Degraded"}, t0)
	require.NoError(t, err)
	assert.Equal(t, "Unnamed::Bar_NotCamelCase::ExampleComFoo_Crashing", got.Reason)
	require.NoError(t, Validate(got))
}
