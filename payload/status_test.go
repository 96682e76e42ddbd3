package payload

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
)

func TestStatusDeepCopyAndJSON(t *testing.T) {
	at := metav1.NewTime(t0)
	s := &Status{
		ObservedGeneration: 3, State: StateUpdating, Done: 4, Total: 10, Completed: 1,
		Failure:          failureOf(&UpdateError{Reason: "UpdatePayloadResourceNotFound", Message: "gone", Effect: EffectFailAfterInterval}),
		LastProgressTime: &at,
		Release:          Release{Version: "1.0.0", Image: "r/p:1"},
		History:          []UpdateHistory{{State: UpdatePartial, StartedTime: at, Version: "1.0.0"}},
	}
	c := s.DeepCopy()
	c.Failure.Message = "changed"
	c.History[0].Version = "changed"
	assert.Equal(t, "gone", s.Failure.Message, "the copy owns its failure")
	assert.Equal(t, "1.0.0", s.History[0].Version, "the copy owns its history")
	assert.Nil(t, (*Status)(nil).DeepCopy())

	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, `{"observedGeneration":3,"state":"Updating","done":4,"total":10,"completed":1,
		"failure":{"reason":"UpdatePayloadResourceNotFound","message":"gone","effect":"FailAfterInterval"},
		"lastProgressTime":"2026-01-02T03:04:05Z","release":{"version":"1.0.0","image":"r/p:1"},
		"history":[{"state":"Partial","startedTime":"2026-01-02T03:04:05Z","version":"1.0.0"}]}`, string(b))
	var back Status
	require.NoError(t, json.Unmarshal(b, &back))
	assert.True(t, s.LastProgressTime.Equal(back.LastProgressTime))
	back.LastProgressTime = s.LastProgressTime
	back.History[0].StartedTime = s.History[0].StartedTime
	assert.Equal(t, *s, back)
	zero, err := json.Marshal(Status{})
	require.NoError(t, err)
	assert.JSONEq(t, `{"release":{}}`, string(zero), "an empty status is (nearly) empty")
}

// TestStatusReadsTimesOfEitherPrecision: every time a Status persists reads back
// written with seconds, as metav1.Time writes a time (by an earlier version, or a
// person who patched the status), or with microseconds, as the worker writes
// NextApplyTime; and a status round-trips through runtime.DefaultUnstructuredConverter,
// as a dynamic client or an unstructured object holds it.
func TestStatusReadsTimesOfEitherPrecision(t *testing.T) {
	const fields = `"lastProgressTime":%[1]q,"nextApplyTime":%[1]q,
		"history":[{"state":"Partial","startedTime":%[1]q,"completionTime":%[1]q}],
		"conditions":[{"type":"Available","status":"True","reason":"AsExpected","message":"","lastTransitionTime":%[1]q}]`
	for _, at := range []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.000000Z"} {
		var st Status
		require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf("{"+fields+"}", at)), &st), "times written as %s", at)
		for _, got := range []time.Time{st.LastProgressTime.Time, st.NextApplyTime.Time, st.History[0].StartedTime.Time,
			st.History[0].CompletionTime.Time, st.Conditions[0].LastTransitionTime.Time} {
			assert.True(t, t0.Equal(got), "read %s as %s", at, got)
		}
	}

	due := converge.NewMicroTime(t0.Add(1500 * time.Microsecond))
	at := metav1.NewTime(t0)
	st := Status{Release: Release{Version: "1.0.0"}, State: StateReconciling, LastProgressTime: &at, NextApplyTime: &due,
		History: []UpdateHistory{{State: UpdateCompleted, StartedTime: at, CompletionTime: &at, Version: "1.0.0"}}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	require.NoError(t, err)
	assert.Equal(t, "2026-01-02T03:04:05.001500Z", u["nextApplyTime"])
	var back Status
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back))
	assert.True(t, equality.Semantic.DeepEqual(st, back), "round trip: %+v, want %+v", back, st)
	u["nextApplyTime"] = "2026-01-02T03:04:05Z"
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back), "seconds read back unstructured too")
	assert.True(t, t0.Equal(back.NextApplyTime.Time))
}

func TestFailureOf(t *testing.T) {
	assert.Nil(t, failureOf(nil))
	assert.Equal(t, Failure{Reason: "UpdatePayloadFailed", Message: "plain", Effect: EffectFail}, *failureOf(errors.New("plain")))
	assert.Equal(t, Failure{Reason: "UpdatePayloadFailed", Message: "no reason", Effect: EffectFail}, *failureOf(&UpdateError{Message: "no reason"}),
		"an UpdateError without reason or effect fails the update")
	long := failureOf(errors.New(string(make([]byte, 40000))))
	assert.LessOrEqual(t, len(long.Message), conditions.MaxMessageLength, "messages are bounded as the Condition API bounds them")
}

// TestReleaseSameByDigest protects release identity: the same digest through a
// mirror registry is the same release, and no update starts.
func TestReleaseSameByDigest(t *testing.T) {
	const digest = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		a, b Release
		want bool
	}{
		{"same digest through a mirror", Release{Image: "quay.io/ocp/release" + digest}, Release{Image: "mirror.local:5000/ocp/release" + digest}, true},
		{"same digest, one version unknown", Release{Version: "4.15.1", Image: "quay.io/r" + digest}, Release{Image: "mirror/r" + digest}, true},
		{"different digests", Release{Image: "quay.io/r@sha256:aa"}, Release{Image: "quay.io/r@sha256:bb"}, false},
		{"tags are compared whole", Release{Image: "quay.io/r:4.15"}, Release{Image: "mirror/r:4.15"}, false},
		{"one by tag, one by digest", Release{Image: "quay.io/r:4.15"}, Release{Image: "quay.io/r" + digest}, false},
		{"same image, different versions", Release{Version: "1.0.0", Image: "embedded://x"}, Release{Version: "1.1.0", Image: "embedded://x"}, false},
		{"versions only", Release{Version: "1"}, Release{Version: "1"}, true},
		{"force is not identity", Release{Version: "1", Force: true}, Release{Version: "1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.a.Same(tt.b))
			assert.Equal(t, tt.want, tt.b.Same(tt.a), "Same is symmetric")
		})
	}
	assert.Equal(t, "1.0.0", Release{Version: "1.0.0", Image: "i"}.String())
	assert.Equal(t, "i", Release{Image: "i"}.String())
}
