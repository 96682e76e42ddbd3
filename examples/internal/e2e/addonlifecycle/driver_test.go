package addonlifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/converge-dev/converge/addon"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		key     string
		want    addonRef
		wantErr string
	}{
		{key: "tke/mesh-manager", want: addonRef{namespace: "tke", name: "mesh-manager"}},
		{key: "mesh-manager", wantErr: "not namespace/name"},
		{key: "/mesh", wantErr: "not namespace/name"},
		{key: "tke/Mesh_Manager", wantErr: "cannot name a Service"},
		{key: "tke/0mesh", wantErr: "cannot name a Service"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := parseRef(tt.key)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDriverInstallsLabelledObjectsAndUninstallsThem(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	d := &meshDriver{client: client, dbHost: "db"}
	req := addon.Request{Spec: addon.Spec{Name: "ns/mesh", Version: "v1"}, To: "v1"}
	require.NoError(t, d.install(ctx, req))
	require.NoError(t, d.install(ctx, req), "installing again updates in place")

	want := map[string]string{managedByLabel: managedBy, instanceLabel: "mesh", namespaceLabel: "ns"}
	crb, err := client.RbacV1().ClusterRoleBindings().Get(ctx, "ns:mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, want, crb.Labels)
	sa, err := client.CoreV1().ServiceAccounts("ns").Get(ctx, "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, want, sa.Labels)
	dep, err := client.AppsV1().Deployments("ns").Get(ctx, "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v1", dep.Labels[versionLabel])
	assert.Equal(t, map[string]string{managedByLabel: managedBy, instanceLabel: "mesh"}, dep.Spec.Selector.MatchLabels,
		"the selector leaves out the version, which changes")

	require.NoError(t, d.Uninstall(ctx, req))
	require.NoError(t, d.Uninstall(ctx, req), "removing what is gone succeeds")
	_, err = client.RbacV1().ClusterRoleBindings().Get(ctx, "ns:mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
	_, err = client.AppsV1().Deployments("ns").Get(ctx, "mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))
}

func TestDriverUpgradeRetriesAConflictingWrite(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	d := &meshDriver{client: client, dbHost: "db"}
	spec := addon.Spec{Name: "ns/mesh", Version: "v2"}
	require.NoError(t, d.install(ctx, addon.Request{Spec: addon.Spec{Name: "ns/mesh", Version: "v1"}, To: "v1"}))
	conflicts := 2
	client.PrependReactor("update", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(appsv1.Resource("deployments"), "mesh", nil)
	})

	require.NoError(t, d.upgrade(ctx, addon.Request{Spec: spec, From: "v1", To: "v2"}))
	assert.Zero(t, conflicts)
	dep, err := client.AppsV1().Deployments("ns").Get(ctx, "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "registry.k8s.io/pause:3.10", dep.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, "v2", dep.Labels[versionLabel])
	assert.Equal(t, "v2", dep.Spec.Template.Labels[versionLabel])

	assert.ErrorContains(t, d.upgrade(ctx, addon.Request{Spec: spec, From: "v2", To: "v9"}), `no image for version "v9"`)
}
