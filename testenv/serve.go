package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// faultHeader names the fault class in the answer of a request that got
// one, for whoever reads a trace.
const faultHeader = "X-Testenv-Fault"

// serve handles one request: it finds the identity, refuses it when cut
// off, draws its fault and injects it.
func (p *FaultProxy) serve(w http.ResponseWriter, r *http.Request) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	p.mu.Lock()
	id, closed := p.identities[token], p.closed
	if !closed {
		p.handlers.Add(1)
		defer p.handlers.Done()
	}
	p.mu.Unlock()
	if closed {
		writeStatus(w, apierrors.NewServiceUnavailable("testenv: fault proxy: closed"))
		return
	}
	if id == nil {
		writeStatus(w, apierrors.NewUnauthorized("testenv: fault proxy: unknown identity; use FaultProxy.Config"))
		return
	}
	req, isResource := parseRequest(r)
	pass, cutAfter := p.admit(id, req, isResource)
	if !pass {
		writeStatus(w, apierrors.NewServiceUnavailable(fmt.Sprintf("testenv: fault proxy: instance %q has crashed", id.name)))
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stopOnCut := context.AfterFunc(id.ctx, cancel)
	defer stopOnCut()
	stopOnClose := context.AfterFunc(p.ctx, cancel)
	defer stopOnClose()
	r = r.WithContext(ctx)

	s, struck := strike{}, false
	if isResource {
		if p.schedule.readsStale(req) {
			p.eventLog(req)
		}
		s, struck = p.schedule.next(id.name, req)
	}
	switch {
	case struck && s.fault.Class == Crash:
		cutAfter = true
		p.forward.ServeHTTP(w, r)
	case struck:
		p.inject(w, r, req, s)
	default:
		p.forward.ServeHTTP(w, r)
	}
	if cutAfter {
		p.cutOff(id)
	}
}

// inject answers r with the fault s, unless r's context ends first, and
// counts the fault once it happened: a write the apiserver refused, or a
// view it no longer has, is answered as it came and not counted.
func (p *FaultProxy) inject(w http.ResponseWriter, r *http.Request, req request, s strike) {
	f := s.fault
	switch f.Class {
	case Conflict:
		p.answerFault(w, f.Class, apierrors.NewConflict(req.groupResource(), req.name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again")))
	case TooManyRequests:
		p.answerFault(w, f.Class, apierrors.NewTooManyRequests("testenv: fault proxy: too many requests, please try again later", retryAfter(f.Delay)))
	case InternalError:
		p.answerFault(w, f.Class, apierrors.NewInternalError(fmt.Errorf("testenv: fault proxy: internal error")))
	case Latency:
		if sleep(r.Context(), f.Delay) {
			p.count(Latency)
			p.forward.ServeHTTP(w, r)
		}
	case TimeoutAfterCommit:
		p.timeoutAfterCommit(w, r)
	case WatchGone:
		w.Header().Set(faultHeader, string(f.Class))
		writeWatchGone(w, req.query.Get("resourceVersion"))
		p.count(WatchGone)
	case WatchClose:
		p.relay(w, r, req, watchRelay{class: WatchClose, closeAfter: 1 + int(s.draw%uint64(max(1, f.Events)))})
	case WatchDelay:
		p.relay(w, r, req, watchRelay{class: WatchDelay, delay: f.Delay})
	case StaleView:
		p.serveStale(w, r, req, f)
	}
}

// answerFault answers with the error of a fault of class, and counts it.
func (p *FaultProxy) answerFault(w http.ResponseWriter, class FaultClass, err *apierrors.StatusError) {
	w.Header().Set(faultHeader, string(class))
	writeStatus(w, err)
	p.count(class)
}

// reverseProxy returns the proxy that passes a request on to the
// apiserver as it came, but for the identity's token, which upstream's
// credentials replace.
func (p *FaultProxy) reverseProxy(transport http.RoundTripper) *httputil.ReverseProxy {
	upstream := p.upstreamURL()
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Header.Del("Authorization")
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the client is gone, or its instance cut off
			}
			writeStatus(w, apierrors.NewInternalError(fmt.Errorf("testenv: fault proxy: %w", err)))
		},
	}
}
