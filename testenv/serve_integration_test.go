//go:build integration

package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// A Conflict answers an update with 409 and leaves a read alone; a
// TooManyRequests answers 429 with its Retry-After; an InternalError
// answers 500.
func testRequestFaults(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{
		{Class: Conflict, Names: []string{"conflicted"}, Percent: 100},
		{Class: TooManyRequests, Names: []string{"throttled"}, Percent: 100, Delay: 1500 * time.Millisecond},
		{Class: InternalError, Names: []string{"broken"}, Percent: 100},
	}})
	op := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1()
	for _, name := range []string{"conflicted", "throttled", "broken"} {
		w.create(t, name, "1")
	}
	cm, err := op.ConfigMaps(w.ns).Get(ctx, "conflicted", metav1.GetOptions{})
	require.NoError(t, err, "Conflict leaves a get alone")
	_, err = op.ConfigMaps(w.ns).Update(ctx, cm, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsConflict(err), "update: %v", err)

	err = op.RESTClient().Get().Namespace(w.ns).Resource("configmaps").Name("throttled").MaxRetries(0).Do(ctx).Error()
	require.True(t, apierrors.IsTooManyRequests(err), "get: %v", err)
	delay, ok := apierrors.SuggestsClientDelay(err)
	assert.True(t, ok)
	assert.Equal(t, 2, delay, "Retry-After is the Delay rounded up to whole seconds")

	_, err = op.ConfigMaps(w.ns).Get(ctx, "broken", metav1.GetOptions{})
	assert.True(t, apierrors.IsInternalError(err), "get: %v", err)
	requireCount(t, p, Conflict, 1)
	requireCount(t, p, TooManyRequests, 1)
	requireCount(t, p, InternalError, 1)
}

// The client of a TimeoutAfterCommit write sees a timeout, and the object
// is there; a write the apiserver refuses is refused as it is, and not
// counted.
func testTimeoutAfterCommit(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{{Class: TimeoutAfterCommit, Verbs: []string{"create"}, Percent: 100}}})
	op := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1()
	_, err := op.ConfigMaps(w.ns).Create(ctx, configMap(w.ns, "committed", "1"), metav1.CreateOptions{})
	require.True(t, apierrors.IsTimeout(err), "create: %v", err)
	got, err := w.admin.CoreV1().ConfigMaps(w.ns).Get(ctx, "committed", metav1.GetOptions{})
	require.NoError(t, err, "the write was committed")
	assert.Equal(t, "1", got.Data["value"])
	requireCount(t, p, TimeoutAfterCommit, 1)

	_, err = op.ConfigMaps(w.ns).Create(ctx, configMap(w.ns, "committed", "2"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsAlreadyExists(err), "create again: %v", err)
	requireCount(t, p, TimeoutAfterCommit, 1)
}

// Latency holds a request at least its Delay.
func testLatency(t *testing.T, w faultWorld) {
	const delay = 300 * time.Millisecond
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{{Class: Latency, Verbs: []string{"list"}, Percent: 100, Delay: delay}}})
	op := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1()
	start := time.Now()
	_, err := op.ConfigMaps(w.ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), delay)
	requireCount(t, p, Latency, 1)
}

// CrashAfter cuts an identity off right after its n-th write: that write
// is answered, every later request is refused and its open watch ends,
// while another identity's requests pass.
func testCrash(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{})
	crashing := kubernetes.NewForConfigOrDie(p.Config("instance-1")).CoreV1()
	fresh := kubernetes.NewForConfigOrDie(p.Config("instance-2")).CoreV1()
	watcher, err := crashing.ConfigMaps(w.ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer watcher.Stop()

	p.CrashAfter("instance-1", 2)
	for _, name := range []string{"first", "second"} {
		_, err := crashing.ConfigMaps(w.ns).Create(ctx, configMap(w.ns, name, "1"), metav1.CreateOptions{})
		require.NoError(t, err, "write %s is answered", name)
	}
	requireClosed(t, p.Crashed("instance-1"), "instance-1 is cut off")
	_, err = crashing.ConfigMaps(w.ns).Create(ctx, configMap(w.ns, "third", "1"), metav1.CreateOptions{})
	assert.True(t, apierrors.IsServiceUnavailable(err), "a later write is refused: %v", err)
	_, err = crashing.ConfigMaps(w.ns).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsServiceUnavailable(err), "a later read is refused: %v", err)
	requireWatchEnds(t, watcher)

	_, err = fresh.ConfigMaps(w.ns).Create(ctx, configMap(w.ns, "fourth", "1"), metav1.CreateOptions{})
	require.NoError(t, err, "another identity passes")
	list, err := w.admin.CoreV1().ConfigMaps(w.ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	assert.Equal(t, []string{"first", "fourth", "second"}, names)
	requireCount(t, p, Crash, 1)
	assert.NotNil(t, p.Crashed("instance-2"))
	select {
	case <-p.Crashed("instance-2"):
		t.Error("instance-2 was cut off")
	default:
	}
}

// A Crash fault lets the write it strikes commit and be answered, and
// then cuts the identity off.
func testCrashFault(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{{Class: Crash, Names: []string{"fatal"}, Percent: 100}}})
	op := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1()
	cm := w.create(t, "fatal", "1")
	cm.Data["value"] = "2"
	_, err := op.ConfigMaps(w.ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err, "the write struck is answered")
	requireClosed(t, p.Crashed("operator"), "the operator is cut off")
	got, err := w.admin.CoreV1().ConfigMaps(w.ns).Get(ctx, "fatal", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", got.Data["value"], "the write struck is committed")
	_, err = op.ConfigMaps(w.ns).Get(ctx, "fatal", metav1.GetOptions{})
	assert.True(t, apierrors.IsServiceUnavailable(err), "a later read is refused: %v", err)
	requireCount(t, p, Crash, 1)
}

// A kubeconfig reaches the apiserver as its identity, so a crash of that
// identity refuses it; a token the proxy did not hand out is refused.
func testKubeconfig(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{})
	path, err := p.Kubeconfig("cli")
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	cli := kubernetes.NewForConfigOrDie(cfg).CoreV1()
	_, err = cli.ConfigMaps(w.ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	p.Crash("cli")
	_, err = cli.ConfigMaps(w.ns).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsServiceUnavailable(err), "list after the crash: %v", err)

	stranger := kubernetes.NewForConfigOrDie(&rest.Config{Host: p.url, BearerToken: "not-handed-out", TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}).CoreV1()
	_, err = stranger.ConfigMaps(w.ns).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "list: %v", err)
}

// requireClosed fails unless ch closes within propagation.
func requireClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(propagation):
		t.Fatal(what)
	}
}

// requireWatchEnds fails unless w's result channel closes within
// propagation.
func requireWatchEnds(t *testing.T, w watch.Interface) {
	t.Helper()
	deadline := time.After(propagation)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the watch is still open")
		}
	}
}
