package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/examples/internal/e2e/addonlifecycle"
)

func TestTheStoryGoesThroughEveryTransition(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run(context.Background(), nil, &stdout, &stderr), stderr.String())
	var reasons []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] != "--" && f[1] != "reason" && f[0] != "done:" {
			reasons = append(reasons, f[1])
		}
	}
	assert.Equal(t, []string{
		"Created", "InstallFailed", "UninstallSucceeded", "InstallSucceeded", "Healthy",
		"VersionChanged", "UpgradeSucceeded", "Healthy",
		"VersionChanged", "UpgradeSucceeded", "UpgradeFailed", "RollbackSucceeded", "Healthy",
		"DeletionRequested", "UninstallSucceeded",
	}, reasons)
	assert.Contains(t, stdout.String(), "11s  InstallSucceeded", "the retry waited for the backoff")
	assert.Contains(t, stdout.String(), "rollback from v3 to v2")
	assert.Contains(t, stdout.String(), "done: v3 failed and was rolled back to v2, then uninstalled")
}

// rig runs the program's reconcile on fake clients, one Addon ns/mesh at
// a time, as the work queue would.
type rig struct {
	t        *testing.T
	cluster  *addonlifecycle.Cluster
	kube     *kubefake.Clientset
	dyn      *dynamicfake.FakeDynamicClient
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	r        *reconciler
}

const runningInterval = time.Minute

func newRig(t *testing.T) *rig {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": "v1"}}}
	obj.SetAPIVersion(addonlifecycle.AddonResource.GroupVersion().String())
	obj.SetKind("Addon")
	obj.SetNamespace("ns")
	obj.SetName("mesh")
	obj.SetGeneration(1)
	x := &rig{
		t:        t,
		kube:     kubefake.NewClientset(),
		dyn:      dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{addonlifecycle.AddonResource: "AddonList"}, obj),
		clock:    clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)),
		recorder: record.NewFakeRecorder(100),
	}
	x.cluster = &addonlifecycle.Cluster{Kube: x.kube, Dynamic: x.dyn, Clock: x.clock,
		Policy: addon.Policy{RunningInterval: metav1.Duration{Duration: runningInterval}}}
	r, err := newReconciler(x.cluster, x.recorder)
	require.NoError(t, err)
	x.r = r
	return x
}

func (x *rig) get() *unstructured.Unstructured {
	x.t.Helper()
	obj, err := x.dyn.Resource(addonlifecycle.AddonResource).Namespace("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(x.t, err)
	return obj
}

func (x *rig) step() (addon.Result, error) {
	x.t.Helper()
	return x.r.reconcile(context.Background(), x.get())
}

func (x *rig) phase() string {
	x.t.Helper()
	p, _, _ := unstructured.NestedString(x.get().Object, "status", "phase")
	return p
}

// rollOut writes the status the deployment controller would.
func (x *rig) rollOut() {
	x.t.Helper()
	deps := x.kube.AppsV1().Deployments("ns")
	dep, err := deps.Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(x.t, err)
	n := ptr.Deref(dep.Spec.Replicas, 1)
	dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	_, err = deps.UpdateStatus(context.Background(), dep, metav1.UpdateOptions{})
	require.NoError(x.t, err)
}

func (x *rig) reasons() []string {
	x.t.Helper()
	close(x.recorder.Events)
	var reasons []string
	for e := range x.recorder.Events {
		reasons = append(reasons, strings.Fields(e)[1])
	}
	return reasons
}

func TestReconcileHoldsTheFinalizerUntilUninstalled(t *testing.T) {
	x := newRig(t)

	res, err := x.step()
	require.NoError(t, err)
	assert.Equal(t, []string{addonlifecycle.Finalizer}, x.get().GetFinalizers(), "added before the install")
	assert.Equal(t, "Checking", x.phase())
	dep, err := x.kube.AppsV1().Deployments("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, dep.OwnerReferences, 1, "the Addon travels to the driver")
	assert.Equal(t, "mesh", dep.OwnerReferences[0].Name)
	assert.Equal(t, "Addon", dep.OwnerReferences[0].Kind)

	x.rollOut()
	x.clock.Step(res.RequeueAfter)
	res, err = x.step()
	require.NoError(t, err)
	assert.Equal(t, "Running", x.phase())
	assert.Equal(t, runningInterval, res.RequeueAfter)

	// The object is deleted: the apiserver sets the deletion timestamp and
	// keeps it while the finalizer is there.
	obj := x.get()
	now := metav1.NewTime(x.clock.Now())
	obj.SetDeletionTimestamp(&now)
	_, err = x.dyn.Resource(addonlifecycle.AddonResource).Namespace("ns").Update(context.Background(), obj, metav1.UpdateOptions{})
	require.NoError(t, err)
	res, err = x.step()
	require.NoError(t, err)
	assert.True(t, res.Deleted)
	assert.Empty(t, x.get().GetFinalizers(), "dropped once uninstalled")
	assert.Equal(t, "Deleted", x.phase())
	_, err = x.kube.AppsV1().Deployments("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deployment uninstalled: %v", err)
	_, err = x.kube.RbacV1().ClusterRoleBindings().Get(context.Background(), "ns:mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "cluster role binding uninstalled: %v", err)
	assert.Equal(t, []string{"Created", "InstallSucceeded", "Healthy", "DeletionRequested", "UninstallSucceeded"}, x.reasons())
}

func TestReconcileLeavesAnAddonDeletedBeforeItsInstallAlone(t *testing.T) {
	x := newRig(t)
	obj := x.get()
	now := metav1.NewTime(x.clock.Now())
	obj.SetDeletionTimestamp(&now)

	res, err := x.r.reconcile(context.Background(), obj)
	require.NoError(t, err)
	assert.Equal(t, addon.Result{}, res)
	assert.Empty(t, x.get().GetFinalizers())
	deps, err := x.kube.AppsV1().Deployments("ns").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, deps.Items, "nothing installed")
	assert.Empty(t, x.reasons())
}

func TestReconcileRereadsAConflictAndLosesNothing(t *testing.T) {
	x := newRig(t)
	conflicts := 1
	x.dyn.PrependReactor("update", "addons", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(addonlifecycle.AddonResource.GroupResource(), "mesh", nil)
	})

	_, err := x.step()
	require.NoError(t, err, "the engine re-read the Addon itself")
	assert.Zero(t, conflicts)
	assert.Equal(t, "Checking", x.phase(), "the install ran once its claim was written over the fresh copy")
	_, err = x.kube.AppsV1().Deployments("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"Created", "InstallSucceeded"}, x.reasons(), "once each")
}

func TestReconcileRefusesAStatusItCannotRead(t *testing.T) {
	x := newRig(t)
	obj := x.get()
	obj.Object["status"] = map[string]any{"phase": int64(3)}

	_, err := x.r.reconcile(context.Background(), obj)
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.Empty(t, x.reasons())
}
