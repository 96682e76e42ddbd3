package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// watchRelay says how a watch's events reach the client.
type watchRelay struct {
	// class is the fault counted: once the watch is relayed, or for
	// closeAfter once it is ended early.
	class FaultClass
	// closeAfter ends the watch after that many changes (events but
	// bookmarks); 0: never.
	closeAfter int
	// delay holds each event that long after it arrived.
	delay time.Duration
	// lagEvents holds each event until that many more changes (events
	// but bookmarks) have arrived; held events are dropped when the
	// apiserver ends the watch.
	lagEvents int
	// initialOnTime lets the initial events of a watch list pass at once.
	initialOnTime bool
}

// watchEvent is one event of a watch stream as it arrived.
type watchEvent struct {
	raw      json.RawMessage
	changes  int // changes arrived up to it, it included
	bookmark bool
	at       time.Time
	initial  bool // of the initial events of a watch list
}

// relay passes the watch r on to the apiserver, as JSON, and relays its
// events to w as rel says. closeAfter counts changes, not bookmarks, so
// that a watch list is never ended right after its initial bookmark with
// no object: client-go takes such a watch for broken ("very short watch")
// and lists again.
func (p *FaultProxy) relay(w http.ResponseWriter, r *http.Request, req request, rel watchRelay) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	resp, err := p.send(r.WithContext(ctx), r.URL.Path, req.query, true)
	if err != nil {
		if r.Context().Err() == nil {
			writeStatus(w, apierrors.NewInternalError(fmt.Errorf("testenv: fault proxy: %w", err)))
		}
		return
	}
	if resp.StatusCode != http.StatusOK {
		copyResponse(w, resp)
		return
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	if rel.closeAfter == 0 {
		p.count(rel.class)
	}
	q := &eventQueue{kick: make(chan struct{}, 1)}
	var reader sync.WaitGroup
	reader.Go(func() {
		defer resp.Body.Close()
		q.read(resp, rel.initialOnTime && req.query.Get("sendInitialEvents") == "true")
	})
	defer reader.Wait()
	defer cancel() // ends the reader
	delivered := 0
	for rel.closeAfter == 0 || delivered < rel.closeAfter {
		ev, ok := q.next(ctx.Done(), rel)
		if !ok {
			break
		}
		if _, err := w.Write(append(ev.raw, '\n')); err != nil {
			break
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !ev.bookmark {
			delivered++
		}
	}
	if rel.closeAfter > 0 && delivered >= rel.closeAfter {
		p.count(rel.class)
	}
}

// writeWatchGone answers a watch from rv as an apiserver that compacted rv
// away does: a 200 whose one event is the 410 Expired error.
func writeWatchGone(w http.ResponseWriter, rv string) {
	status := apierrors.NewResourceExpired("too old resource version: " + rv).Status()
	status.Kind, status.APIVersion = "Status", "v1"
	object, _ := json.Marshal(status)
	event, _ := json.Marshal(metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: object}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(event, '\n'))
}

// eventQueue holds the events of one watch between their arrival and
// their delivery.
type eventQueue struct {
	mu      sync.Mutex
	events  []watchEvent
	changes int           // arrived
	done    bool          // the apiserver ended the watch
	kick    chan struct{} // a change, for next
}

// read queues the events of resp until it ends. The events before the
// bookmark that ends a watch list's initial events are initial when
// initial is set.
func (q *eventQueue) read(resp *http.Response, initial bool) {
	dec := json.NewDecoder(resp.Body)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		kind, endsInitial := eventKind(raw)
		ev := watchEvent{raw: raw, at: time.Now(), initial: initial, bookmark: kind == watch.Bookmark}
		initial = initial && !endsInitial
		q.mu.Lock()
		if !ev.bookmark {
			q.changes++
		}
		ev.changes = q.changes
		q.events = append(q.events, ev)
		q.mu.Unlock()
		q.signal()
	}
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.signal()
}

func (q *eventQueue) signal() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// next returns the first event once rel lets it go, or false once done
// closes or the watch ended with nothing more to deliver.
func (q *eventQueue) next(done <-chan struct{}, rel watchRelay) (watchEvent, bool) {
	for {
		ev, ready, wait, over := q.head(rel)
		switch {
		case ready:
			return ev, true
		case over:
			return watchEvent{}, false
		}
		var timer <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			timer = t.C
		}
		select {
		case <-done:
		case <-q.kick:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		select {
		case <-done:
			return watchEvent{}, false
		default:
		}
	}
}

// head takes the first event off the queue when rel lets it go now; else
// it says how long it is held yet (0: until the next change), or that no
// event will go any more.
func (q *eventQueue) head(rel watchRelay) (ev watchEvent, ready bool, wait time.Duration, over bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.events) == 0 {
		return watchEvent{}, false, 0, q.done
	}
	ev = q.events[0]
	switch {
	case ev.initial:
		ready = true
	case rel.lagEvents > 0:
		ready = q.changes-ev.changes >= rel.lagEvents
		over = !ready && q.done
	default:
		wait = time.Until(ev.at.Add(rel.delay))
		ready = wait <= 0
	}
	if ready {
		q.events = q.events[1:]
	}
	return ev, ready, wait, over
}

// eventHead is what the proxy reads of a watch event: its type and its
// object's metadata.
type eventHead struct {
	Type   watch.EventType `json:"type"`
	Object struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	} `json:"object"`
}

// eventKind returns the type of the watch event raw, and whether it is the
// bookmark that ends the initial events of a watch list.
func eventKind(raw json.RawMessage) (kind watch.EventType, endsInitial bool) {
	var ev eventHead
	if json.Unmarshal(raw, &ev) != nil {
		return "", false
	}
	return ev.Type, ev.Type == watch.Bookmark && ev.Object.Metadata.Annotations[metav1.InitialEventsAnnotationKey] == "true"
}
