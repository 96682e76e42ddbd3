package testenv

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serveStale answers the read r from a view that lags as f says: a watch
// delivers its events late; a get or list is answered at the exact
// resource version of the view, never older than the one r asks for. It
// answers r fresh, and counts nothing, when the view is not older than the
// present or the apiserver no longer has it.
func (p *FaultProxy) serveStale(w http.ResponseWriter, r *http.Request, req request, f *Fault) {
	if req.verb == "watch" {
		p.relay(w, r, req, watchRelay{class: StaleView, delay: f.Lag, lagEvents: f.LagEvents, initialOnTime: true})
		return
	}
	rv, older := p.eventLog(req).view(req.namespace, f.Lag, f.LagEvents, time.Now())
	atLeast, _ := strconv.ParseUint(req.query.Get("resourceVersion"), 10, 64)
	if !older || rv <= atLeast {
		p.forward.ServeHTTP(w, r)
		return
	}
	query := maps.Clone(req.query) // Set replaces values, never changes them
	query.Set("resourceVersion", strconv.FormatUint(rv, 10))
	query.Set("resourceVersionMatch", string(metav1.ResourceVersionMatchExact))
	path := r.URL.Path
	if req.verb == "get" {
		path = req.collectionPath()
		query.Set("fieldSelector", "metadata.name="+req.name)
	}
	resp, err := p.send(r, path, query, req.verb == "get")
	if err != nil || resp.StatusCode == http.StatusGone {
		if err == nil {
			_ = resp.Body.Close()
		}
		p.forward.ServeHTTP(w, r)
		return
	}
	w.Header().Set(faultHeader, string(StaleView))
	served := resp.StatusCode == http.StatusOK
	if req.verb == "list" || !served {
		copyResponse(w, resp)
	} else {
		defer resp.Body.Close()
		served = writeListedObject(w, resp, req)
	}
	if served {
		p.count(StaleView)
	}
}

// writeListedObject answers a get with the one object of the list resp,
// or 404 when the list is empty: the object did not exist in the view. It
// reports whether it served the view (false: it answered an error).
func writeListedObject(w http.ResponseWriter, resp *http.Response, req request) bool {
	var list struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []map[string]any `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return false
	}
	if len(list.Items) == 0 {
		writeStatus(w, apierrors.NewNotFound(req.groupResource(), req.name))
		return true
	}
	obj := list.Items[0]
	// The items of a list of built-in kinds leave out their kind.
	if obj["kind"] == nil {
		obj["kind"] = strings.TrimSuffix(list.Kind, "List")
	}
	if obj["apiVersion"] == nil {
		obj["apiVersion"] = list.APIVersion
	}
	b, err := json.Marshal(obj)
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
	return true
}

// collectionPath returns the path of the collection the request's object
// is in: the namespace's, or the cluster's for a cluster-scoped resource.
func (r request) collectionPath() string {
	path := r.prefix
	if r.namespace != "" && r.resource != "namespaces" {
		path += "/namespaces/" + r.namespace
	}
	return path + "/" + r.resource
}
