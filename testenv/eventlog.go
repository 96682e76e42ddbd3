package testenv

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// maxLogged bounds the events a log keeps; the oldest go first.
const maxLogged = 10000

// eventLog is the proxy's record of one resource's changes, which stale
// views are cut from: the resource version, namespace and arrival of each
// event of the resource in the whole cluster, as the proxy's own watch of
// it delivers them.
type eventLog struct {
	mu      sync.Mutex
	start   uint64 // the resource version the log begins at; 0: not yet
	resume  uint64 // the version its watch resumes from
	entries []logEntry
}

// logEntry is one event of a log.
type logEntry struct {
	rv        uint64
	namespace string
	at        time.Time
}

// view returns the resource version of the view of namespace ("": of the
// cluster) that lags lag, or lagEvents events in namespace, behind the
// present at now, and whether it is older than the newest version the log
// knows. A view cannot lag further back than the log begins.
func (l *eventLog) view(namespace string, lag time.Duration, lagEvents int, now time.Time) (rv uint64, older bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.start == 0 {
		return 0, false
	}
	rv, newest := l.start, l.start
	if n := len(l.entries); n > 0 {
		newest = l.entries[n-1].rv
	}
	if lagEvents > 0 {
		seen := 0
		for i := len(l.entries) - 1; i >= 0; i-- {
			if e := l.entries[i]; namespace == "" || e.namespace == namespace {
				if seen++; seen == lagEvents {
					return e.rv - 1, e.rv-1 < newest
				}
			}
		}
		return rv, rv < newest
	}
	for i := len(l.entries) - 1; i >= 0; i-- {
		if !l.entries[i].at.After(now.Add(-lag)) {
			rv = l.entries[i].rv
			break
		}
	}
	return rv, rv < newest
}

// record adds an event, dropping the oldest past maxLogged: the log then
// begins after them.
func (l *eventLog) record(e logEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
	l.resume = max(l.resume, e.rv)
	if drop := len(l.entries) - maxLogged; drop > 0 {
		l.start = l.entries[drop-1].rv
		l.entries = append([]logEntry(nil), l.entries[drop:]...)
	}
}

// eventLog returns the log of the request's resource, opening it at the
// first request for the resource.
func (p *FaultProxy) eventLog(req request) *eventLog {
	path := req.prefix + "/" + req.resource
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.logs[path]; ok {
		return l
	}
	l := &eventLog{}
	p.logs[path] = l
	p.wg.Go(func() { p.keepLog(l, path) })
	return l
}

// keepLog feeds l from a watch of the collection at path until the proxy
// closes: it lists once for the version to begin at, watches from there,
// resumes the watch when it ends and lists again when the apiserver has
// compacted its version away.
func (p *FaultProxy) keepLog(l *eventLog, path string) {
	for p.ctx.Err() == nil {
		l.mu.Lock()
		resume := l.resume
		l.mu.Unlock()
		if resume == 0 {
			rv, err := p.currentVersion(path)
			if err == nil {
				l.mu.Lock()
				l.resume = rv
				if l.start == 0 {
					l.start = rv
				}
				l.mu.Unlock()
				continue
			}
		} else if p.watchLog(l, path, resume) {
			continue
		}
		sleep(p.ctx, time.Second)
	}
}

// currentVersion returns the resource version of a consistent list of the
// collection at path.
func (p *FaultProxy) currentVersion(path string) (uint64, error) {
	var list struct {
		Metadata metav1.ListMeta `json:"metadata"`
	}
	if err := p.get(path, url.Values{"limit": {"1"}}, func(resp *http.Response) error {
		return json.NewDecoder(resp.Body).Decode(&list)
	}); err != nil {
		return 0, err
	}
	return strconv.ParseUint(list.Metadata.ResourceVersion, 10, 64)
}

// watchLog records the events of a watch of the collection at path from
// rv until it ends. It returns false when the watch could not start; when
// the apiserver no longer has rv, it sets the log to list again.
func (p *FaultProxy) watchLog(l *eventLog, path string, rv uint64) bool {
	query := url.Values{"watch": {"true"}, "resourceVersion": {strconv.FormatUint(rv, 10)}, "allowWatchBookmarks": {"true"}}
	return p.get(path, query, func(resp *http.Response) error {
		dec := json.NewDecoder(resp.Body)
		for {
			var ev eventHead
			if err := dec.Decode(&ev); err != nil {
				return nil
			}
			v, _ := strconv.ParseUint(ev.Object.Metadata.ResourceVersion, 10, 64)
			switch ev.Type {
			case watch.Error:
				l.mu.Lock()
				l.resume = 0
				l.mu.Unlock()
				return nil
			case watch.Bookmark:
				l.mu.Lock()
				l.resume = max(l.resume, v)
				l.mu.Unlock()
			default:
				l.record(logEntry{rv: v, namespace: ev.Object.Metadata.Namespace, at: time.Now()})
			}
		}
	}) == nil
}

// get sends a GET for path and query to the apiserver as the proxy, asking
// for JSON, and reads a 200 answer with read.
func (p *FaultProxy) get(path string, query url.Values, read func(*http.Response) error) error {
	r, err := http.NewRequestWithContext(p.ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	resp, err := p.send(r, path, query, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("testenv: fault proxy: GET %s: %s", path, resp.Status)
	}
	return read(resp)
}
