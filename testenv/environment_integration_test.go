//go:build integration

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestStartStopLeavesNothing starts a real etcd and kube-apiserver, uses
// them through both the rest.Config and the kubeconfig file, stops them, and
// checks that no process and no temporary directory is left.
func TestStartStopLeavesNothing(t *testing.T) {
	ctx := context.Background()
	env, err := Start(ctx)
	require.NoError(t, err)
	pids, dir := env.processIDs(), env.Dir
	require.Len(t, pids, 2)

	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "testenv"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	fromFile, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	require.NoError(t, err)
	cs2, err := kubernetes.NewForConfig(fromFile)
	require.NoError(t, err)
	ns, err := cs2.CoreV1().Namespaces().Get(ctx, "testenv", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "testenv", ns.Name)
	require.NoError(t, env.Stop())
	require.NoError(t, env.Stop(), "Stop is idempotent")

	for _, pid := range pids {
		assert.True(t, errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "process %d is still there", pid)
	}
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "temporary directory %s is still there", dir)
}

// The apiserver enforces OwnerReferencesPermissionEnforcement: a user who
// may create ConfigMaps but not update its owner's finalizers cannot set
// blockOwnerDeletion on an owner reference, and may set one without it.
func TestStartEnforcesOwnerReferencePermissions(t *testing.T) {
	ctx := context.Background()
	env, err := Start(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, env.Stop()) }()
	admin, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	owner, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owners"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "configmap-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "configmap-writer"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "writer"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "writer"}
	writer, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	blocking := true
	tests := []struct {
		name          string
		block         *bool
		wantForbidden bool
	}{
		{name: "an owner reference without blockOwnerDeletion is allowed"},
		{name: "blockOwnerDeletion without update on the owner's finalizers is forbidden", block: &blocking, wantForbidden: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := writer.CoreV1().ConfigMaps("owners").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("owned-%d", i),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Namespace", Name: owner.Name, UID: owner.UID,
					BlockOwnerDeletion: tt.block}},
			}}, metav1.CreateOptions{})
			if !tt.wantForbidden {
				require.NoError(t, err)
				return
			}
			assert.True(t, apierrors.IsForbidden(err), "%v", err)
			assert.ErrorContains(t, err, "can't set finalizers on")
		})
	}
}
