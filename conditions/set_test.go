package conditions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
)

// TestSetTimeline drives one list through a sequence of sets, checking after
// each step what changed and which transition times the list holds.
func TestSetTimeline(t *testing.T) {
	type step struct {
		name        string
		now         time.Time
		cond        metav1.Condition
		opts        []Option
		wantChanged bool
		wantLTT     time.Time // of cond.Type after the step
		wantGen     int64
		wantReason  string
	}
	steps := []step{
		{name: "new condition takes now truncated to seconds", now: t0.Add(1500 * time.Millisecond), cond: cond("Ready", False, "Starting", "not yet"), wantChanged: true, wantLTT: t0.Add(time.Second), wantReason: "Starting"},
		{name: "same everything changes nothing", now: t0.Add(10 * time.Second), cond: cond("Ready", False, "Starting", "not yet"), wantLTT: t0.Add(time.Second), wantReason: "Starting"},
		{name: "new message keeps the transition time", now: t0.Add(20 * time.Second), cond: cond("Ready", False, "Starting", "almost"), wantChanged: true, wantLTT: t0.Add(time.Second), wantReason: "Starting"},
		{name: "new reason keeps the transition time", now: t0.Add(30 * time.Second), cond: cond("Ready", False, "Waiting", "almost"), wantChanged: true, wantLTT: t0.Add(time.Second), wantReason: "Waiting"},
		{name: "status change moves the transition time", now: t0.Add(40 * time.Second), cond: cond("Ready", True, "Done", ""), wantChanged: true, wantLTT: t0.Add(40 * time.Second), wantReason: "Done"},
		{name: "generation stamp is a change", now: t0.Add(50 * time.Second), cond: cond("Ready", True, "Done", ""), opts: []Option{WithObservedGeneration(3)}, wantChanged: true, wantLTT: t0.Add(40 * time.Second), wantGen: 3, wantReason: "Done"},
		{name: "option overrides the condition's generation", now: t0.Add(55 * time.Second), cond: metav1.Condition{Type: "Ready", Status: True, Reason: "Done", ObservedGeneration: 9}, opts: []Option{WithObservedGeneration(3)}, wantLTT: t0.Add(40 * time.Second), wantGen: 3, wantReason: "Done"},
		{name: "caller's transition time is ignored", now: t0.Add(60 * time.Second), cond: at(cond("Ready", False, "Broken", "x"), t0.Add(-time.Hour)), wantChanged: true, wantLTT: t0.Add(60 * time.Second), wantReason: "Broken"},
		{name: "empty reason on true defaults", now: t0.Add(70 * time.Second), cond: cond("Ready", True, "", ""), wantChanged: true, wantLTT: t0.Add(70 * time.Second), wantReason: ReasonAsExpected},
		{name: "second type is added and sorted", now: t0.Add(80 * time.Second), cond: cond("Available", True, "Up", ""), wantChanged: true, wantLTT: t0.Add(80 * time.Second), wantReason: "Up"},
	}
	var conds []metav1.Condition
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			changed, err := Set(&conds, s.cond, s.now, s.opts...)
			require.NoError(t, err)
			assert.Equal(t, s.wantChanged, changed)
			got, ok := Get(conds, s.cond.Type)
			require.True(t, ok)
			assert.True(t, got.LastTransitionTime.Time.Equal(s.wantLTT), "LastTransitionTime %v, want %v", got.LastTransitionTime, s.wantLTT)
			assert.Equal(t, s.wantGen, got.ObservedGeneration)
			assert.Equal(t, s.wantReason, got.Reason)
		})
	}
	assert.Equal(t, []string{"Available", "Ready"}, types(conds))
}

func TestSetBadInputLeavesListUntouched(t *testing.T) {
	tests := []struct {
		name string
		cond metav1.Condition
		opts []Option
	}{
		{name: "empty type", cond: cond("", True, "R", "")},
		{name: "bad status", cond: cond("Ready", "Yes", "R", "")},
		{name: "false without reason", cond: cond("Ready", False, "", "")},
		{name: "negative generation", cond: cond("Ready", True, "R", ""), opts: []Option{WithObservedGeneration(-2)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := []metav1.Condition{at(cond("Ready", True, "Done", "ok"), t0)}
			before := append([]metav1.Condition(nil), conds...)
			changed, err := Set(&conds, tt.cond, t0.Add(time.Minute), tt.opts...)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.False(t, changed)
			assert.Equal(t, before, conds)
		})
	}
	t.Run("nil list", func(t *testing.T) {
		_, err := Set(nil, cond("Ready", True, "R", ""), t0)
		require.ErrorIs(t, err, converge.ErrInvalid)
	})
}

func TestSetWithClock(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(t0.Add(2*time.Second + 700*time.Millisecond))
	var conds []metav1.Condition
	changed, err := SetWithClock(&conds, cond("Ready", True, "Done", ""), clk)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.True(t, conds[0].LastTransitionTime.Time.Equal(t0.Add(2*time.Second)))
}

func TestRemove(t *testing.T) {
	tests := []struct {
		name        string
		in          []string
		remove      string
		wantRemoved bool
		want        []string
	}{
		{name: "present", in: []string{"Available", "Ready", "X"}, remove: "Ready", wantRemoved: true, want: []string{"Available", "X"}},
		{name: "absent", in: []string{"Available"}, remove: "Ready", want: []string{"Available"}},
		{name: "duplicates all go", in: []string{"X", "Y", "X"}, remove: "X", wantRemoved: true, want: []string{"Y"}},
		{name: "empty list", in: nil, remove: "Ready", want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conds []metav1.Condition
			for _, typ := range tt.in {
				conds = append(conds, cond(typ, True, "R", ""))
			}
			assert.Equal(t, tt.wantRemoved, Remove(&conds, tt.remove))
			assert.Equal(t, tt.want, types(conds))
		})
	}
	assert.False(t, Remove(nil, "Ready"))
}

func TestStatusHelpers(t *testing.T) {
	conds := []metav1.Condition{cond("A", True, "R", ""), cond("B", False, "R", ""), cond("C", Unknown, "R", "")}
	tests := []struct {
		typ                        string
		wantTrue, wantFalse, wantU bool
	}{
		{typ: "A", wantTrue: true},
		{typ: "B", wantFalse: true},
		{typ: "C", wantU: true},
		{typ: "Missing", wantU: true},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			assert.Equal(t, tt.wantTrue, IsTrue(conds, tt.typ))
			assert.Equal(t, tt.wantFalse, IsFalse(conds, tt.typ))
			assert.Equal(t, tt.wantU, IsUnknown(conds, tt.typ))
		})
	}
	_, ok := Get(conds, "Missing")
	assert.False(t, ok)
}
