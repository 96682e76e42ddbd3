package payload_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/payload"
)

// window is a window of kind from schedule for d, read in zone.
func window(kind converge.WindowKind, schedule string, d time.Duration, zone string) converge.Window {
	return converge.Window{Kind: kind, Schedule: schedule, Duration: metav1.Duration{Duration: d}, TimeZone: zone}
}

// berlin holds Europe/Berlin, where the clocks spring forward on 2026-03-29 at
// 02:00 (01:00 UTC).
func berlin(t *testing.T) converge.Zones {
	t.Helper()
	zones, err := converge.Zones(nil).Load([]converge.Window{{TimeZone: "Europe/Berlin"}})
	require.NoError(t, err)
	return zones
}

// TestDecideHolds is the pause and the maintenance windows as a table: they keep a
// desired release that is not Status.Release from starting, hold, and say so in
// Progressing; the current release goes on.
func TestDecideHolds(t *testing.T) {
	reconciling := payload.Status{Release: v1, State: payload.StateReconciling, Done: 6, Total: 6, Completed: 2,
		NextApplyTime: dueAt(3 * time.Minute), History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: "1.0.0", Image: v1.Image}}}
	updating := payload.Status{Release: v2, State: payload.StateUpdating, Done: 3, Total: 6,
		History: []payload.UpdateHistory{{State: payload.UpdatePartial, Version: "2.0.0"}, {State: payload.UpdateCompleted, Version: "1.0.0"}}}
	reconcilingDaily := *reconciling.DeepCopy()
	reconcilingDaily.NextApplyTime = dueAt(24 * time.Hour)
	daily := metav1.Duration{Duration: 24 * time.Hour}
	v3 := payload.Release{Version: "3.0.0", Image: "example.com/payload:3"}
	nightly := []converge.Window{window(converge.WindowAllow, "0 22 * * *", 2*time.Hour, "")} // t0 is 03:04 UTC
	paused := converge.Hold{Reason: converge.HoldPaused, Message: "paused: no update to 2.0.0 starts"}
	closedTill := func(d time.Duration) converge.Hold { return converge.WindowClosedHold(t0.Add(d)) }
	tests := []struct {
		name        string
		in          payload.Input
		wantApply   bool
		wantRequeue time.Duration
		wantRelease payload.Release
		wantState   payload.State
		wantHolds   []converge.Hold
		wantReason  string // Progressing's
	}{
		{
			name:        "paused: a new release does not start, the current one's reconcile waits for its interval",
			in:          payload.Input{Desired: v2, Status: reconciling, Policy: payload.Policy{Paused: true}},
			wantRequeue: 3 * time.Minute, wantRelease: v1, wantState: payload.StateReconciling,
			wantHolds: []converge.Hold{paused}, wantReason: converge.HoldPaused,
		},
		{
			name:      "paused: the reconcile pass that restores the current release still runs",
			in:        payload.Input{Desired: v2, Status: reconciling, Policy: payload.Policy{Paused: true}, Now: t0.Add(3 * time.Minute)},
			wantApply: true, wantRelease: v1, wantState: payload.StateReconciling,
			wantHolds: []converge.Hold{paused}, wantReason: converge.HoldPaused,
		},
		{
			name:        "paused with nothing new to start holds nothing",
			in:          payload.Input{Desired: v1, Status: reconciling, Policy: payload.Policy{Paused: true}},
			wantRequeue: 3 * time.Minute, wantRelease: v1, wantState: payload.StateReconciling, wantReason: conditions.ReasonAsExpected,
		},
		{
			name:      "paused: the first release does not start either, and nothing wakes the worker but a change",
			in:        payload.Input{Desired: v2, Policy: payload.Policy{Paused: true}},
			wantHolds: []converge.Hold{paused}, wantReason: converge.HoldPaused,
		},
		{
			name:      "paused: an update already started goes on to its end",
			in:        payload.Input{Desired: v2, Status: updating, Policy: payload.Policy{Paused: true}},
			wantApply: true, wantRelease: v2, wantState: payload.StateUpdating, wantReason: string(payload.StateUpdating),
		},
		{
			name:      "paused: an update already started goes on when yet another release is desired",
			in:        payload.Input{Desired: v3, Status: updating, Policy: payload.Policy{Paused: true}},
			wantApply: true, wantRelease: v2, wantState: payload.StateUpdating,
			wantHolds: []converge.Hold{{Reason: converge.HoldPaused, Message: "paused: no update to 3.0.0 starts"}}, wantReason: converge.HoldPaused,
		},
		{
			name:        "closed: the worker holds until the window opens and wakes then, before its reconcile",
			in:          payload.Input{Desired: v2, Status: reconcilingDaily, Policy: payload.Policy{Windows: nightly, Interval: daily}},
			wantRequeue: 18*time.Hour + 55*time.Minute + 55*time.Second, wantRelease: v1, wantState: payload.StateReconciling,
			wantHolds: []converge.Hold{closedTill(18*time.Hour + 55*time.Minute + 55*time.Second)}, wantReason: converge.HoldWindowClosed,
		},
		{
			name:        "closed: the reconcile that comes first wakes the worker first",
			in:          payload.Input{Desired: v2, Status: reconciling, Policy: payload.Policy{Windows: nightly}},
			wantRequeue: 3 * time.Minute, wantRelease: v1, wantState: payload.StateReconciling,
			wantHolds: []converge.Hold{closedTill(18*time.Hour + 55*time.Minute + 55*time.Second)}, wantReason: converge.HoldWindowClosed,
		},
		{
			name:      "open: the update starts inside the window",
			in:        payload.Input{Desired: v2, Status: reconciling, Policy: payload.Policy{Windows: nightly}, Now: t0.Add(18*time.Hour + 55*time.Minute + 55*time.Second)},
			wantApply: true, wantRelease: v2, wantState: payload.StateUpdating, wantReason: string(payload.StateUpdating),
		},
		{
			name: "a Deny window wins over an Allow window; the due reconcile runs",
			in: payload.Input{Desired: v2, Status: reconciling, Now: t0.Add(19 * time.Hour), Policy: payload.Policy{Windows: append(
				[]converge.Window{window(converge.WindowDeny, "0 22 * * *", time.Hour, "")}, nightly...)}},
			wantApply: true, wantRelease: v1, wantState: payload.StateReconciling,
			wantHolds: []converge.Hold{closedTill(19*time.Hour + 55*time.Minute + 55*time.Second)}, wantReason: converge.HoldWindowClosed,
		},
		{
			name:        "paused and closed: both hold, the pause names Progressing's reason",
			in:          payload.Input{Desired: v2, Status: reconcilingDaily, Policy: payload.Policy{Paused: true, Windows: nightly, Interval: daily}},
			wantRequeue: 18*time.Hour + 55*time.Minute + 55*time.Second, wantRelease: v1, wantState: payload.StateReconciling,
			wantHolds: []converge.Hold{paused, closedTill(18*time.Hour + 55*time.Minute + 55*time.Second)}, wantReason: converge.HoldPaused,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.in.Now.IsZero() {
				tt.in.Now = t0
			}
			d, err := payload.Decide(tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.wantApply, d.Apply, "apply")
			assert.Equal(t, tt.wantRequeue, d.RequeueAfter, "requeue")
			assert.Equal(t, tt.wantRelease, d.Status.Release, "release")
			assert.Equal(t, tt.wantState, d.Status.State, "state")
			assert.Equal(t, tt.wantHolds, d.Status.Holds, "holds")
			progressing, ok := conditions.Get(d.Status.Conditions, conditions.TypeProgressing)
			require.True(t, ok)
			assert.Equal(t, tt.wantReason, progressing.Reason, "Progressing's reason")
			if len(tt.wantHolds) == 0 {
				return
			}
			assert.Contains(t, progressing.Message, tt.wantHolds[0].Message)
			assert.Empty(t, d.Events, "a hold emits no event")
			// Held, the worker says of Available and Failing what it says of the
			// release it goes on with.
			unheld := tt.in
			unheld.Desired, unheld.Policy.Paused, unheld.Policy.Windows = tt.in.Status.Release, false, nil
			if !unheld.Desired.IsZero() {
				want, err := payload.Decide(unheld)
				require.NoError(t, err)
				for _, c := range []string{conditions.TypeAvailable, conditions.TypeFailing} {
					w, _ := conditions.Get(want.Status.Conditions, c)
					got, _ := conditions.Get(d.Status.Conditions, c)
					assert.Equal(t, w, got, "a hold leaves %s as it is", c)
				}
			}
		})
	}
}

// TestDecideWakesAtTheOpeningAcrossDST: a window read on Berlin's wall clock opens
// at 02:30 local time, which is 01:30 UTC before the clocks spring forward, 01:00
// UTC on the day they do (02:30 is skipped: the window starts at the jump, 03:00),
// and 00:30 UTC after; the hold names the opening and the worker wakes then.
func TestDecideWakesAtTheOpeningAcrossDST(t *testing.T) {
	zones := berlin(t)
	policy := payload.Policy{Windows: []converge.Window{window(converge.WindowAllow, "30 2 * * *", time.Hour, "Europe/Berlin")}}
	for _, tt := range []struct {
		day   int
		opens time.Time
	}{
		{28, time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC)},
		{29, time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)},
		{30, time.Date(2026, 3, 30, 0, 30, 0, 0, time.UTC)},
	} {
		now := time.Date(2026, 3, tt.day, 0, 0, 0, 0, time.UTC)
		d, err := payload.Decide(payload.Input{Desired: v1, Policy: policy, Zones: zones, Now: now})
		require.NoError(t, err)
		assert.False(t, d.Apply, "March %d: closed at midnight UTC", tt.day)
		assert.Equal(t, tt.opens.Sub(now), d.RequeueAfter, "March %d: wakes at the opening", tt.day)
		assert.Equal(t, []converge.Hold{converge.WindowClosedHold(tt.opens)}, d.Status.Holds)

		d, err = payload.Decide(payload.Input{Desired: v1, Policy: policy, Zones: zones, Now: tt.opens})
		require.NoError(t, err)
		assert.True(t, d.Apply, "March %d: the first release starts at the opening", tt.day)
		assert.Empty(t, d.Status.Holds)
	}
}

// TestDecideRejectsBadWindows: a window ValidateWindows refuses, and a window whose
// zone is not in Input.Zones, are invalid input, not a closed window.
func TestDecideRejectsBadWindows(t *testing.T) {
	for _, tt := range []struct {
		name   string
		window converge.Window
		want   string
	}{
		{"a window that never starts", window(converge.WindowAllow, "0 0 30 2 *", time.Hour, ""),
			`payload: invalid input: policy: windows: window 0: schedule "0 0 30 2 *": `},
		{"a zone that was not loaded", window(converge.WindowAllow, "0 22 * * *", time.Hour, "Europe/Berlin"),
			`payload: invalid input: policy: windows: window 0: timeZone "Europe/Berlin" is not in the Zones`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := payload.Decide(payload.Input{Desired: v1, Policy: payload.Policy{Windows: []converge.Window{tt.window}}, Now: t0})
			require.ErrorIs(t, err, converge.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
			assert.Equal(t, payload.Decision{}, d)
		})
	}
}
