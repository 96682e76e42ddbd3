package testenv

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// parse reads a request of method for target.
func parse(method, target string) (request, bool) {
	return parseRequest(httptest.NewRequest(method, target, nil))
}

// A request is read as the apiserver's RequestInfo reads it.
func TestParseRequest(t *testing.T) {
	tests := []struct {
		name, method, target string
		want                 request // but its query
		wantNotResource      bool
	}{
		{name: "a get of a namespaced object", method: http.MethodGet, target: "/api/v1/namespaces/shop/configmaps/settings",
			want: request{verb: "get", prefix: "/api/v1", resource: "configmaps", namespace: "shop", name: "settings"}},
		{name: "a list of a group's resource", method: http.MethodGet, target: "/apis/apps/v1/namespaces/shop/deployments?limit=500",
			want: request{verb: "list", prefix: "/apis/apps/v1", resource: "deployments", namespace: "shop"}},
		{name: "a list in every namespace", method: http.MethodGet, target: "/apis/apps/v1/deployments",
			want: request{verb: "list", prefix: "/apis/apps/v1", resource: "deployments"}},
		{name: "a watch", method: http.MethodGet, target: "/api/v1/namespaces/shop/configmaps?watch=true&resourceVersion=5",
			want: request{verb: "watch", prefix: "/api/v1", resource: "configmaps", namespace: "shop"}},
		{name: "a watch of one object names it by field selector", method: http.MethodGet,
			target: "/api/v1/namespaces/shop/configmaps?watch=1&fieldSelector=metadata.name%3Dsettings",
			want:   request{verb: "watch", prefix: "/api/v1", resource: "configmaps", namespace: "shop", name: "settings"}},
		{name: "a status update is of a subresource", method: http.MethodPut, target: "/apis/apps/v1/namespaces/shop/deployments/web/status",
			want: request{verb: "update", prefix: "/apis/apps/v1", resource: "deployments", subresource: "status", namespace: "shop", name: "web"}},
		{name: "a create", method: http.MethodPost, target: "/api/v1/namespaces/shop/configmaps",
			want: request{verb: "create", prefix: "/api/v1", resource: "configmaps", namespace: "shop"}},
		{name: "a patch", method: http.MethodPatch, target: "/api/v1/namespaces/shop/configmaps/settings",
			want: request{verb: "patch", prefix: "/api/v1", resource: "configmaps", namespace: "shop", name: "settings"}},
		{name: "a delete", method: http.MethodDelete, target: "/api/v1/namespaces/shop/configmaps/settings",
			want: request{verb: "delete", prefix: "/api/v1", resource: "configmaps", namespace: "shop", name: "settings"}},
		{name: "a delete of a collection", method: http.MethodDelete, target: "/api/v1/namespaces/shop/configmaps",
			want: request{verb: "deletecollection", prefix: "/api/v1", resource: "configmaps", namespace: "shop"}},
		{name: "a namespace is its own namespace", method: http.MethodGet, target: "/api/v1/namespaces/shop",
			want: request{verb: "get", prefix: "/api/v1", resource: "namespaces", namespace: "shop", name: "shop"}},
		{name: "a namespace's status is its subresource", method: http.MethodPut, target: "/api/v1/namespaces/shop/status",
			want: request{verb: "update", prefix: "/api/v1", resource: "namespaces", subresource: "status", namespace: "shop", name: "shop"}},
		{name: "a cluster-scoped object", method: http.MethodGet, target: "/api/v1/nodes/node-1",
			want: request{verb: "get", prefix: "/api/v1", resource: "nodes", name: "node-1"}},
		{name: "discovery is no resource", method: http.MethodGet, target: "/apis/apps/v1", wantNotResource: true},
		{name: "the core group's discovery is no resource", method: http.MethodGet, target: "/api/v1", wantNotResource: true},
		{name: "/version is no resource", method: http.MethodGet, target: "/version", wantNotResource: true},
		{name: "a method the API does not serve", method: http.MethodOptions, target: "/api/v1/configmaps", wantNotResource: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parse(tt.method, tt.target)
			assert.Equal(t, !tt.wantNotResource, ok)
			if ok {
				got.query = nil
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

func TestRequestGroupResource(t *testing.T) {
	core, _ := parse(http.MethodGet, "/api/v1/configmaps")
	apps, _ := parse(http.MethodGet, "/apis/apps/v1/deployments")
	assert.Equal(t, schema.GroupResource{Resource: "configmaps"}, core.groupResource())
	assert.Equal(t, schema.GroupResource{Group: "apps", Resource: "deployments"}, apps.groupResource())
}

// A fault selects by its class's verbs, then by every selector set; an
// empty selector selects everything.
func TestFaultSelects(t *testing.T) {
	get, _ := parse(http.MethodGet, "/api/v1/namespaces/shop/configmaps/settings")
	update, _ := parse(http.MethodPut, "/api/v1/namespaces/shop/configmaps/settings")
	status, _ := parse(http.MethodPut, "/apis/apps/v1/namespaces/shop/deployments/web/status")
	create, _ := parse(http.MethodPost, "/api/v1/namespaces/shop/configmaps")
	tests := []struct {
		name  string
		fault Fault
		req   request
		want  bool
	}{
		{name: "an empty selector selects every verb of the class", fault: Fault{Class: Conflict}, req: update, want: true},
		{name: "a class never applies to a verb outside it", fault: Fault{Class: Conflict}, req: get},
		{name: "verbs narrow", fault: Fault{Class: InternalError, Verbs: []string{"update"}}, req: get},
		{name: "a resource selects its subresources", fault: Fault{Class: Conflict, Resources: []string{"deployments"}}, req: status, want: true},
		{name: "a subresource selects itself", fault: Fault{Class: Conflict, Resources: []string{"deployments/status"}}, req: status, want: true},
		{name: "a subresource does not select its resource", fault: Fault{Class: Conflict, Resources: []string{"configmaps/status"}}, req: update},
		{name: "a resource is matched by its plural", fault: Fault{Class: Conflict, Resources: []string{"configmap"}}, req: update},
		{name: "namespaces narrow", fault: Fault{Class: Conflict, Namespaces: []string{"other"}}, req: update},
		{name: "names select the object named", fault: Fault{Class: Conflict, Names: []string{"settings"}}, req: update, want: true},
		{name: "a create names no object", fault: Fault{Class: TimeoutAfterCommit, Names: []string{"settings"}}, req: create},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.fault.selects(tt.req))
		})
	}
}

// Only what a real apiserver may serve stale is, and only a watch that
// resumes from a version can find it compacted away.
func TestRequestMayBeStaleAndResumes(t *testing.T) {
	tests := []struct {
		name, method, target string
		stale, resumes       bool
	}{
		{name: "a consistent list is never stale", method: http.MethodGet, target: "/api/v1/configmaps"},
		{name: "a list from any version may be", method: http.MethodGet, target: "/api/v1/configmaps?resourceVersion=0", stale: true},
		{name: "a list not older than a version may be", method: http.MethodGet, target: "/api/v1/configmaps?resourceVersion=7&resourceVersionMatch=NotOlderThan", stale: true},
		{name: "an exact list is exact", method: http.MethodGet, target: "/api/v1/configmaps?resourceVersion=7&resourceVersionMatch=Exact"},
		{name: "a list's next page continues its first", method: http.MethodGet, target: "/api/v1/configmaps?resourceVersion=7&continue=abc"},
		{name: "a consistent get is never stale", method: http.MethodGet, target: "/api/v1/namespaces/a/configmaps/b"},
		{name: "a get from any version may be", method: http.MethodGet, target: "/api/v1/namespaces/a/configmaps/b?resourceVersion=0", stale: true},
		{name: "a subresource's get is not", method: http.MethodGet, target: "/apis/apps/v1/namespaces/a/deployments/b/scale?resourceVersion=0"},
		{name: "a watch from a version may be and resumes", method: http.MethodGet, target: "/api/v1/configmaps?watch=true&resourceVersion=7", stale: true, resumes: true},
		{name: "a watch from any version does not resume", method: http.MethodGet, target: "/api/v1/configmaps?watch=true&resourceVersion=0", stale: true},
		{name: "a watch list does not resume", method: http.MethodGet,
			target: "/api/v1/configmaps?watch=true&resourceVersion=7&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", stale: true},
		{name: "a write is never stale", method: http.MethodPut, target: "/api/v1/namespaces/a/configmaps/b?resourceVersion=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, ok := parse(tt.method, tt.target)
			assert.True(t, ok)
			assert.Equal(t, tt.stale, r.mayBeStale(), "mayBeStale")
			assert.Equal(t, tt.resumes, r.resumes(), "resumes")
		})
	}
}
