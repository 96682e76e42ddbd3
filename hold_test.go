package converge_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/converge-dev/converge"
)

func TestSortHoldsIsWhatAStatusPersists(t *testing.T) {
	paused := converge.Hold{Reason: "Paused", Message: "the rollout is paused"}
	failingB := converge.Hold{Reason: "RevisionFailing", Object: "b", Message: "revision 3 is failing on a: b waits"}
	failingC := converge.Hold{Reason: "RevisionFailing", Object: "c", Message: "revision 3 is failing on a: c waits"}
	many := make([]converge.Hold, converge.MaxHolds+3)
	for i := range many {
		many[i] = converge.Hold{Reason: "NodeUnavailable", Object: fmt.Sprintf("node-%02d", len(many)-i)}
	}
	tests := []struct {
		name  string
		holds []converge.Hold
		want  []converge.Hold
	}{
		{name: "none is nil", holds: []converge.Hold{}},
		{name: "sorted by reason, then object", holds: []converge.Hold{failingC, paused, failingB},
			want: []converge.Hold{paused, failingB, failingC}},
		{name: "each once", holds: []converge.Hold{failingB, failingB, paused}, want: []converge.Hold{paused, failingB}},
		{name: "at most MaxHolds, the first in order", holds: many, want: func() []converge.Hold {
			want := make([]converge.Hold, converge.MaxHolds)
			for i := range want {
				want[i] = converge.Hold{Reason: "NodeUnavailable", Object: fmt.Sprintf("node-%02d", i+1)}
			}
			return want
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := converge.SortHolds(tt.holds)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(got), cap(got), "appending to the result never writes into the caller's memory")
		})
	}
}

// TestPausedHoldIsOneReasonForEveryEngine: a pause holds the whole engine
// (Object "") under the one shared reason, saying what it keeps from
// starting.
func TestPausedHoldIsOneReasonForEveryEngine(t *testing.T) {
	h := converge.PausedHold("no update is started")
	assert.Equal(t, converge.Hold{Reason: "Paused", Message: "paused: no update is started"}, h)
}
