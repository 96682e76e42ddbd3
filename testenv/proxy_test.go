package testenv

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/converge-dev/converge"
)

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// fakeAPIServer answers every request with an empty JSON object and
// records the requests it got, as method, path and bearer token.
type fakeAPIServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newFakeAPIServer(t *testing.T) *fakeAPIServer {
	t.Helper()
	f := &fakeAPIServer{}
	f.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPIServer) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// startFakeProxy starts a FaultProxy for plan in front of a fake
// apiserver; both end with the test.
func startFakeProxy(t *testing.T, plan FaultPlan) (*FaultProxy, *fakeAPIServer) {
	t.Helper()
	api := newFakeAPIServer(t)
	p, err := NewFaultProxy(&rest.Config{Host: api.URL, BearerToken: "upstream", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, plan)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p, api
}

// send sends a request through the proxy as identity and returns the
// status code and fault header of its answer.
func send(t *testing.T, cfg *rest.Config, method, path string) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(method, cfg.Host+path, strings.NewReader("{}"))
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get(faultHeader)
}

// A request reaches the apiserver with the proxy's credentials in place
// of the identity's token; a token the proxy never handed out is refused
// before it.
func TestFaultProxyReplacesTheIdentitysCredentials(t *testing.T) {
	p, api := startFakeProxy(t, FaultPlan{})
	cfg := p.Config("op")
	code, _ := send(t, cfg, http.MethodGet, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusOK, code)
	stranger := rest.CopyConfig(cfg)
	stranger.BearerToken = "not-handed-out"
	code, _ = send(t, stranger, http.MethodGet, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, []string{"GET /api/v1/namespaces/a/configmaps/b Bearer upstream"}, api.requests())
	assert.Equal(t, cfg.BearerToken, p.Config("op").BearerToken, "one identity, one token")
	assert.NotEqual(t, cfg.BearerToken, p.Config("op-2").BearerToken)
}

// A fault answered by the proxy never reaches the apiserver, says its
// class and is counted.
func TestFaultProxyAnswersRequestFaultsItself(t *testing.T) {
	p, api := startFakeProxy(t, FaultPlan{Seed: 1, Faults: []Fault{{Class: Conflict, Percent: 100}}})
	code, class := send(t, p.Config("op"), http.MethodPut, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, "Conflict", class)
	assert.Empty(t, api.requests())
	counts := p.Counts()
	assert.Equal(t, 1, counts[Conflict])
	assert.Len(t, counts, len(FaultClasses()), "every class is counted, zeros too")
}

// After the n-th write of a crash point the identity is refused, before
// the apiserver, and its Crashed channel is closed; another identity
// passes.
func TestFaultProxyCrashAfter(t *testing.T) {
	p, api := startFakeProxy(t, FaultPlan{})
	p.CrashAfter("op", 1)
	select {
	case <-p.Crashed("op"):
		t.Fatal("cut off before its write")
	default:
	}
	code, _ := send(t, p.Config("op"), http.MethodGet, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusOK, code, "a read is no write")
	code, _ = send(t, p.Config("op"), http.MethodPost, "/api/v1/namespaces/a/configmaps")
	assert.Equal(t, http.StatusOK, code, "the crash point's write is answered")
	<-p.Crashed("op")
	code, _ = send(t, p.Config("op"), http.MethodGet, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = send(t, p.Config("op-2"), http.MethodGet, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusOK, code)
	assert.Len(t, api.requests(), 3)
	assert.Equal(t, 1, p.Counts()[Crash])

	p.CrashAfter("op-2", 1)
	code, _ = send(t, p.Config("op-2"), http.MethodDelete, "/api/v1/namespaces/a/configmaps/b")
	assert.Equal(t, http.StatusOK, code)
	<-p.Crashed("op-2")
	p.Crash("op-2")
	assert.Equal(t, 2, p.Counts()[Crash], "an identity crashes once")
}

// A kubeconfig reaches the proxy as its identity, trusting its
// certificate.
func TestFaultProxyKubeconfig(t *testing.T) {
	p, api := startFakeProxy(t, FaultPlan{})
	path, err := p.Kubeconfig("cli")
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	code, _ := send(t, cfg, http.MethodGet, "/version")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, []string{"GET /version Bearer upstream"}, api.requests())
	require.NoError(t, p.Close())
	assert.NoFileExists(t, path, "Close removes the kubeconfigs")
}

func TestNewFaultProxyRefusesBadInput(t *testing.T) {
	_, err := NewFaultProxy(nil, FaultPlan{})
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, "testenv: invalid fault proxy: upstream rest.Config is required")
	_, err = NewFaultProxy(&rest.Config{Host: "https://127.0.0.1:1"}, FaultPlan{Faults: []Fault{{Class: Conflict}}})
	assert.EqualError(t, err, "testenv: invalid fault plan: faults[0]: Percent 0 is not in 1..100")
}

// A FaultProxy not made by NewFaultProxy, nil or zero, refuses to work
// and never panics.
func TestFaultProxyNotMade(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    *FaultProxy
	}{{"nil", nil}, {"zero", &FaultProxy{}}} {
		p := tt.p
		t.Run(tt.name, func(t *testing.T) {
			assert.Nil(t, p.Config("op"))
			_, err := p.Kubeconfig("op")
			assert.EqualError(t, err, "testenv: invalid FaultProxy: not made by NewFaultProxy")
			_, err = p.Snapshot(t.Context(), "", configMaps)
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.Equal(t, 0, p.Counts()[Conflict])
			p.CrashAfter("op", 1)
			p.Crash("op")
			assert.Nil(t, p.Crashed("op"))
			assert.NoError(t, p.Close())
		})
	}
}

// A snapshot lists at least one resource.
func TestFaultProxySnapshotNeedsAResource(t *testing.T) {
	p, _ := startFakeProxy(t, FaultPlan{})
	_, err := p.Snapshot(t.Context(), "")
	require.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, "testenv: invalid Snapshot arguments: no resource to list")
}
