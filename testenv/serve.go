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
		if p.schedule.mayServeStale(req) {
			p.eventLog(req)
		}
		s, struck = p.schedule.next(id.name, req)
	}
	switch {
	case struck && s.fault.Class == Crash:
		cutAfter = true
		p.forward.ServeHTTP(w, r)
	case struck:
		if p.inject(w, r, req, s) {
			p.count(s.fault.Class)
		}
	default:
		p.forward.ServeHTTP(w, r)
	}
	if cutAfter {
		p.cutOff(id)
	}
}

// inject answers r with the fault s, unless r's context ends first. It
// returns false when the fault did not happen after all (a write the
// apiserver refused, a view it no longer has): then r was answered as it
// came.
func (p *FaultProxy) inject(w http.ResponseWriter, r *http.Request, req request, s strike) bool {
	f := s.fault
	switch f.Class {
	case Conflict:
		w.Header().Set(faultHeader, string(f.Class))
		writeStatus(w, apierrors.NewConflict(req.groupResource(), req.name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again")))
	case TooManyRequests:
		w.Header().Set(faultHeader, string(f.Class))
		writeStatus(w, apierrors.NewTooManyRequests("testenv: fault proxy: too many requests, please try again later", retryAfter(f.Delay)))
	case InternalError:
		w.Header().Set(faultHeader, string(f.Class))
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("testenv: fault proxy: internal error")))
	case Latency:
		if !sleep(r.Context(), f.Delay) {
			return false
		}
		p.forward.ServeHTTP(w, r)
	case TimeoutAfterCommit:
		return p.timeoutAfterCommit(w, r)
	case WatchGone:
		w.Header().Set(faultHeader, string(f.Class))
		writeWatchGone(w, req.query.Get("resourceVersion"))
	case WatchClose, WatchDelay:
		return p.relayWatch(w, r, req, s)
	case StaleView:
		return p.serveStale(w, r, req, f)
	}
	return true
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
