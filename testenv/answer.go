package testenv

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// writeStatus answers with err's Status, as the apiserver writes its
// errors: JSON, with the Status's code and, for 429, a Retry-After.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.Kind, status.APIVersion = "Status", "v1"
	if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(status.Details.RetryAfterSeconds)))
	}
	b, _ := json.Marshal(status)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_, _ = w.Write(b)
}

// retryAfter returns the Retry-After of a TooManyRequests fault in whole
// seconds: delay rounded up, 1 when zero.
func retryAfter(delay time.Duration) int {
	return max(1, int((delay+time.Second-1)/time.Second))
}

// sleep waits for d; it returns false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// upstreamURL returns the URL of the apiserver: its Host, https when
// that names no scheme.
func (p *FaultProxy) upstreamURL() *url.URL {
	u, err := url.Parse(p.upstream.Host)
	if err != nil || u.Scheme == "" || u.Host == "" {
		u = &url.URL{Scheme: "https", Host: p.upstream.Host}
	}
	return u
}

// send sends r to the apiserver as the proxy, with query instead of r's
// and JSON asked for when json is set.
func (p *FaultProxy) send(r *http.Request, path string, query url.Values, json bool) (*http.Response, error) {
	u := p.upstreamURL()
	u.Path += path
	u.RawQuery = query.Encode()
	out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), r.Body)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Header.Del("Authorization")
	if json {
		// The proxy reads the answer: as JSON, and uncompressed by the
		// transport (the apiserver compresses a watch list's stream).
		out.Header.Set("Accept", "application/json")
		out.Header.Del("Accept-Encoding")
	}
	out.ContentLength = r.ContentLength
	return p.client.Do(out)
}

// copyResponse answers with resp as it is.
func copyResponse(w http.ResponseWriter, resp *http.Response) {
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// timeoutAfterCommit passes r on and, when the apiserver committed it,
// answers 504 Timeout, as an apiserver whose answer came too late, and
// counts the fault.
func (p *FaultProxy) timeoutAfterCommit(w http.ResponseWriter, r *http.Request) {
	resp, err := p.send(r, r.URL.Path, r.URL.Query(), false)
	if err != nil {
		if r.Context().Err() == nil {
			writeStatus(w, apierrors.NewInternalError(err))
		}
		return
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		copyResponse(w, resp)
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	w.Header().Set(faultHeader, string(TimeoutAfterCommit))
	writeStatus(w, apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0))
	p.count(TimeoutAfterCommit)
}
