package testenv

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// An event goes once its relay lets it: at once when no delay is set or
// it is an initial event, after its delay, or once enough changes came
// after it; held events go nowhere once the watch ended.
func TestEventQueueHead(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name      string
		rel       watchRelay
		event     watchEvent
		changes   int // arrived in all
		done      bool
		wantReady bool
		wantWait  bool // a wait before it goes
		wantOver  bool
	}{
		{name: "no delay lets an event go", event: watchEvent{at: now, changes: 1}, changes: 1, wantReady: true},
		{name: "a delay passed lets it go", rel: watchRelay{delay: time.Second}, event: watchEvent{at: now.Add(-time.Hour), changes: 1}, changes: 1, wantReady: true},
		{name: "a delay to come holds it", rel: watchRelay{delay: time.Hour}, event: watchEvent{at: now, changes: 1}, changes: 1, wantWait: true},
		{name: "an initial event is never held", rel: watchRelay{delay: time.Hour}, event: watchEvent{at: now, changes: 1, initial: true}, changes: 1, wantReady: true},
		{name: "a lag in events holds the newest change", rel: watchRelay{lagEvents: 1}, event: watchEvent{at: now, changes: 3}, changes: 3},
		{name: "a change later lets it go", rel: watchRelay{lagEvents: 1}, event: watchEvent{at: now, changes: 3}, changes: 4, wantReady: true},
		{name: "a held event goes nowhere once the watch ended", rel: watchRelay{lagEvents: 1}, event: watchEvent{at: now, changes: 3}, changes: 3, done: true, wantOver: true},
		{name: "a delayed event still goes once the watch ended", rel: watchRelay{delay: time.Hour}, event: watchEvent{at: now, changes: 1}, changes: 1, done: true, wantWait: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &eventQueue{events: []watchEvent{tt.event}, changes: tt.changes, done: tt.done}
			_, ready, wait, over := q.head(tt.rel)
			assert.Equal(t, tt.wantReady, ready, "ready")
			assert.Equal(t, tt.wantWait, wait > 0, "wait %v", wait)
			assert.Equal(t, tt.wantOver, over, "over")
			assert.Equal(t, !ready, len(q.events) == 1, "only a ready event leaves the queue")
		})
	}
	_, ready, _, over := (&eventQueue{done: true}).head(watchRelay{})
	assert.False(t, ready)
	assert.True(t, over, "an empty queue of an ended watch is over")
}

// A bookmark is no change, and the bookmark that ends a watch list's
// initial events is told apart.
func TestEventKind(t *testing.T) {
	kind, ends := eventKind([]byte(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}}}`))
	assert.Equal(t, "BOOKMARK", string(kind))
	assert.True(t, ends)
	kind, ends = eventKind([]byte(`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"6"}}}`))
	assert.Equal(t, "BOOKMARK", string(kind))
	assert.False(t, ends)
	kind, ends = eventKind([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a"}}}`))
	assert.Equal(t, "ADDED", string(kind))
	assert.False(t, ends)
}
