package addonlifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

	"github.com/converge-dev/converge/addon"
)

// controllerRig drives a controller's reconcile by hand on fake clients:
// sync copies the Addon from the fake apiserver into the informer's cache,
// as the informer would, and step reconciles it once.
type controllerRig struct {
	t        *testing.T
	kube     *kubefake.Clientset
	dyn      *dynamicfake.FakeDynamicClient
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	c        *controller
}

func newControllerRig(t *testing.T) *controllerRig {
	t.Helper()
	obj := newAddon("ns", "mesh", "v1")
	obj.SetGeneration(1)
	r := &controllerRig{
		t:        t,
		kube:     kubefake.NewClientset(),
		dyn:      dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{addonGVR: "AddonList"}, obj),
		clock:    clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)),
		recorder: record.NewFakeRecorder(100),
	}
	c, err := newController(controllerConfig{Kube: r.kube, Dynamic: r.dyn, Recorder: r.recorder, Policy: clusterPolicy, Workers: 1, Clock: r.clock})
	require.NoError(t, err)
	t.Cleanup(c.queue.ShutDown)
	r.c = c
	r.sync()
	return r
}

func (r *controllerRig) get() *unstructured.Unstructured {
	r.t.Helper()
	obj, err := r.dyn.Resource(addonGVR).Namespace("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(r.t, err)
	return obj
}

func (r *controllerRig) sync() {
	r.t.Helper()
	require.NoError(r.t, r.c.informer.GetIndexer().Update(r.get()))
}

func (r *controllerRig) step() (addon.Result, error) {
	r.t.Helper()
	return r.c.reconcile(context.Background(), "ns/mesh")
}

func (r *controllerRig) phase() string {
	r.t.Helper()
	p, _, _ := unstructured.NestedString(r.get().Object, "status", "phase")
	return p
}

// rollOut writes the status the deployment controller would.
func (r *controllerRig) rollOut() {
	r.t.Helper()
	deps := r.kube.AppsV1().Deployments("ns")
	dep, err := deps.Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(r.t, err)
	dep.Status = rolledOut(dep)
	_, err = deps.UpdateStatus(context.Background(), dep, metav1.UpdateOptions{})
	require.NoError(r.t, err)
}

func TestControllerHoldsTheFinalizerUntilUninstalled(t *testing.T) {
	r := newControllerRig(t)

	_, err := r.step()
	require.NoError(t, err)
	assert.Equal(t, []string{finalizer}, r.get().GetFinalizers(), "added before the install")
	assert.Equal(t, "Checking", r.phase())
	dep, err := r.kube.AppsV1().Deployments("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "v1", dep.Labels[versionLabel])
	require.Len(t, dep.OwnerReferences, 1)
	assert.Equal(t, "mesh", dep.OwnerReferences[0].Name)
	assert.Equal(t, addonKind, dep.OwnerReferences[0].Kind)

	r.rollOut()
	r.sync()
	res, err := r.step()
	require.NoError(t, err)
	assert.Equal(t, "Running", r.phase())
	assert.Equal(t, clusterPolicy.RunningInterval.Duration, res.RequeueAfter)

	// The object is deleted: the apiserver sets the deletion timestamp and
	// keeps it while the finalizer is there.
	obj := r.get()
	now := metav1.NewTime(r.clock.Now())
	obj.SetDeletionTimestamp(&now)
	_, err = r.dyn.Resource(addonGVR).Namespace("ns").Update(context.Background(), obj, metav1.UpdateOptions{})
	require.NoError(t, err)
	r.sync()
	res, err = r.step()
	require.NoError(t, err)
	assert.True(t, res.Deleted)
	assert.Empty(t, r.get().GetFinalizers(), "dropped once uninstalled")
	assert.Equal(t, "Deleted", r.phase())
	_, err = r.kube.AppsV1().Deployments("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "deployment uninstalled: %v", err)
	_, err = r.kube.RbacV1().ClusterRoleBindings().Get(context.Background(), "ns:mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "cluster role binding uninstalled: %v", err)

	close(r.recorder.Events)
	var reasons []string
	for e := range r.recorder.Events {
		reasons = append(reasons, strings.Fields(e)[1])
	}
	assert.Equal(t, []string{"Created", "InstallSucceeded", "Healthy", "DeletionRequested", "UninstallSucceeded"}, reasons)
}

func TestControllerRereadsAConflictAndLosesNothing(t *testing.T) {
	r := newControllerRig(t)
	conflicts := 1
	r.dyn.PrependReactor("update", "addons", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(addonGVR.GroupResource(), "mesh", nil)
	})

	r.c.queue.Add("ns/mesh")
	require.True(t, r.c.processNext(context.Background()))
	c, failures := r.c.Stats()
	assert.Zero(t, c, "the engine re-read the Addon itself")
	assert.Zero(t, failures)
	assert.Zero(t, conflicts)
	assert.Equal(t, "Checking", r.phase(), "the install ran once its claim was written over the fresh copy")
	_, err := r.kube.AppsV1().Deployments("ns").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Len(t, r.recorder.Events, 2, "Created and InstallSucceeded, once each")
}
