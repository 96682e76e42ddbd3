package conditions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
)

// TestKStatusLifecycle walks an object through reconciling, stalled and
// ready, checking the three conditions kstatus reads after each step.
func TestKStatusLifecycle(t *testing.T) {
	type want struct {
		ready       metav1.ConditionStatus
		reconciling bool
		stalled     bool
		reason      string
	}
	steps := []struct {
		name        string
		set         func(*[]metav1.Condition, time.Time) (bool, error)
		wantChanged bool
		want        want
	}{
		{
			name: "reconciling",
			set: func(c *[]metav1.Condition, now time.Time) (bool, error) {
				return SetReconciling(c, "Installing", "installing v1", now, WithObservedGeneration(1))
			},
			wantChanged: true,
			want:        want{ready: Unknown, reconciling: true, reason: "Installing"},
		},
		{
			name: "reconciling again is no change",
			set: func(c *[]metav1.Condition, now time.Time) (bool, error) {
				return SetReconciling(c, "Installing", "installing v1", now, WithObservedGeneration(1))
			},
			want: want{ready: Unknown, reconciling: true, reason: "Installing"},
		},
		{
			name: "stalled replaces reconciling",
			set: func(c *[]metav1.Condition, now time.Time) (bool, error) {
				return SetStalled(c, "RetriesExhausted", "gave up", now)
			},
			wantChanged: true,
			want:        want{ready: False, stalled: true, reason: "RetriesExhausted"},
		},
		{
			name:        "ready clears both",
			set:         func(c *[]metav1.Condition, now time.Time) (bool, error) { return SetReady(c, "", "all good", now) },
			wantChanged: true,
			want:        want{ready: True, reason: ReasonAsExpected},
		},
		{
			name: "reconciling after ready",
			set: func(c *[]metav1.Condition, now time.Time) (bool, error) {
				return SetReconciling(c, "Upgrading", "to v2", now)
			},
			wantChanged: true,
			want:        want{ready: Unknown, reconciling: true, reason: "Upgrading"},
		},
	}
	var conds []metav1.Condition
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			changed, err := s.set(&conds, t0.Add(time.Duration(i)*time.Minute))
			require.NoError(t, err)
			assert.Equal(t, s.wantChanged, changed)
			ready, ok := Get(conds, TypeReady)
			require.True(t, ok)
			assert.Equal(t, s.want.ready, ready.Status)
			assert.Equal(t, s.want.reason, ready.Reason)
			assert.Equal(t, s.want.reconciling, IsTrue(conds, TypeReconciling))
			_, hasReconciling := Get(conds, TypeReconciling)
			assert.Equal(t, s.want.reconciling, hasReconciling, "Reconciling is removed, not False, when not abnormal")
			_, hasStalled := Get(conds, TypeStalled)
			assert.Equal(t, s.want.stalled, hasStalled)
		})
	}
}

func TestKStatusBadInput(t *testing.T) {
	tests := []struct {
		name string
		set  func(*[]metav1.Condition) (bool, error)
	}{
		{name: "reconciling without reason", set: func(c *[]metav1.Condition) (bool, error) { return SetReconciling(c, "", "x", t0) }},
		{name: "stalled without reason", set: func(c *[]metav1.Condition) (bool, error) { return SetStalled(c, "", "x", t0) }},
		{name: "stalled with bad reason", set: func(c *[]metav1.Condition) (bool, error) { return SetStalled(c, "no spaces allowed", "x", t0) }},
		{name: "ready with bad reason", set: func(c *[]metav1.Condition) (bool, error) { return SetReady(c, "bad reason", "x", t0) }},
		{name: "reconciling with negative generation", set: func(c *[]metav1.Condition) (bool, error) {
			return SetReconciling(c, "Go", "x", t0, WithObservedGeneration(-1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := []metav1.Condition{at(cond(TypeReady, True, "Done", ""), t0), at(cond(TypeStalled, True, "Stuck", ""), t0)}
			before := append([]metav1.Condition(nil), conds...)
			changed, err := tt.set(&conds)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.False(t, changed)
			assert.Equal(t, before, conds)
		})
	}
	_, err := SetStalled(nil, "Stuck", "", t0)
	require.ErrorIs(t, err, converge.ErrInvalid)
}
