//go:build integration

package helmconverge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	helmconverge "github.com/converge-dev/converge/contrib/helm"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/testenv/standin"
)

// runPods stands in for the kubelet of the namespace's hook and test pods:
// a pod that has not run yet ends Succeeded, or Failed when annotated with a
// non-zero converge.dev/simulated-exit-code. It runs until ctx ends.
func runPods(ctx context.Context, client kubernetes.Interface, namespace string) error {
	for ctx.Err() == nil {
		w, err := client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
				continue
			}
			pod.Status.Phase = corev1.PodSucceeded
			if pod.Annotations["converge.dev/simulated-exit-code"] != "0" {
				pod.Status.Phase = corev1.PodFailed
			}
			if _, err := client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
				w.Stop()
				return err
			}
		}
	}
	return nil
}

// TestIntegrationHelmLifecycle: on the real apiserver, with Helm's Secret
// storage, addon.Machine installs the chart, waits for its Deployment (the
// simulated deployment controller), runs its tests, upgrades it, rolls a
// failed upgrade (a failing pre-upgrade hook) back to the revision of the
// last good version, corrects drift, fences out a late upgrade under an
// older token, and uninstalls it.
func TestIntegrationHelmLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	const ns = "tke"
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	simCtx, stopSim := context.WithCancel(ctx)
	var wg sync.WaitGroup
	simErrs := make([]error, 2)
	wg.Go(func() {
		simErrs[0] = standin.Deployments{Client: client, Selector: "app.kubernetes.io/name=mesh"}.Run(simCtx)
	})
	wg.Go(func() { simErrs[1] = runPods(simCtx, client, ns) })
	defer func() {
		stopSim()
		wg.Wait()
		for _, err := range simErrs {
			assert.NoError(t, err)
		}
	}()

	cluster, err := helmconverge.NewCluster(env.Config)
	require.NoError(t, err)
	mesh, err := helmconverge.LoadDir("testdata/mesh")
	require.NoError(t, err)
	values := map[string]map[string]any{}
	version := func(v map[string]any) string {
		s, err := helmconverge.Version(mesh, v)
		require.NoError(t, err)
		values[s] = v
		return s
	}
	v1, v2 := version(map[string]any{"replicas": 1, "password": "first-password"}), version(map[string]any{"replicas": 2, "password": "second-password"})
	bad := version(map[string]any{"replicas": 3, "password": "second-password", "failHook": true})
	driver, err := helmconverge.NewDriver(helmconverge.Config{
		Cluster: cluster,
		Charts: func(_ context.Context, req addon.Request) (helmconverge.Chart, error) {
			v, ok := values[req.To]
			if !ok {
				return helmconverge.Chart{}, fmt.Errorf("no version %s", req.To)
			}
			return helmconverge.Chart{Chart: mesh, Values: v}, nil
		},
	})
	require.NoError(t, err)

	store := &fake.AddonStore{}
	spec := addon.Spec{Name: ns + "/mesh", Generation: 1, Version: v1}
	store.Put(addon.Object{Spec: spec})
	clock := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	m, err := addon.NewMachine(addon.Config{Driver: driver, Store: store, Owner: "integration", Clock: clock, Jitter: func() float64 { return 0 },
		Policy: addon.Policy{Test: addon.TestPolicy{Enable: true}, Drift: addon.DriftCorrect, ActionTimeout: metav1.Duration{Duration: time.Minute}}})
	require.NoError(t, err)
	status := func() addon.Status {
		obj, err := store.Get(ctx, spec.Name)
		require.NoError(t, err)
		return obj.Status
	}
	// reach reconciles (stepping the engine's clock as each result asks,
	// polling while the simulated controllers work) until done holds.
	reach := func(what string, done func(addon.Status) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			obj, err := store.Get(ctx, spec.Name)
			if err != nil {
				return false, err
			}
			res, err := m.Reconcile(ctx, obj)
			if err != nil {
				return false, err
			}
			clock.Step(res.RequeueAfter)
			return done(status()), nil
		})
		require.NoError(t, err, "%s: status %+v", what, status())
	}
	running := func(v string) func(addon.Status) bool {
		return func(s addon.Status) bool { return s.Phase == addon.PhaseRunning && s.InstalledVersion == v }
	}
	replicas := func() int32 {
		dep, err := client.AppsV1().Deployments(ns).Get(ctx, "mesh", metav1.GetOptions{})
		require.NoError(t, err)
		return *dep.Spec.Replicas
	}
	update := func(f func(*addon.Spec)) {
		_, ok := store.Update(spec.Name, f)
		require.True(t, ok)
	}

	reach("install", running(v1))
	st := status()
	assert.Equal(t, "1", st.LastGoodRevision)
	assert.Equal(t, metav1.ConditionTrue, findCondition(st, addon.TypeTestSuccess), "the chart's test pod ran")
	helmSecrets, err := client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=mesh"})
	require.NoError(t, err)
	assert.Len(t, helmSecrets.Items, 1, "Helm's release storage is Secrets on the apiserver")

	update(func(s *addon.Spec) { s.Generation, s.Version = 2, v2 })
	reach("upgrade", running(v2))
	assert.Equal(t, int32(2), replicas())
	assert.Equal(t, "2", status().LastGoodRevision)

	update(func(s *addon.Spec) { s.Generation, s.Version = 3, bad })
	reach("failed upgrade rolled back", func(s addon.Status) bool {
		return s.Phase == addon.PhaseRunning && s.FailedVersion == bad && s.InstalledVersion == v2
	})
	st = status()
	assert.Equal(t, "4", st.InstalledRevision, "revision 3 failed; the rollback to revision 2 is revision 4")
	assert.Equal(t, int32(2), replicas())
	var history []string
	for _, a := range st.History {
		history = append(history, string(a.Action)+"@"+a.Revision+" "+string(a.Outcome))
	}
	assert.Contains(t, history, "Upgrade@3 Failed")
	assert.Contains(t, history, "Rollback@4 Succeeded")

	update(func(s *addon.Spec) { s.Generation, s.Version = 4, v2 })
	reach("back on the good version", running(v2))
	patch := []byte(`{"spec":{"replicas":5}}`)
	_, err = client.AppsV1().Deployments(ns).Patch(ctx, "mesh", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-edit"})
	require.NoError(t, err)
	reach("drift corrected", func(s addon.Status) bool {
		return s.Phase == addon.PhaseRunning && findCondition(s, addon.TypeDrifted) == metav1.ConditionFalse && replicas() == 2
	})
	assert.Contains(t, fmt.Sprint(status().History), "Upgrade", "the correction is a re-apply")

	// A replica that paused past its claim resumes with an older fencing
	// token: Helm's Secret storage carries each revision's token, and its
	// late upgrade writes nothing.
	helmSecrets, err = client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=mesh,converge.dev/fence"})
	require.NoError(t, err)
	assert.NotEmpty(t, helmSecrets.Items, "every revision is labelled with its claim's token")
	late := addon.Request{Spec: spec, From: v2, To: v1, Fence: 1}
	_, err = driver.Upgrade(ctx, late)
	require.ErrorIs(t, err, helmconverge.ErrFenced)
	assert.Equal(t, int32(2), replicas())
	inst, err := driver.Inspect(ctx, addon.Request{Spec: spec, From: v2, To: v2})
	require.NoError(t, err)
	assert.Equal(t, v2, inst.Version, "Inspect reads the deployed revision from the Secrets")

	update(func(s *addon.Spec) { s.Deleting = true })
	reach("uninstalled", func(s addon.Status) bool { return s.Phase == addon.PhaseDeleted })
	_, err = client.AppsV1().Deployments(ns).Get(ctx, "mesh", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the Deployment is gone")
	helmSecrets, err = client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=mesh"})
	require.NoError(t, err)
	assert.Empty(t, helmSecrets.Items, "and so are the release's records")
}

func findCondition(s addon.Status, typ string) metav1.ConditionStatus {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}
