package testenv

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A view lagging in time is at the newest change that had arrived by
// then; a view lagging in events is just before the n-th newest change of
// its namespace; neither goes further back than the log begins.
func TestEventLogView(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	log := &eventLog{start: 100, entries: []logEntry{
		{rv: 110, namespace: "a", at: t0.Add(1 * time.Second)},
		{rv: 120, namespace: "b", at: t0.Add(2 * time.Second)},
		{rv: 130, namespace: "a", at: t0.Add(3 * time.Second)},
	}}
	now := t0.Add(4 * time.Second)
	tests := []struct {
		name      string
		namespace string
		lag       time.Duration
		lagEvents int
		want      uint64
		older     bool
	}{
		{name: "a second behind is at the newest change", lag: time.Second, want: 130},
		{name: "two seconds behind, the moment of a change, has that change", lag: 2 * time.Second, want: 120, older: true},
		{name: "between two changes is at the earlier", lag: 2500 * time.Millisecond, want: 110, older: true},
		{name: "further back than the log is where the log begins", lag: time.Hour, want: 100, older: true},
		{name: "one event behind is just before the newest", lagEvents: 1, want: 129, older: true},
		{name: "two events behind in the cluster", lagEvents: 2, want: 119, older: true},
		{name: "two events behind in a namespace counts its own", namespace: "a", lagEvents: 2, want: 109, older: true},
		{name: "more events than the log holds is where it begins", namespace: "b", lagEvents: 2, want: 100, older: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, older := log.view(tt.namespace, tt.lag, tt.lagEvents, now)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.older, older)
		})
	}
}

// A log that has not begun has no view; one without changes is at its
// beginning, which is not older than the present.
func TestEventLogViewBeforeChanges(t *testing.T) {
	_, older := (&eventLog{}).view("", time.Second, 0, time.Now())
	assert.False(t, older)
	rv, older := (&eventLog{start: 5}).view("", 0, 3, time.Now())
	assert.Equal(t, uint64(5), rv)
	assert.False(t, older)
}

// Past maxLogged events the oldest are dropped and the log begins after
// them.
func TestEventLogRecordDropsTheOldest(t *testing.T) {
	log := &eventLog{start: 1}
	for rv := uint64(2); rv < 2+maxLogged+3; rv++ {
		log.record(logEntry{rv: rv})
	}
	assert.Len(t, log.entries, maxLogged)
	assert.Equal(t, uint64(4), log.start)
	assert.Equal(t, uint64(5), log.entries[0].rv)
	assert.Equal(t, uint64(1+maxLogged+3), log.resume)
}
