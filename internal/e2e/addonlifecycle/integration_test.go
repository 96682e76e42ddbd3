//go:build integration

package addonlifecycle

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/converge-dev/converge/internal/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

// TestControllerReconcilesTwoHundredAddons runs the -kubeconfig controller
// with several workers on a real kube-apiserver (no kube-controller-manager:
// the simulated deployment controller writes the Deployments' status) and
// checks the real objects: 200 Addons install, run, upgrade and are
// deleted, their finalizers go, nothing of theirs is left, and the
// controller leaves no goroutine behind.
func TestControllerReconcilesTwoHundredAddons(t *testing.T) {
	const (
		n       = 200
		workers = 8
		ns      = "fleet"
	)
	baseline := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := newClients(env.Config)
	require.NoError(t, err)
	require.NoError(t, installCRD(ctx, c.dynamic))
	require.NoError(t, setUp(ctx, c.kube, ns))
	hasController, err := hasDeploymentController(ctx, c.kube)
	require.NoError(t, err)
	require.False(t, hasController, "the test environment runs no kube-controller-manager")

	addons := c.dynamic.Resource(addonGVR).Namespace(ns)
	phases := watchPhases(ctx, t, addons)
	r, err := startControllers(ctx, c, workers, true)
	require.NoError(t, err)
	stopped := false
	defer func() {
		if !stopped {
			assert.NoError(t, r.stop())
		}
	}()

	names := fleetNames(n)
	start := time.Now()
	require.NoError(t, createAddons(ctx, addons, names, "v1"))
	eventually(ctx, t, "all Running at v1", func() error { return allRunningAt(ctx, addons, n, "v1", 1) })
	t.Logf("%d Addons created and Running at v1 in %s", n, time.Since(start).Round(time.Millisecond))
	checkInstalled(ctx, t, c, ns, names, "v1", "registry.k8s.io/pause:3.9")

	start = time.Now()
	require.NoError(t, setVersions(ctx, addons, names, "v2"))
	eventually(ctx, t, "all Running at v2", func() error { return allRunningAt(ctx, addons, n, "v2", 2) })
	t.Logf("%d Addons upgraded to v2 in %s", n, time.Since(start).Round(time.Millisecond))
	checkInstalled(ctx, t, c, ns, names, "v2", "registry.k8s.io/pause:3.10")
	eventually(ctx, t, "the decided events recorded on each Addon", func() error {
		return eventsRecorded(ctx, c, ns, names, "Created", "InstallSucceeded", "Healthy", "VersionChanged", "UpgradeSucceeded")
	})

	start = time.Now()
	require.NoError(t, deleteAddons(ctx, addons, names))
	eventually(ctx, t, "all Addons gone", func() error {
		list, err := addons.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d Addons left, the first %s with finalizers %v", len(list.Items), list.Items[0].GetName(), list.Items[0].GetFinalizers())
		}
		return nil
	})
	t.Logf("%d Addons uninstalled and gone in %s", n, time.Since(start).Round(time.Millisecond))
	checkNothingLeft(ctx, t, c, ns)
	require.NoError(t, c.kube.CoreV1().Secrets(ns).Delete(ctx, dbSecretName, metav1.DeleteOptions{}),
		"the Secret is the namespace's, not an add-on's: it stays")

	require.NoError(t, r.stop())
	stopped = true
	conflicts, failures := r.controller.Stats()
	t.Logf("controller: %d conflicts requeued, %d other failed reconciles", conflicts, failures)
	assert.Zero(t, failures)

	history, err := phases.stop()
	require.NoError(t, err)
	for _, name := range names {
		h := history[name]
		require.NotEmpty(t, h, name)
		assert.Equal(t, []string{"Initializing", "Checking", "Running", "Upgrading", "Checking", "Running", "Deleting", "Deleted", "gone"}, compact(h), name)
	}

	eventually(context.Background(), t, "goroutines back to the baseline", func() error {
		// A stream that was still closing when the controllers stopped
		// kept its connection busy: close the connections as they go idle.
		c.closeIdle()
		if g := runtime.NumGoroutine(); g > baseline {
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			return fmt.Errorf("%d goroutines, %d before the controller started:\n%s", g, baseline, stacks.String())
		}
		return nil
	})
}

// TestRunOnTheTestEnvironment runs the -kubeconfig mode as the README
// shows it, on a few Addons: it must finish cleanly and leave nothing.
func TestRunOnTheTestEnvironment(t *testing.T) {
	baseline := runtime.NumGoroutine()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
	require.NoError(t, err)
	c, err := newClients(cfg)
	require.NoError(t, err)
	var out bytes.Buffer
	err = runCluster(context.Background(), c, ClusterOptions{Addons: 5, Workers: 2, Namespace: "run", Timeout: time.Minute}, &out)
	require.NoError(t, err, out.String())
	for _, stage := range []string{"simulating the deployment controller", "created 5 Addons at v1", "all Running at v1", "all Running at v2", "all gone", "nothing left behind", "0 other failed reconciles"} {
		assert.Contains(t, out.String(), stage)
	}
	checkNothingLeft(context.Background(), t, c, "run")
	_, err = c.kube.CoreV1().Secrets("run").Get(context.Background(), dbSecretName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the run removes its Secret: %v", err)
	eventually(context.Background(), t, "goroutines back to the baseline", func() error {
		c.closeIdle()
		if g := runtime.NumGoroutine(); g > baseline {
			return fmt.Errorf("%d goroutines, %d before the run", g, baseline)
		}
		return nil
	})
}

// eventsRecorded checks that each named Addon has Events with every reason.
func eventsRecorded(ctx context.Context, c *clients, ns string, names []string, reasons ...string) error {
	events, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	seen := map[string]map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != addonKind || e.Source.Component != "addon-lifecycle" {
			continue
		}
		if seen[e.InvolvedObject.Name] == nil {
			seen[e.InvolvedObject.Name] = map[string]bool{}
		}
		seen[e.InvolvedObject.Name][e.Reason] = true
	}
	for _, n := range names {
		for _, r := range reasons {
			if !seen[n][r] {
				return fmt.Errorf("no %s event on %s (of %d events)", r, n, len(events.Items))
			}
		}
	}
	return nil
}

// eventually polls check every 100ms until it passes, failing the test
// with check's last error when a minute or ctx end first.
func eventually(ctx context.Context, t *testing.T, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, err)
		case <-tick.C:
		}
	}
}

// allRunningAt checks, on the objects the apiserver returns, that there are
// n Addons, each at generation, carrying the finalizer, Running version
// with the Ready condition True, and a status that observed generation.
func allRunningAt(ctx context.Context, addons dynamic.ResourceInterface, n int, version string, generation int64) error {
	list, err := addons.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) != n {
		return fmt.Errorf("%d Addons, want %d", len(list.Items), n)
	}
	for _, a := range list.Items {
		phase, _, _ := unstructured.NestedString(a.Object, "status", "phase")
		installed, _, _ := unstructured.NestedString(a.Object, "status", "installedVersion")
		observed, _, _ := unstructured.NestedInt64(a.Object, "status", "observedGeneration")
		switch {
		case a.GetGeneration() != generation:
			return fmt.Errorf("%s at generation %d, want %d", a.GetName(), a.GetGeneration(), generation)
		case !slices.Contains(a.GetFinalizers(), finalizer):
			return fmt.Errorf("%s has no finalizer: %v", a.GetName(), a.GetFinalizers())
		case phase != "Running" || installed != version:
			return fmt.Errorf("%s in phase %q at %q, want Running at %s", a.GetName(), phase, installed, version)
		case observed != a.GetGeneration():
			return fmt.Errorf("%s: status observed generation %d, metadata.generation %d", a.GetName(), observed, a.GetGeneration())
		case conditionStatus(&a, "Ready") != "True":
			return fmt.Errorf("%s: Ready is %q", a.GetName(), conditionStatus(&a, "Ready"))
		}
	}
	return nil
}

func conditionStatus(obj *unstructured.Unstructured, condType string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// checkInstalled checks every add-on's ServiceAccount, Service,
// ClusterRoleBinding and Deployment, the Deployment at version and image,
// owned by its Addon and reading the password from the Secret.
func checkInstalled(ctx context.Context, t *testing.T, c *clients, ns string, names []string, version, img string) {
	t.Helper()
	addons := c.dynamic.Resource(addonGVR).Namespace(ns)
	for _, name := range names {
		a, err := addons.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		_, err = c.kube.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "service account %s", name)
		_, err = c.kube.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "service %s", name)
		crb, err := c.kube.RbacV1().ClusterRoleBindings().Get(ctx, ns+":"+name, metav1.GetOptions{})
		require.NoError(t, err, "cluster role binding of %s", name)
		require.Len(t, crb.Subjects, 1)
		assert.Equal(t, name, crb.Subjects[0].Name)
		dep, err := c.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "deployment %s", name)
		assert.Equal(t, version, dep.Labels[versionLabel], name)
		assert.Equal(t, version, dep.Spec.Template.Labels[versionLabel], name)
		require.Len(t, dep.Spec.Template.Spec.Containers, 1)
		ctr := dep.Spec.Template.Spec.Containers[0]
		assert.Equal(t, img, ctr.Image, name)
		require.Len(t, ctr.Env, 1)
		require.NotNil(t, ctr.Env[0].ValueFrom)
		assert.Equal(t, dbSecretName, ctr.Env[0].ValueFrom.SecretKeyRef.Name)
		if assert.Len(t, dep.OwnerReferences, 1, name) {
			assert.Equal(t, a.GetUID(), dep.OwnerReferences[0].UID, name)
		}
	}
}

// checkNothingLeft fails for any ServiceAccount, Service, Deployment or
// ClusterRoleBinding the driver made that still exists.
func checkNothingLeft(ctx context.Context, t *testing.T, c *clients, ns string) {
	t.Helper()
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{managedByLabel: managedBy}).String()}
	sas, err := c.kube.CoreV1().ServiceAccounts(metav1.NamespaceAll).List(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, sas.Items, "service accounts")
	svcs, err := c.kube.CoreV1().Services(metav1.NamespaceAll).List(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, svcs.Items, "services")
	deps, err := c.kube.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, deps.Items, "deployments")
	crbs, err := c.kube.RbacV1().ClusterRoleBindings().List(ctx, opts)
	require.NoError(t, err)
	assert.Empty(t, crbs.Items, "cluster role bindings")
}

// phaseWatch records, from a watch on the Addons, every phase each one was
// written with, and "gone" when it is deleted.
type phaseWatch struct {
	w       watch.Interface
	done    chan struct{}
	mu      sync.Mutex
	history map[string][]string
	err     error
	stopped bool // events after Stop (the closed stream's error) are not the apiserver's
}

func watchPhases(ctx context.Context, t *testing.T, addons dynamic.ResourceInterface) *phaseWatch {
	t.Helper()
	w, err := addons.Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	p := &phaseWatch{w: w, done: make(chan struct{}), history: map[string][]string{}}
	go func() {
		defer close(p.done)
		for ev := range w.ResultChan() {
			p.record(ev)
		}
	}()
	return p
}

func (p *phaseWatch) record(ev watch.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	obj, ok := ev.Object.(*unstructured.Unstructured)
	if !ok {
		p.err = fmt.Errorf("watch event %s of %T: %v", ev.Type, ev.Object, ev.Object)
		return
	}
	if ev.Type == watch.Deleted {
		p.history[obj.GetName()] = append(p.history[obj.GetName()], "gone")
		return
	}
	if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase != "" {
		p.history[obj.GetName()] = append(p.history[obj.GetName()], phase)
	}
}

// stop ends the watch, waits for its goroutine and returns the history.
func (p *phaseWatch) stop() (map[string][]string, error) {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.w.Stop()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.history, p.err
}

// compact drops consecutive repeats.
func compact(phases []string) []string {
	return slices.Compact(slices.Clone(phases))
}
