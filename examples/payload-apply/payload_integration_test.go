//go:build integration

package main

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	e2e "github.com/converge-dev/converge/examples/internal/e2e/payloadapply"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestPayloadAgainstAPIServer installs the payload with server-side apply on a real
// kube-apiserver, restarts the example (which reconciles and writes nothing), then
// updates to a new release, which rewrites every object run level by run level.
func TestPayloadAgainstAPIServer(t *testing.T) {
	c := connect(t)
	manifests := loadExample(t)
	c.reset(t, manifests)
	jobs := c.startJobController(t, true)
	binary := buildExample(t)
	run := func(release string) string {
		t.Helper()
		out, err := runExample(t, binary, "-release", release, "-interval", "1s")
		require.NoError(t, err, out)
		return out
	}
	levelOf := func(m manifest.Manifest) int {
		level, _, ok := manifest.ParseRunLevel(m.File)
		require.True(t, ok, m.File)
		return level
	}

	// Install: Initializing, then one reconcile pass.
	out := run("1.0.0")
	assert.Contains(t, out, "apply (Initializing) done: 31/31 manifests")
	assert.Contains(t, out, "apply (Reconciling) done: 31/31 manifests")
	installed := c.live(t, manifests)
	require.Len(t, installed, len(manifests))
	for _, m := range e2e.StampRelease(manifests, "1.0.0") {
		live := installed[m.Ref()]
		assertContains(t, m.Ref(), m.Object, live)
		assert.Contains(t, managers(live), "payload-apply", m.Ref())
	}
	// The Job is a barrier even while initializing: what comes before it was written
	// before the Job was created, what comes after it once the Job had completed. The
	// reconcile pass, which came later, rewrote none of the earlier objects.
	jobCreated, jobCompleted, err := jobs.resourceVersions()
	require.NoError(t, err)
	require.NotEmpty(t, jobCompleted, "the job controller never completed the Job")
	for _, m := range manifests {
		rv := revision(t, installed[m.Ref()].GetResourceVersion())
		switch level := levelOf(m); {
		case level < 30:
			assert.Less(t, rv, revision(t, jobCreated), "%s was written after the Job was created", m.Ref())
		case level > 30:
			assert.Greater(t, rv, revision(t, jobCompleted), "%s was written before the Job completed", m.Ref())
		}
	}

	// Restart: the persisted status says Reconciling, and reconciling writes nothing.
	out = run("1.0.0")
	assert.Contains(t, out, "persisted status: release 1.0.0, Reconciling")
	assert.Contains(t, out, "apply (Reconciling) done: 31/31 manifests")
	assert.NotContains(t, out, "Initializing")
	reconciled := c.live(t, manifests)
	for _, m := range manifests {
		assert.Equal(t, installed[m.Ref()].GetResourceVersion(), reconciled[m.Ref()].GetResourceVersion(), "reconciling rewrote %s", m.Ref())
	}

	// Update to 1.1.0: every object but the Job (applied once) is rewritten, run level by
	// run level, and the web Deployment after the api Service it depends on.
	out = run("1.1.0")
	assert.Contains(t, out, "apply (Updating) done: 31/31 manifests")
	updated := c.live(t, manifests)
	first, last := map[int]int64{}, map[int]int64{}
	for _, m := range e2e.StampRelease(manifests, "1.1.0") {
		if m.GVK.Kind == "Job" {
			continue
		}
		live := updated[m.Ref()]
		assertContains(t, m.Ref(), m.Object, live)
		rv := revision(t, live.GetResourceVersion())
		assert.Greater(t, rv, revision(t, reconciled[m.Ref()].GetResourceVersion()), "%s was not updated", m.Ref())
		level := levelOf(m)
		if v, ok := first[level]; !ok || rv < v {
			first[level] = rv
		}
		last[level] = max(last[level], rv)
	}
	levels := []int{10, 20, 40, 50}
	require.Len(t, first, len(levels))
	for i := 1; i < len(levels); i++ {
		assert.Less(t, last[levels[i-1]], first[levels[i]], "run level %d was still written after run level %d began", levels[i-1], levels[i])
	}
	assert.Less(t,
		revision(t, updated["Service/"+demoNamespace+"/api"].GetResourceVersion()),
		revision(t, updated["Deployment/"+demoNamespace+"/web"].GetResourceVersion()),
		"the web Deployment was written before the api Service it depends on")
}

// TestSimulatedControllers runs the example as the README shows it against an
// apiserver without kube-controller-manager: -simulate-controllers completes the Job and
// rolls the Deployments out with a status the real apiserver accepts, and the run
// finishes.
func TestSimulatedControllers(t *testing.T) {
	c := connect(t)
	manifests := loadExample(t)
	c.reset(t, manifests)
	out, err := runExample(t, buildExample(t), "-release", "1.0.0", "-interval", "1s", "-simulate-controllers")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "attempt failed", "the Job was completed at once")
	assert.Contains(t, out, "30 of 30 objects are in the cluster")
	job, err := c.Typed.BatchV1().Jobs(demoNamespace).Get(context.Background(), jobName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), job.Status.Succeeded)
	assert.NotNil(t, job.Status.CompletionTime)
	for _, name := range []string{"api", "web"} {
		assert.Contains(t, out, "waiting for Deployment/"+demoNamespace+"/"+name+" to be ready", "a real wait")
		dep, err := c.Typed.AppsV1().Deployments(demoNamespace).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, dep.Generation, dep.Status.ObservedGeneration, name)
		assert.Equal(t, int32(1), dep.Status.AvailableReplicas, name)
	}
	// kube.RecordEvents recorded the worker's events about the status ConfigMap.
	assert.NoError(t, wait.PollUntilContextTimeout(context.Background(), pollInterval, pollTimeout, true, func(ctx context.Context) (bool, error) {
		events, err := c.Typed.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Kind == "ConfigMap" && e.Regarding.Name == e2e.StatusConfigMap && e.Reason == "PayloadApplied" && e.Action == "Apply"
		}), nil
	}), "no PayloadApplied event about the status ConfigMap")
}
