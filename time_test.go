package converge_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"github.com/converge-dev/converge"
)

// persisted is a status that holds a MicroTime, as an engine's does.
type persisted struct {
	Due *converge.MicroTime `json:"due,omitempty"`
}

// TestMicroTimeReadsBothPrecisions: a MicroTime reads what metav1.MicroTime
// and metav1.Time write, and writes what metav1.MicroTime writes.
func TestMicroTimeReadsBothPrecisions(t *testing.T) {
	tests := []struct {
		name string
		json string
		want time.Time
	}{
		{name: "microseconds, as metav1.MicroTime writes them", json: `"2026-01-01T00:00:00.000250Z"`, want: time.Date(2026, 1, 1, 0, 0, 0, 250000, time.UTC)},
		{name: "seconds, as metav1.Time writes them", json: `"2026-01-01T00:00:00Z"`, want: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{name: "another zone", json: `"2026-01-01T02:00:00.5+02:00"`, want: time.Date(2026, 1, 1, 0, 0, 0, 5e8, time.UTC)},
		{name: "null is the zero time", json: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got converge.MicroTime
			require.NoError(t, json.Unmarshal([]byte(tt.json), &got))
			assert.True(t, tt.want.Equal(got.Time), "read %s as %s, want %s", tt.json, got.Time, tt.want)

			written, err := json.Marshal(got)
			require.NoError(t, err)
			want, err := json.Marshal(metav1.NewMicroTime(tt.want))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(written), "written as metav1.MicroTime writes it")
		})
	}
	var refused converge.MicroTime
	require.Error(t, json.Unmarshal([]byte(`"yesterday"`), &refused), "a string that is no time is refused")
}

// TestPersistedTimesReadBothPrecisions: every time type an engine's status
// persists reads both forms; metav1.MicroTime alone refuses seconds, which
// is why no engine persists one.
func TestPersistedTimesReadBothPrecisions(t *testing.T) {
	seconds, micro := []byte(`"2026-01-01T00:00:00Z"`), []byte(`"2026-01-01T00:00:00.000001Z"`)
	for _, form := range [][]byte{seconds, micro} {
		var mt converge.MicroTime
		assert.NoError(t, json.Unmarshal(form, &mt), "converge.MicroTime reads %s", form)
		var tm metav1.Time
		assert.NoError(t, json.Unmarshal(form, &tm), "metav1.Time reads %s", form)
	}
	var refuses metav1.MicroTime
	assert.Error(t, json.Unmarshal(seconds, &refuses), "metav1.MicroTime refuses seconds")
}

// TestMicroTimeRoundTrips: a MicroTime survives what a host's clients do
// with a status: runtime.DefaultUnstructuredConverter (the dynamic client,
// controller-runtime's unstructured objects), CBOR, equality.Semantic and a
// deep copy.
func TestMicroTimeRoundTrips(t *testing.T) {
	due := ptr.To(converge.NewMicroTime(time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC)))
	in := persisted{Due: due}

	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&in)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"due": "2026-01-01T00:00:00.000001Z"}, u)
	var back persisted
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back))
	assert.True(t, due.Time.Equal(back.Due.Time), "unstructured: %s, want %s", back.Due, due)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"due": "2026-01-01T00:00:00Z"}, &back),
		"an unstructured time with seconds reads back")

	b, err := direct.Marshal(in)
	require.NoError(t, err)
	var fromCBOR persisted
	require.NoError(t, direct.Unmarshal(b, &fromCBOR))
	assert.True(t, due.Time.Equal(fromCBOR.Due.Time), "CBOR: %s, want %s", fromCBOR.Due, due)

	utc, local := persisted{Due: due}, persisted{Due: ptr.To(converge.NewMicroTime(due.Local()))}
	assert.True(t, equality.Semantic.DeepEqual(utc, local), "equality.Semantic compares the time, not its location")

	cp := due.DeepCopy()
	cp.Time = cp.Add(time.Hour)
	assert.True(t, due.Time.Equal(time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC)), "a copy shares nothing")
	assert.Nil(t, (*converge.MicroTime)(nil).DeepCopy())
	zero, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&persisted{Due: &converge.MicroTime{}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"due": nil}, zero, "a zero time is null, as metav1.MicroTime's")
}
