package payload_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/payload"
)

func at(d time.Duration) *metav1.Time {
	t := metav1.NewTime(t0.Add(d))
	return &t
}

func dueAt(d time.Duration) *converge.MicroTime {
	t := converge.NewMicroTime(t0.Add(d))
	return &t
}

// TestDecide is the worker's loop as a table: what to apply next, in which state, after
// which delay, with which events.
func TestDecide(t *testing.T) {
	reconciling := payload.Status{Release: v1, State: payload.StateReconciling, Done: 6, Total: 6, Completed: 2,
		NextApplyTime: dueAt(3 * time.Minute), History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: "1.0.0", Image: v1.Image}}}
	updating := payload.Status{Release: v2, State: payload.StateUpdating, Done: 3, Total: 6,
		History: []payload.UpdateHistory{{State: payload.UpdatePartial, Version: "2.0.0"}, {State: payload.UpdateCompleted, Version: "1.0.0"}}}
	boom := errors.New("boom")
	forced := v2
	forced.Force = true
	byDigest := payload.Release{Version: "1.0.0", Image: "quay.example/payload@sha256:1111"}
	mirror := payload.Release{Image: "mirror.example/payload@sha256:1111"}
	reconcilingByDigest := *reconciling.DeepCopy()
	reconcilingByDigest.Release = byDigest
	tests := []struct {
		name         string
		in           payload.Input
		wantApply    bool
		wantChecks   bool
		wantRequeue  time.Duration
		wantState    payload.State
		wantEvents   []string
		wantFailures int32
		check        func(t *testing.T, s payload.Status)
	}{
		{
			name: "nothing desired: wait for Update",
			in:   payload.Input{},
		},
		{
			name:      "the first release initializes at once",
			in:        payload.Input{Desired: v1, Generation: 1},
			wantApply: true, wantState: payload.StateInitializing, wantEvents: []string{"InitializingStarted"},
			check: func(t *testing.T, s payload.Status) {
				assert.Equal(t, int64(1), s.ObservedGeneration)
				assert.Equal(t, []payload.UpdateHistory{{State: payload.UpdatePartial, StartedTime: *at(0), Version: "1.0.0", Image: v1.Image}}, s.History)
			},
		},
		{
			name:        "reconciling waits for its interval",
			in:          payload.Input{Desired: v1, Status: reconciling},
			wantRequeue: 3 * time.Minute, wantState: payload.StateReconciling,
		},
		{
			name:      "reconciling is due",
			in:        payload.Input{Desired: v1, Status: reconciling, Now: t0.Add(3 * time.Minute)},
			wantApply: true, wantState: payload.StateReconciling,
		},
		{
			name:        "the same digest through a mirror starts no update",
			in:          payload.Input{Desired: mirror, Status: reconcilingByDigest},
			wantRequeue: 3 * time.Minute, wantState: payload.StateReconciling,
			check: func(t *testing.T, s payload.Status) {
				assert.Len(t, s.History, 1)
				assert.Equal(t, payload.Release{Version: "1.0.0", Image: mirror.Image}, s.Release, "pulled from the mirror from now on")
			},
		},
		{
			name:      "a new release after a completed one is an update, checked by the preconditions",
			in:        payload.Input{Desired: v2, Status: reconciling},
			wantApply: true, wantChecks: true, wantState: payload.StateUpdating, wantEvents: []string{"UpdateStarted"},
			check: func(t *testing.T, s payload.Status) {
				assert.Equal(t, int32(0), s.Done, "a new release starts at zero")
				assert.Len(t, s.History, 2)
			},
		},
		{
			name:      "a forced update skips the preconditions",
			in:        payload.Input{Desired: forced, Status: reconciling},
			wantApply: true, wantState: payload.StateUpdating, wantEvents: []string{"UpdateStarted"},
		},
		{
			name:      "an update under way is not checked again",
			in:        payload.Input{Desired: v2, Status: updating},
			wantApply: true, wantState: payload.StateUpdating,
		},
		{
			name:      "a new release while initializing still initializes",
			in:        payload.Input{Desired: v2, Status: payload.Status{Release: v1, State: payload.StateInitializing}},
			wantApply: true, wantState: payload.StateInitializing, wantEvents: []string{"InitializingStarted"},
		},
		{
			name: "a failed apply backs off and says why",
			in: payload.Input{Desired: v2, Status: updating, Jitter: 0.5,
				Observation: payload.Observation{Release: v2, State: payload.StateUpdating, Done: 1, Total: 6, Err: boom}},
			wantRequeue: 24750 * time.Millisecond, wantState: payload.StateUpdating, // 22.5s plus half of 20%
			wantEvents: []string{"UpdatePayloadFailed"}, wantFailures: 1,
			check: func(t *testing.T, s payload.Status) {
				assert.Equal(t, int32(3), s.Done, "progress does not go backwards")
				assert.Equal(t, "boom", s.Failure.Message)
			},
		},
		{
			name: "an interrupted apply is no failure and resumes at once",
			in: payload.Input{Desired: v2, Status: updating,
				Observation: payload.Observation{Release: v2, State: payload.StateUpdating, Done: 4, Total: 6, Interrupted: true}},
			wantApply: true, wantState: payload.StateUpdating,
			check: func(t *testing.T, s payload.Status) {
				assert.True(t, s.Interrupted)
				assert.Nil(t, s.Failure)
				assert.Equal(t, int32(4), s.Done)
			},
		},
		{
			name: "a completed update reconciles after the interval",
			in: payload.Input{Desired: v2, Status: updating,
				Observation: payload.Observation{Release: v2, State: payload.StateUpdating, Done: 6, Total: 6}},
			wantRequeue: 3 * time.Minute, wantState: payload.StateReconciling, wantEvents: []string{"PayloadApplied"},
			check: func(t *testing.T, s payload.Status) {
				assert.Equal(t, payload.UpdateCompleted, s.History[0].State)
				assert.Equal(t, int32(1), s.Completed)
			},
		},
		{
			name: "removed objects are reported",
			in: payload.Input{Desired: v2, Status: updating,
				Observation: payload.Observation{Release: v2, State: payload.StateUpdating, Done: 6, Total: 6, Removed: []string{`configmap "a/old"`}}},
			wantRequeue: 3 * time.Minute, wantState: payload.StateReconciling, wantEvents: []string{"ManifestsDeleted", "PayloadApplied"},
		},
		{
			name: "a reported error completes the apply",
			in: payload.Input{Desired: v1, Status: reconciling, Now: t0.Add(3 * time.Minute),
				Observation: payload.Observation{Release: v1, State: payload.StateReconciling, Done: 6, Total: 6,
					Err: &payload.UpdateError{Message: "slow", Effect: payload.EffectReport}}},
			wantRequeue: 3 * time.Minute, wantState: payload.StateReconciling,
			check: func(t *testing.T, s payload.Status) {
				assert.Equal(t, payload.EffectReport, s.Failure.Effect)
				assert.Equal(t, int32(3), s.Completed)
			},
		},
		{
			name: "a payload that shrank keeps done within its total (found by FuzzDecide)",
			in: payload.Input{Desired: v2, Status: updating,
				Observation: payload.Observation{Release: v2, State: payload.StateUpdating, Done: 1, Total: 2, Err: boom}},
			wantRequeue: 22500 * time.Millisecond, wantState: payload.StateUpdating, wantEvents: []string{"UpdatePayloadFailed"}, wantFailures: 1,
			check: func(t *testing.T, s payload.Status) {
				assert.Equal(t, int32(2), s.Total)
				assert.Equal(t, int32(2), s.Done)
			},
		},
		{
			name: "the outcome of a release left behind is ignored",
			in: payload.Input{Desired: v2, Status: reconciling,
				Observation: payload.Observation{Release: v2, State: payload.StateUpdating, Err: boom}},
			wantApply: true, wantChecks: true, wantState: payload.StateUpdating, wantEvents: []string{"UpdateStarted"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.Now.IsZero() {
				tt.in.Now = t0
			}
			before := *tt.in.Status.DeepCopy()
			d, err := payload.Decide(tt.in)
			require.NoError(t, err)
			assert.Equal(t, before, tt.in.Status, "Decide changes nothing it is given")
			assert.Equal(t, tt.wantApply, d.Apply, "apply")
			assert.Equal(t, tt.wantChecks, d.CheckPreconditions, "preconditions")
			assert.Equal(t, tt.wantRequeue, d.Result.RequeueAfter, "requeue")
			assert.Equal(t, tt.wantState, d.Status.State, "state")
			assert.Equal(t, tt.wantEvents, reasons(d.Result.Events), "events")
			assert.Equal(t, tt.wantFailures, d.Status.Failures, "failures")
			if tt.check != nil {
				tt.check(t, d.Status)
			}
			again, err := payload.Decide(tt.in)
			require.NoError(t, err)
			assert.Equal(t, d, again, "Decide is deterministic")
		})
	}
}

// TestDecideRejectsBadInput: a policy, status or observation no worker makes, and a
// zero Now, are an error matching ErrInvalid that names every problem, and no decision.
func TestDecideRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		in   payload.Input
		want string
	}{
		{"a bad policy", payload.Input{Desired: v1, Policy: payload.Policy{Workers: -1}}, "payload: invalid input: policy: workers -1 is negative"},
		{"an unknown state", payload.Input{Desired: v1, Status: payload.Status{Release: v1, State: "Paused"}}, `payload: invalid input: status: state "Paused" is unknown`},
		{"more done than there is", payload.Input{Desired: v1, Status: payload.Status{Release: v1, State: payload.StateUpdating, Done: 7, Total: 6}},
			"payload: invalid input: status: done 7 is above total 6"},
		{"negative counts", payload.Input{Desired: v1, Status: payload.Status{Release: v1, State: payload.StateUpdating, Failures: -1, Completed: -2}},
			"payload: invalid input: status: completed -2 is negative; status: failures -1 is negative"},
		{"a negative observation", payload.Input{Desired: v1, Observation: payload.Observation{Release: v1, Done: -1}},
			"payload: invalid input: observation: done -1 or total 0 is negative"},
		{"an observation in an unknown state", payload.Input{Desired: v1, Observation: payload.Observation{Release: v1, State: "Paused"}},
			`payload: invalid input: observation: state "Paused" is unknown`},
		{"a zero Now", payload.Input{Desired: v1, Now: time.Time{}}, "payload: invalid input: Now is zero"},
		{"every problem at once", payload.Input{Desired: v1, Policy: payload.Policy{Workers: -1}, Status: payload.Status{Release: v1, State: "Paused"}, Now: time.Time{}},
			`payload: invalid input: policy: workers -1 is negative; status: state "Paused" is unknown; Now is zero`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.want, "Now is zero") {
				tt.in.Now = t0
			}
			d, err := payload.Decide(tt.in)
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.EqualError(t, err, tt.want)
			assert.Equal(t, payload.Decision{}, d)
		})
	}
}

// TestDecideRetryTimeSurvivesARestart: a worker restarted while it waits for a retry
// waits for what is left of it, neither more nor less.
func TestDecideRetryTimeSurvivesARestart(t *testing.T) {
	failed, err := payload.Decide(payload.Input{Desired: v1, Now: t0, Status: payload.Status{Release: v1, State: payload.StateInitializing},
		Observation: payload.Observation{Release: v1, Err: errors.New("boom")}})
	require.NoError(t, err)
	assert.Equal(t, 22500*time.Millisecond, failed.Result.RequeueAfter, "Interval/8")
	restarted, err := payload.Decide(payload.Input{Desired: v1, Now: t0.Add(20 * time.Second), Status: failed.Status, Jitter: 0.9})
	require.NoError(t, err)
	assert.False(t, restarted.Apply)
	assert.Equal(t, 2500*time.Millisecond, restarted.Result.RequeueAfter)
}

// TestDecideWaitsTheWholeIntervalWhateverItsPrecision: an interval or backoff below a
// second, or off the second, is waited for in full: the due time is kept to the
// microsecond, rounded up, and nothing is applied before it.
func TestDecideWaitsTheWholeIntervalWhateverItsPrecision(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tests := []struct {
		name     string
		interval time.Duration
		now      time.Duration // after t0, a whole second
		err      error
		want     time.Duration
	}{
		{name: "100ms", interval: ms(100), now: ms(900), want: ms(100)},
		{name: "300ms late in a second", interval: ms(300), now: ms(800), want: ms(300)},
		{name: "300ms on a second", interval: ms(300), now: time.Second, want: ms(300)},
		{name: "1s off the second", interval: time.Second, now: ms(1), want: time.Second},
		{name: "1.5s", interval: ms(1500), now: 0, want: ms(1500)},
		{name: "a failure backs off Interval/8", interval: ms(800), now: ms(950), err: errors.New("boom"), want: ms(100)},
		{name: "a due time below the microsecond is rounded up", interval: 1500 * time.Nanosecond, now: 0, want: 2 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reconciling := payload.Status{Release: v1, State: payload.StateReconciling, Done: 1, Total: 1,
				History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: v1.Version}}}
			in := payload.Input{Desired: v1, Status: reconciling, Now: t0.Add(tt.now),
				Policy: payload.Policy{Interval: metav1.Duration{Duration: tt.interval},
					Backoff: converge.Backoff{JitterPercent: ptr.To[int32](0)}},
				Observation: payload.Observation{Release: v1, State: payload.StateReconciling, Done: 1, Total: 1, Err: tt.err}}
			d, err := payload.Decide(in)
			require.NoError(t, err)
			assert.False(t, d.Apply)
			assert.Equal(t, tt.want, d.Result.RequeueAfter)
			assert.Equal(t, dueAt(tt.now+tt.want), d.Status.NextApplyTime)
			for _, later := range []time.Duration{tt.want - time.Nanosecond, tt.want} {
				again, err := payload.Decide(payload.Input{Desired: v1, Status: d.Status, Policy: in.Policy, Now: in.Now.Add(later)})
				require.NoError(t, err)
				assert.Equal(t, later == tt.want, again.Apply, "applied %s after the decision", later)
			}
		})
	}
}

// FuzzDecide holds Decide's rules over random observations: nothing is applied before
// a release is desired, a wait is never negative, Done never goes backwards within a
// release (unless the payload shrinks below it) and never passes Total, retries are spaced, and every condition is one the
// API server accepts.
func FuzzDecide(f *testing.F) {
	f.Add(uint8(0), uint8(1), int32(3), int32(6), uint8(0), int32(2), int32(6), int64(90), uint8(0))
	f.Add(uint8(1), uint8(1), int32(6), int32(6), uint8(2), int32(6), int32(6), int64(500), uint8(3))
	f.Add(uint8(2), uint8(0), int32(0), int32(0), uint8(1), int32(0), int32(0), int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, desired, current uint8, done, total int32, outcome uint8, outDone, outTotal int32, seconds int64, state uint8) {
		releases := []payload.Release{{}, v1, v2}
		states := []payload.State{"", payload.StateInitializing, payload.StateUpdating, payload.StateReconciling}
		total = max(total, 0)
		done = min(max(done, 0), total)
		st := payload.Status{Release: releases[int(current)%3], State: states[int(state)%4], Done: done, Total: total,
			NextApplyTime: dueAt(time.Duration(seconds%3600) * time.Second)}
		if !st.Release.IsZero() {
			st.History = []payload.UpdateHistory{{State: payload.UpdatePartial, Version: st.Release.Version}}
		}
		obs := payload.Input{Desired: releases[int(desired)%3], Status: st, Now: t0.Add(time.Duration(seconds%7200) * time.Second)}
		if outcome%4 != 0 {
			obs.Observation = payload.Observation{Release: st.Release, Done: max(outDone, 0), Total: max(outTotal, 0),
				Interrupted: outcome%4 == 3}
			if outcome%4 == 2 {
				obs.Observation.Err = errors.New("boom")
			}
		}
		d, err := payload.Decide(obs)
		if err != nil {
			t.Fatalf("Decide: %v", err)
		}
		s := d.Status
		switch {
		case obs.Desired.IsZero() && d.Apply:
			t.Fatalf("applied with nothing desired")
		case d.Result.RequeueAfter < 0:
			t.Fatalf("negative wait %s", d.Result.RequeueAfter)
		case s.Release.Same(st.Release) && len(s.History) == len(st.History) && s.Done < st.Done && s.Total >= st.Done:
			t.Fatalf("progress went backwards: %d after %d", s.Done, st.Done)
		case s.Total > 0 && s.Done > s.Total:
			t.Fatalf("done %d of %d", s.Done, s.Total)
		case s.Failures > 0 && !d.Apply && s.NextApplyTime == nil:
			t.Fatalf("a failure without a retry time")
		}
		for _, c := range s.Conditions {
			if err := conditions.Validate(c); err != nil {
				t.Fatalf("invalid condition: %v", err)
			}
		}
	})
}
