//go:build !integration

package payloadapply

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge/payload"
)

// TestProgressLinesReadWithoutDecoding: a status that counts no manifest yet says its
// release is loading rather than 0/0, the run level shows only while updating (the
// one state that applies run levels in order), a failure names its reason, and a line
// that does not change is printed once.
func TestProgressLinesReadWithoutDecoding(t *testing.T) {
	release := payload.Release{Version: "1.0.0"}
	tests := []struct {
		name   string
		status payload.Status
		level  int64
		want   string
	}{
		{name: "loading", status: payload.Status{Release: release, State: payload.StateInitializing}, level: 20,
			want: "progress: loading release 1.0.0, Initializing\n"},
		{name: "initializing applies every run level at once", status: payload.Status{Release: release, State: payload.StateInitializing, Done: 3, Total: 31}, level: 10,
			want: "progress:  3/31 manifests, Initializing\n"},
		{name: "updating applies run levels in order", status: payload.Status{Release: release, State: payload.StateUpdating, Done: 12, Total: 31}, level: 30,
			want: "progress: 12/31 manifests, Updating, run level 30\n"},
		{name: "a failure names its reason", status: payload.Status{Release: release, State: payload.StateReconciling, Done: 31, Total: 31,
			Failure: &payload.Failure{Reason: "UpdatePayloadFailed"}}, level: 40,
			want: "progress: 31/31 manifests, Reconciling, failing: UpdatePayloadFailed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := NewProgress(&out)
			p.Show(tt.status, tt.level)
			p.Show(tt.status, tt.level)
			assert.Equal(t, tt.want, out.String())
		})
	}
}

func TestCountAgreesInNumber(t *testing.T) {
	assert.Equal(t, "0 times", count(0, "time"))
	assert.Equal(t, "1 time", count(1, "time"))
	assert.Equal(t, "2 times", count(2, "time"))
}
