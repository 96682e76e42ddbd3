package kube

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/converge-dev/converge"
)

// allows reports whether role grants verb on group/resource.
func allows(role *rbacv1.ClusterRole, group, resource, verb string) bool {
	for _, r := range role.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			return true
		}
	}
	return false
}

// The shipped roles grant what each adapter's doc says it needs, including
// the three a least-privilege role missed on a real API server: finalizers
// for blockOwnerDeletion, create beside patch for server-side apply, and
// events for leader election.
func TestRBACGrantsWhatTheAdaptersNeed(t *testing.T) {
	tests := []struct {
		engine string
		needs  [][3]string
	}{
		{engine: "rollout", needs: [][3]string{
			{"", "pods", "create"}, {"", "pods", "delete"}, {"", "pods", "watch"}, {"", "nodes", "list"},
			{"", "configmaps", "get"}, {"", "configmaps", "create"}, {"", "configmaps", "update"}, {"example.com", "rollouts/finalizers", "update"},
			{"events.k8s.io", "events", "create"},
		}},
		{engine: "addon", needs: [][3]string{
			{"example.com", "addons", "get"}, {"example.com", "addons/status", "update"}, {"example.com", "addons/finalizers", "update"},
			{"events.k8s.io", "events", "create"},
		}},
		{engine: "payload", needs: [][3]string{
			{"", "configmaps", "create"}, {"", "configmaps", "patch"}, {"apps", "deployments", "create"}, {"apps", "deployments", "patch"},
			{"batch", "jobs", "get"}, {"apiextensions.k8s.io", "customresourcedefinitions", "patch"},
			{"coordination.k8s.io", "leases", "update"}, {"", "events", "create"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.engine, func(t *testing.T) {
			role, err := RBAC(tt.engine)
			require.NoError(t, err)
			assert.Equal(t, "converge-"+tt.engine, role.Name)
			for _, n := range tt.needs {
				assert.True(t, allows(role, n[0], n[1], n[2]), "%s needs %s on %s/%s", tt.engine, n[2], n[0], n[1])
			}
		})
	}
	_, err := RBAC("nope")
	assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
}
