//go:build integration

package testenv

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// propagation bounds how long the real apiserver takes to deliver a
// change to a watch (an informer's, or the proxy's own log's).
const propagation = 30 * time.Second

// faultWorld is what a test of TestFaultProxy gets: the apiserver and a
// namespace of its own.
type faultWorld struct {
	env   *Environment
	admin kubernetes.Interface // straight to the apiserver
	ns    string
}

// TestFaultProxy shows each fault class happen as documented on a real
// apiserver, every test in a namespace of its own on one Environment.
func TestFaultProxy(t *testing.T) {
	ctx := context.Background()
	env, err := Start(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, env.Stop()) }()
	admin := kubernetes.NewForConfigOrDie(env.Config)
	tests := []struct {
		name string
		test func(t *testing.T, w faultWorld)
	}{
		{"conflicts, throttling and internal errors answer as the apiserver does", testRequestFaults},
		{"a write that times out after its commit is committed", testTimeoutAfterCommit},
		{"latency holds a request", testLatency},
		{"a crashed identity is refused while another passes", testCrash},
		{"a crash fault cuts its identity off after the write", testCrashFault},
		{"a stale list and get return the older object", testStaleReads},
		{"a view lagging in time serves the oldest the log knows", testStaleByTime},
		{"a stale watch holds the newest events back", testStaleWatch},
		{"a closed watch is resumed by an informer", testWatchClose},
		{"a 410 makes an informer list again", testWatchGone},
		{"delayed watch events arrive late and in order", testWatchDelay},
		{"a snapshot lists at one resource version", testSnapshot},
		{"a kubeconfig carries its identity, and an unknown one is refused", testKubeconfig},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := fmt.Sprintf("faults-%d", i)
			_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			require.NoError(t, err)
			tt.test(t, faultWorld{env: env, admin: admin, ns: ns})
		})
	}
}

// newProxy starts a FaultProxy for plan that the test closes.
func newProxy(t *testing.T, env *Environment, plan FaultPlan) *FaultProxy {
	t.Helper()
	p, err := NewFaultProxy(env.Config, plan)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// configMap returns a ConfigMap of ns named name holding value.
func configMap(ns, name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"value": value}}
}

// create creates the ConfigMap name in w's namespace straight on the
// apiserver.
func (w faultWorld) create(t *testing.T, name, value string) *corev1.ConfigMap {
	t.Helper()
	cm, err := w.admin.CoreV1().ConfigMaps(w.ns).Create(context.Background(), configMap(w.ns, name, value), metav1.CreateOptions{})
	require.NoError(t, err)
	return cm
}

// requestLog records the requests a client sends, as method and URI.
type requestLog struct {
	mu   sync.Mutex
	uris []string
}

// record makes cfg's client record its requests in l.
func (l *requestLog) record(cfg *rest.Config) *rest.Config {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			l.mu.Lock()
			l.uris = append(l.uris, r.Method+" "+r.URL.RequestURI())
			l.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	return cfg
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.uris...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// informer is a running ConfigMap informer of one namespace.
type informer struct {
	store   cache.Store
	factory informers.SharedInformerFactory
	stop    chan struct{}
}

// startInformer starts a ConfigMap informer of ns on cfg, waits for its
// first sync and stops it when the test ends; handler, if any, sees its
// events.
func startInformer(t *testing.T, cfg *rest.Config, ns string, handler cache.ResourceEventHandler) *informer {
	t.Helper()
	factory := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if handler != nil {
		_, err := inf.AddEventHandler(handler)
		require.NoError(t, err)
	}
	i := &informer{store: inf.GetStore(), factory: factory, stop: make(chan struct{})}
	factory.Start(i.stop)
	t.Cleanup(func() {
		close(i.stop)
		factory.Shutdown()
	})
	for typ, synced := range factory.WaitForCacheSync(i.stop) {
		require.True(t, synced, "%v synced", typ)
	}
	return i
}

// has reports whether the informer holds the ConfigMap name of ns.
func (i *informer) has(ns, name string) bool {
	_, ok, _ := i.store.GetByKey(ns + "/" + name)
	return ok
}

// requireCount fails unless the proxy injected class exactly n times.
func requireCount(t *testing.T, p *FaultProxy, class FaultClass, n int) {
	t.Helper()
	assert.Equal(t, n, p.Counts()[class], "injected %s", class)
}

// requireCountAtLeast fails unless the proxy injected class n times or
// more.
func requireCountAtLeast(t *testing.T, p *FaultProxy, class FaultClass, n int) {
	t.Helper()
	assert.GreaterOrEqual(t, p.Counts()[class], n, "injected %s", class)
}
