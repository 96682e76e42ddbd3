package crconverge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
	"github.com/converge-dev/converge/kube"
)

// tenantOptions are the options of a controller of TenantRollouts, which
// name their own operand and namespace.
func tenantOptions() RolloutOptions {
	opts := rolloutOptions()
	opts.For, opts.Pods = &testapi.TenantRollout{}, kube.RolloutPodsConfig{InstallerPod: installerTemplate}
	return opts
}

func tenantRollout(ns, name, operand string, revision int32) *testapi.TenantRollout {
	ro := &testapi.TenantRollout{Rollout: testapi.Rollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}}
	ro.Spec.Revision, ro.Spec.Operand = revision, operand
	return ro
}

// elsewhereRollout is a TenantRollout whose pods live in the namespace
// "shared", with the owner it names.
type elsewhereRollout struct {
	testapi.TenantRollout
	owner *metav1.OwnerReference
}

func (e *elsewhereRollout) RolloutPods(base kube.RolloutPodsConfig) kube.RolloutPodsConfig {
	base.Namespace, base.Operand = "shared", "etcd"
	if e.owner != nil {
		base.Owner = e.owner
	}
	return base
}

func (e *elsewhereRollout) DeepCopyObject() runtime.Object {
	return &elsewhereRollout{TenantRollout: *e.TenantRollout.DeepCopyObject().(*testapi.TenantRollout), owner: e.owner}
}

func TestRolloutPodsConfigPerObject(t *testing.T) {
	mgr, _ := testManager(t, newTestClient(t), nil)
	operator := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "operator", UID: "uid-operator"}
	cluster := testRollout("etcd", 1)
	cluster.UID = "uid-etcd"
	tests := []struct {
		name          string
		opts          func(*RolloutOptions)
		obj           RolloutObject
		wantNamespace string
		wantOwner     *metav1.OwnerReference
		wantErr       string
	}{
		{name: "an object without its own configuration has the controller's, and owns its installers", obj: cluster,
			wantNamespace: "operand", wantOwner: ownerRef("Rollout", "etcd", "uid-etcd")},
		{name: "the controller's owner is kept", opts: func(o *RolloutOptions) { o.Pods.Owner = operator }, obj: cluster,
			wantNamespace: "operand", wantOwner: operator},
		{name: "an object's own configuration names its namespace, and it owns the pods there",
			opts: func(o *RolloutOptions) { *o = tenantOptions() }, obj: tenantRollout("team-a", "etcd", "etcd", 1),
			wantNamespace: "team-a", wantOwner: ownerRef("TenantRollout", "etcd", "uid-team-a-etcd")},
		{name: "a namespaced object does not own pods in another namespace: an owner reference across namespaces is invalid",
			opts: func(o *RolloutOptions) { *o = tenantOptions() }, obj: &elsewhereRollout{TenantRollout: *tenantRollout("team-a", "etcd", "", 1)},
			wantNamespace: "shared"},
		{name: "an object that names another owner keeps it", opts: func(o *RolloutOptions) { *o = tenantOptions() },
			obj: &elsewhereRollout{TenantRollout: *tenantRollout("team-a", "etcd", "", 1), owner: operator}, wantNamespace: "shared", wantOwner: operator},
		{name: "an object that names itself the owner of pods in another namespace is invalid", opts: func(o *RolloutOptions) { *o = tenantOptions() },
			obj:     &elsewhereRollout{TenantRollout: *tenantRollout("team-a", "etcd", "", 1), owner: ownerRef("TenantRollout", "etcd", "uid-team-a-etcd")},
			wantErr: `TenantRollout etcd in namespace "team-a" cannot own pods in namespace "shared"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := rolloutOptions()
			if tt.opts != nil {
				tt.opts(&opts)
			}
			r, _, err := newRolloutReconciler(mgr, opts)
			require.NoError(t, err)
			cfg, err := r.podsConfig(tt.obj)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, converge.ErrInvalid)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantNamespace, cfg.Namespace)
			assert.Equal(t, tt.wantOwner, cfg.Owner)
		})
	}
	t.Run("an object's configuration shares no owner with the controller's", func(t *testing.T) {
		opts := rolloutOptions()
		opts.Pods.Owner = operator.DeepCopy()
		r, _, err := newRolloutReconciler(mgr, opts)
		require.NoError(t, err)
		cfg, err := r.podsConfig(cluster)
		require.NoError(t, err)
		cfg.Owner.Name = "changed"
		assert.Equal(t, operator, opts.Pods.Owner)
	})
}

// ownerRef is the controller owner reference of a testapi object.
func ownerRef(kind, name string, uid types.UID) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: testapi.GroupVersion.String(), Kind: kind, Name: name, UID: uid,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// TestRolloutControllerWithPodsPerObject: each object's installers run in
// the namespace it names, read its own operand, and are owned by it; a pod
// maps to the rollouts whose pods live in its namespace.
func TestRolloutControllerWithPodsPerObject(t *testing.T) {
	ctx := context.Background()
	a, b := tenantRollout("team-a", "kv", "kv", 1), tenantRollout("team-b", "db", "db", 2)
	c := newTestClient(t, readyNode("n", corev1.ConditionTrue, nil), a, b)
	mgr, _ := testManager(t, c, nil)
	ctrl, err := NewRolloutController(mgr, tenantOptions())
	require.NoError(t, err)
	for _, ro := range []*testapi.TenantRollout{a, b} {
		_, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(ro)})
		require.NoError(t, err)
	}
	for _, want := range []struct {
		ns, name string
		owner    *metav1.OwnerReference
	}{
		{ns: "team-a", name: "installer-1-n", owner: ownerRef("TenantRollout", "kv", a.UID)},
		{ns: "team-b", name: "installer-2-n", owner: ownerRef("TenantRollout", "db", b.UID)},
	} {
		pod := &corev1.Pod{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: want.ns, Name: want.name}, pod))
		assert.Equal(t, []metav1.OwnerReference{*want.owner}, pod.OwnerReferences, "%s/%s", want.ns, want.name)
	}

	// The fake client lists no object whose status was written as
	// unstructured: map on a client of the objects as they were.
	unwritten, _ := testManager(t, newTestClient(t, tenantRollout("team-a", "kv", "kv", 1), tenantRollout("team-b", "db", "db", 2)), nil)
	_, bp, err := newRolloutReconciler(unwritten, tenantOptions())
	require.NoError(t, err)
	pod := func(ns string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kv-n"}}
	}
	assert.Equal(t, []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(a)}}, enqueued(t, watchOf(t, bp, pod("team-a")), pod("team-a")),
		"a pod maps to the rollout whose pods live in its namespace")
	assert.Empty(t, enqueued(t, watchOf(t, bp, pod("operand")), pod("operand")), "a pod where no rollout's pods live maps to none")
}
