//go:build integration

package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	e2e "github.com/converge-dev/converge/examples/internal/e2e/payloadapply"
	"github.com/converge-dev/converge/payload/manifest"
	"github.com/converge-dev/converge/testenv"
	"github.com/converge-dev/converge/testenv/standin"
)

// env is the etcd and kube-apiserver every integration test of the package shares.
var env *testenv.Environment

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testenv.WithEnvironment(m, &env))
}

const (
	demoNamespace = "converge-payload-demo"
	jobName       = "schema-migrate"
	// pollInterval and pollTimeout bound every wait on the real apiserver.
	pollInterval = 100 * time.Millisecond
	pollTimeout  = 60 * time.Second
)

// testCluster is the test's own view of the environment: the example's dynamic client,
// REST mapper and typed clientset.
type testCluster struct {
	*e2e.Cluster
}

func connect(t *testing.T) *testCluster {
	t.Helper()
	c, err := e2e.RealCluster(env.Kubeconfig)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return &testCluster{Cluster: c}
}

// loadExample loads the example's manifests.
func loadExample(t *testing.T) []manifest.Manifest {
	t.Helper()
	manifests, _, err := e2e.Load(os.DirFS("."))
	require.NoError(t, err)
	return manifests
}

// buildExample builds the example's binary and returns its path.
func buildExample(t *testing.T) string {
	t.Helper()
	binary := filepath.Join(t.TempDir(), "payload-apply")
	built, err := exec.Command("go", "build", "-o", binary, "github.com/converge-dev/converge/examples/payload-apply").CombinedOutput()
	require.NoError(t, err, string(built))
	return binary
}

// runExample runs the example's binary on the environment's apiserver and returns its
// output.
func runExample(t *testing.T, binary string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"-kubeconfig", env.Kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// reset removes what an earlier test left: every object of the payload but its
// Namespace (no namespace controller runs to finish deleting one), the status ConfigMap
// and the Lease. Nothing else needs a controller to go away.
func (c *testCluster) reset(t *testing.T, manifests []manifest.Manifest) {
	t.Helper()
	ctx := context.Background()
	background := metav1.DeletePropagationBackground
	for _, m := range manifests {
		if m.GVK.Kind == "Namespace" {
			continue
		}
		client, err := c.ResourceFor(&m)
		require.NoError(t, err)
		err = client.Delete(ctx, m.Name(), metav1.DeleteOptions{PropagationPolicy: &background})
		require.True(t, err == nil || apierrors.IsNotFound(err), "deleting %s: %v", m.Ref(), err)
	}
	err := c.Typed.CoreV1().ConfigMaps("default").Delete(ctx, e2e.StatusConfigMap, metav1.DeleteOptions{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "deleting the status: %v", err)
	err = c.Typed.CoordinationV1().Leases("default").Delete(ctx, e2e.LeaseName, metav1.DeleteOptions{})
	require.True(t, err == nil || apierrors.IsNotFound(err), "deleting the Lease: %v", err)
}

// live returns the objects of manifests by reference; missing ones are absent.
func (c *testCluster) live(t *testing.T, manifests []manifest.Manifest) map[string]*unstructured.Unstructured {
	t.Helper()
	objects := map[string]*unstructured.Unstructured{}
	for _, m := range manifests {
		client, err := c.ResourceFor(&m)
		require.NoError(t, err)
		obj, err := client.Get(context.Background(), m.Name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		require.NoError(t, err, m.Ref())
		objects[m.Ref()] = obj
	}
	return objects
}

// completeJob plays the job controller, which does not run here: it marks the Job
// Complete through its status subresource, with the fields the apiserver requires of a
// finished Job. It returns the Job's resourceVersion before and after.
func (c *testCluster) completeJob(ctx context.Context) (before, after string, err error) {
	jobs := c.Typed.BatchV1().Jobs(demoNamespace)
	job, err := jobs.Get(ctx, jobName, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	before = job.ResourceVersion
	now := metav1.Now()
	started := metav1.NewTime(now.Add(-time.Second))
	job.Status.StartTime = &started
	job.Status.CompletionTime = &now
	job.Status.Succeeded = 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now, Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods"},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now, Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods"},
	}
	job, err = jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		return before, "", err
	}
	return before, job.ResourceVersion, nil
}

// jobController plays the job and deployment controllers, which do not run here: with
// completeJob it completes the Job as soon as it appears, and it rolls out every
// Deployment of the payload whose current generation is not rolled out yet, until
// stopped.
type jobController struct {
	stop               func()
	mu                 sync.Mutex
	created, completed string
	err                error
}

func (c *testCluster) startJobController(t *testing.T, completeJob bool) *jobController {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	jc := &jobController{}
	var wg sync.WaitGroup
	wg.Go(func() {
		completed := !completeJob
		_ = wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			if err := c.rollOutDeployments(ctx); err != nil && ctx.Err() == nil {
				jc.mu.Lock()
				jc.err = err
				jc.mu.Unlock()
				return true, nil
			}
			if completed {
				return false, nil
			}
			before, after, err := c.completeJob(ctx)
			if apierrors.IsNotFound(err) || ctx.Err() != nil {
				return false, nil
			}
			jc.mu.Lock()
			defer jc.mu.Unlock()
			jc.created, jc.completed, jc.err = before, after, err
			completed = true
			return err != nil, nil
		})
	})
	jc.stop = func() {
		cancel()
		wg.Wait()
	}
	t.Cleanup(jc.stop)
	return jc
}

// rollOutDeployments writes, for every Deployment of the payload whose generation was
// not observed yet, the status the deployment controller writes once it is rolled out
// (standin.RolledOut).
func (c *testCluster) rollOutDeployments(ctx context.Context) error {
	deps := c.Typed.AppsV1().Deployments(demoNamespace)
	list, err := deps.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		dep := &list.Items[i]
		if dep.Status.ObservedGeneration == dep.Generation {
			continue
		}
		dep.Status = standin.RolledOut(dep)
		if _, err := deps.UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// resourceVersions returns the Job's resourceVersion when the controller first saw it
// and after it completed it.
func (jc *jobController) resourceVersions() (created, completed string, err error) {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.created, jc.completed, jc.err
}

// revision reads a resourceVersion as the etcd revision it is on this apiserver, to
// order writes. Clients must treat resourceVersions as opaque; a test of a known
// etcd-backed apiserver may compare them.
func revision(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	require.NoError(t, err, "resourceVersion %q", rv)
	return n
}

// assertContains asserts that every field of want is in got with the same value: the
// live object carries the desired content, plus what the apiserver defaulted. A Secret's
// stringData is compared with its data.
func assertContains(t *testing.T, ref string, want, got *unstructured.Unstructured) {
	t.Helper()
	want = want.DeepCopy()
	if stringData, ok, _ := unstructured.NestedStringMap(want.Object, "stringData"); ok {
		unstructured.RemoveNestedField(want.Object, "stringData")
		data := map[string]any{}
		for k, v := range stringData {
			data[k] = base64.StdEncoding.EncodeToString([]byte(v))
		}
		require.NoError(t, unstructured.SetNestedMap(want.Object, data, "data"))
	}
	if diff := missingFields("", want.Object, got.Object); diff != "" {
		assert.Fail(t, "the live object lacks desired content", "%s: %s", ref, diff)
	}
}

// missingFields describes the first field of want that got lacks or holds differently.
func missingFields(path string, want, got any) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %v", path, got)
		}
		for k, v := range w {
			if d := missingFields(path+"."+k, v, g[k]); d != "" {
				return d
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %v, got %v", path, want, got)
		}
		for i := range w {
			if d := missingFields(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); d != "" {
				return d
			}
		}
	default:
		if want != got {
			return fmt.Sprintf("%s: want %v, got %v", path, want, got)
		}
	}
	return ""
}

// managers returns the field managers of obj.
func managers(obj *unstructured.Unstructured) []string {
	var names []string
	for _, f := range obj.GetManagedFields() {
		names = append(names, f.Manager)
	}
	return names
}
