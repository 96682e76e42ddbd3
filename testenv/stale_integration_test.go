//go:build integration

package testenv

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// requireLogged waits until the proxy's log of ConfigMaps, which the
// first request for them through the proxy opens, has begun and holds the
// change to resource version rv ("": none).
func requireLogged(t *testing.T, p *FaultProxy, rv string) {
	t.Helper()
	want, _ := strconv.ParseUint(rv, 10, 64)
	require.Eventually(t, func() bool {
		p.mu.Lock()
		l := p.logs["/api/v1/configmaps"]
		p.mu.Unlock()
		if l == nil {
			return false
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.start != 0 && (want == 0 || len(l.entries) > 0 && l.entries[len(l.entries)-1].rv >= want)
	}, propagation, 10*time.Millisecond)
}

// A view that lags one event serves a list or get from resource version
// "0" at the version before the newest change: the older object, or none
// for an object created since. A consistent read, and one not older than
// a version given, stay fresh.
func testStaleReads(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p, updated := updatedUnderStaleView(t, w, Fault{Class: StaleView, Resources: []string{"configmaps"}, LagEvents: 1, Percent: 100})
	op := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1().ConfigMaps(w.ns)
	got, err := op.Get(ctx, "settings", metav1.GetOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	assert.Equal(t, "1", got.Data["value"], "a get from resource version 0 is served the older object")
	raw, err := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1().RESTClient().Get().
		Namespace(w.ns).Resource("configmaps").Name("settings").Param("resourceVersion", "0").DoRaw(ctx)
	require.NoError(t, err)
	var typeMeta metav1.TypeMeta
	require.NoError(t, json.Unmarshal(raw, &typeMeta))
	assert.Equal(t, metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"}, typeMeta, "the object served has its kind")
	got, err = op.Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "2", got.Data["value"], "a consistent get is never stale")
	list, err := op.List(ctx, metav1.ListOptions{ResourceVersion: updated.ResourceVersion})
	require.NoError(t, err)
	assert.Equal(t, "2", list.Items[0].Data["value"], "a list is never older than the version it asks for")
	requireCount(t, p, StaleView, 3) // with the list of updatedUnderStaleView

	later := w.create(t, "later", "1")
	requireLogged(t, p, later.ResourceVersion)
	_, err = op.Get(ctx, "later", metav1.GetOptions{ResourceVersion: "0"})
	assert.True(t, apierrors.IsNotFound(err), "an object created since the view is not in it: %v", err)
}

// A view that lags an hour behind a log younger than that serves the
// state the log began at.
func testStaleByTime(t *testing.T, w faultWorld) {
	p, _ := updatedUnderStaleView(t, w, Fault{Class: StaleView, Verbs: []string{"list"}, Lag: time.Hour, Percent: 100})
	requireCount(t, p, StaleView, 1)
}

// updatedUnderStaleView starts a proxy whose plan has the one fault, a
// StaleView, creates the ConfigMap settings with value 1, opens the
// proxy's log of ConfigMaps with a consistent list, updates settings to 2,
// waits until the log has the update, and shows that a list from resource
// version "0" through the proxy is served the value 1. It returns the
// proxy and the update.
func updatedUnderStaleView(t *testing.T, w faultWorld, fault Fault) (*FaultProxy, *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{fault}})
	op := kubernetes.NewForConfigOrDie(p.Config("operator")).CoreV1().ConfigMaps(w.ns)
	cm := w.create(t, "settings", "1")
	_, err := op.List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	requireLogged(t, p, "")
	cm.Data["value"] = "2"
	updated, err := w.admin.CoreV1().ConfigMaps(w.ns).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	requireLogged(t, p, updated.ResourceVersion)
	list, err := op.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "1", list.Items[0].Data["value"], "a list from resource version 0 is served the older object")
	return p, updated
}

// A watch whose view lags one change delivers an event only once the next
// change has come: an informer holds the older objects and not yet the
// newest.
func testStaleWatch(t *testing.T, w faultWorld) {
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{{Class: StaleView, Verbs: []string{"watch"}, LagEvents: 1, Percent: 100}}})
	inf := startInformer(t, p.Config("operator"), w.ns, nil)
	w.create(t, "a", "1")
	w.create(t, "b", "1")
	require.Eventually(t, func() bool { return inf.has(w.ns, "a") }, propagation, 10*time.Millisecond)
	assert.False(t, inf.has(w.ns, "b"), "b is held until the next change")
	w.create(t, "c", "1")
	require.Eventually(t, func() bool { return inf.has(w.ns, "b") }, propagation, 10*time.Millisecond)
	assert.False(t, inf.has(w.ns, "c"), "c is held until the next change")
	requireCountAtLeast(t, p, StaleView, 1)
}

// An informer whose watch is closed after every event resumes it from the
// version it saw last, and sees every object.
func testWatchClose(t *testing.T, w faultWorld) {
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{{Class: WatchClose, Percent: 100}}})
	var requests requestLog
	inf := startInformer(t, requests.record(p.Config("operator")), w.ns, nil)
	for _, name := range []string{"a", "b", "c"} {
		w.create(t, name, "1")
		require.Eventually(t, func() bool { return inf.has(w.ns, name) }, propagation, 10*time.Millisecond)
	}
	requireCountAtLeast(t, p, WatchClose, 3)
	resumes := 0
	for _, q := range watches(requests.all()) {
		if q.Get("resourceVersion") != "" && q.Get("sendInitialEvents") == "" {
			resumes++
		}
	}
	assert.GreaterOrEqual(t, resumes, 3, "the informer resumes its watch: %v", requests.all())
}

// An informer whose resumed watch is answered 410 Gone lists again (a
// list, or a watch list) and still sees every object.
func testWatchGone(t *testing.T, w faultWorld) {
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{
		{Class: WatchGone, Percent: 100},
		{Class: WatchClose, Percent: 100},
	}})
	var requests requestLog
	inf := startInformer(t, requests.record(p.Config("operator")), w.ns, nil)
	w.create(t, "a", "1")
	require.Eventually(t, func() bool {
		gone := false
		for _, uri := range requests.all() {
			q := query(uri)
			switch {
			case isWatch(uri) && q.Get("resourceVersion") != "" && q.Get("sendInitialEvents") == "":
				gone = true
			case gone && (!isWatch(uri) || q.Get("sendInitialEvents") == "true"):
				return true // a list after the 410
			}
		}
		return false
	}, propagation, 10*time.Millisecond, "no list after a 410: %v", requests.all())
	require.Eventually(t, func() bool { return inf.has(w.ns, "a") }, propagation, 10*time.Millisecond)
	requireCountAtLeast(t, p, WatchGone, 1)
}

// Delayed events reach an informer no sooner than the Delay, in the order
// they happened.
func testWatchDelay(t *testing.T, w faultWorld) {
	const delay = 300 * time.Millisecond
	p := newProxy(t, w.env, FaultPlan{Seed: 1, Faults: []Fault{{Class: WatchDelay, Percent: 100, Delay: delay}}})
	var mu sync.Mutex
	var seen []string
	inf := startInformer(t, p.Config("operator"), w.ns, cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, obj.(*corev1.ConfigMap).Name)
	}})
	start := time.Now()
	for _, name := range []string{"a", "b", "c"} {
		w.create(t, name, "1")
	}
	require.Eventually(t, func() bool { return inf.has(w.ns, "c") }, propagation, 10*time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), delay)
	mu.Lock()
	assert.Equal(t, []string{"a", "b", "c"}, seen)
	mu.Unlock()
	requireCountAtLeast(t, p, WatchDelay, 1)
}

// A snapshot lists every resource at the version of its first list.
func testSnapshot(t *testing.T, w faultWorld) {
	ctx := context.Background()
	p := newProxy(t, w.env, FaultPlan{})
	w.create(t, "one", "1")
	_, err := w.admin.CoreV1().Secrets(w.ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "two"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	snap, err := p.Snapshot(ctx, w.ns, configMaps, secrets)
	require.NoError(t, err)
	require.NotEmpty(t, snap.ResourceVersion)
	assert.NotNil(t, snap.Get(configMaps, w.ns, "one"))
	assert.NotNil(t, snap.Get(secrets, w.ns, "two"))
	assert.Nil(t, snap.Get(configMaps, w.ns, "two"))
	assert.Contains(t, snap.String(), "name: one")
	assert.NotContains(t, snap.String(), "managedFields")
}

// watches returns the queries of the watch requests among uris.
func watches(uris []string) []url.Values {
	var out []url.Values
	for _, uri := range uris {
		if isWatch(uri) {
			out = append(out, query(uri))
		}
	}
	return out
}

func isWatch(uri string) bool { return query(uri).Get("watch") == "true" }

func query(uri string) url.Values {
	_, raw, _ := strings.Cut(uri, "?")
	q, _ := url.ParseQuery(raw)
	return q
}
