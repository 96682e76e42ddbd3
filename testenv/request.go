package testenv

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// request is what the proxy knows of a request for a resource.
type request struct {
	verb                  string
	prefix                string // "/api/v1" or "/apis/<group>/<version>"
	resource, subresource string
	namespace, name       string
	query                 url.Values
}

// parseRequest reads the resource request r is, as the apiserver's
// RequestInfo does; ok is false for any other path (discovery, /version,
// /openapi).
func parseRequest(r *http.Request) (req request, ok bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		req.prefix, parts = "/"+strings.Join(parts[:2], "/"), parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		req.prefix, parts = "/"+strings.Join(parts[:3], "/"), parts[3:]
	default:
		return request{}, false
	}
	// namespaces/<ns>/<resource>/..., but namespaces/<ns>/status and
	// namespaces/<ns>/finalize are subresources of the namespace itself.
	if parts[0] == "namespaces" && len(parts) > 1 {
		req.namespace = parts[1]
		if len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
			parts = parts[2:]
		}
	}
	req.resource = parts[0]
	if len(parts) > 1 {
		req.name = parts[1]
	}
	if len(parts) > 2 {
		req.subresource = parts[2]
	}
	req.query = r.URL.Query()
	req.verb = requestVerb(r.Method, req.name != "", req.query)
	if req.name == "" && (req.verb == "list" || req.verb == "watch") {
		req.name = fieldSelectorName(req.query.Get("fieldSelector"))
	}
	return req, req.verb != ""
}

// requestVerb returns the verb of a request by its method, whether it
// names an object and its query; "" for a method the API does not serve.
func requestVerb(method string, named bool, query url.Values) string {
	switch method {
	case http.MethodGet:
		if w := query.Get("watch"); w == "true" || w == "1" {
			return "watch"
		}
		if named {
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}

// fieldSelectorName returns the name a metadata.name=<name> field selector
// asks for, or "".
func fieldSelectorName(selector string) string {
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		return ""
	}
	name, _ := sel.RequiresExactMatch("metadata.name")
	return name
}

// mutating reports whether the request asks for a change.
func (r request) mutating() bool { return slices.Contains(mutatingVerbs, r.verb) }

// resumes reports whether the request is a watch that resumes from a
// resource version, the only watch an apiserver answers with 410 Gone.
func (r request) resumes() bool {
	rv := r.query.Get("resourceVersion")
	return r.verb == "watch" && rv != "" && rv != "0" && r.query.Get("sendInitialEvents") != "true"
}

// mayBeStale reports whether a real apiserver may serve the request from a
// cache that lags: a get or the first page of a list from any resource
// version ("0") or from one not older than a given one, and a watch. A
// read from no resource version is a consistent read, and an exact one is
// exact: neither is ever stale.
func (r request) mayBeStale() bool {
	switch r.verb {
	case "watch":
		return true
	case "get":
		return r.subresource == "" && r.query.Get("resourceVersion") != ""
	case "list":
		match := r.query.Get("resourceVersionMatch")
		return r.query.Get("resourceVersion") != "" && r.query.Get("continue") == "" &&
			(match == "" || match == string(metav1.ResourceVersionMatchNotOlderThan))
	}
	return false
}

// selects reports whether the fault applies to the request: its class
// applies to the verb and the request, and every selector set holds it.
func (f *Fault) selects(r request) bool {
	verbs := f.Verbs
	if len(verbs) == 0 {
		verbs = classVerbs[f.Class]
	}
	switch {
	case !slices.Contains(verbs, r.verb) || !slices.Contains(classVerbs[f.Class], r.verb):
		return false
	case f.Class == WatchGone && !r.resumes(), f.Class == StaleView && !r.mayBeStale():
		return false
	case len(f.Namespaces) > 0 && !slices.Contains(f.Namespaces, r.namespace),
		len(f.Names) > 0 && !slices.Contains(f.Names, r.name):
		return false
	}
	return f.selectsResource(r)
}

// selectsResource reports whether the fault's Resources select the
// request's resource and subresource.
func (f *Fault) selectsResource(r request) bool {
	return len(f.Resources) == 0 || slices.ContainsFunc(f.Resources, func(res string) bool {
		name, sub, hasSub := strings.Cut(res, "/")
		return name == r.resource && (!hasSub || sub == r.subresource)
	})
}

// groupResource returns the request's resource and its group.
func (r request) groupResource() schema.GroupResource {
	gr := schema.GroupResource{Resource: r.resource}
	if rest, ok := strings.CutPrefix(r.prefix, "/apis/"); ok {
		gr.Group, _, _ = strings.Cut(rest, "/")
	}
	return gr
}
