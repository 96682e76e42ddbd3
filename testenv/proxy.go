package testenv

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/converge-dev/converge"
)

// FaultProxy is a reverse proxy between the operator under test and a real
// kube-apiserver that injects the faults of a FaultPlan. Each instance of
// the operator reaches it with a Config (or Kubeconfig) of its own
// identity, so that its informers meet the faults too and a crash point
// cuts off that instance alone; the proxy reaches the apiserver with the
// upstream rest.Config it was made with. It serves TLS on loopback, with a
// certificate its Configs and kubeconfigs trust.
//
// Which requests a fault strikes depends on the seed and on the order of
// each identity's requests, never on timing (see FaultPlan); that order
// depends on how the instance's goroutines interleave, which a real
// apiserver lets no one fix, so a seed replays the plan, not always the
// run. Checks should read a consistent Snapshot, so that what they find is
// a bug whether or not its seed reproduces it; report it with the seed and
// the snapshot.
//
// Stale views serve what an apiserver behind a lagging watch cache may
// serve, and nothing a real apiserver never does. A list from resource
// version "0" (the reflector's first list) or not older than a given one
// is answered with the apiserver's list at an exact older version
// (resourceVersionMatch=Exact), never older than the one asked for; a get
// from a resource version, by such a list with a metadata.name field
// selector (the API has no exact get); a watch delivers its events late,
// but the initial events of a watch list (sendInitialEvents) on time. A
// consistent read (no resource version) or an exact one is never stale.
// The proxy finds the older versions in its own log of each resource's
// events, which begins at the first read of the resource through the
// proxy, so no view lags further back than that; and it takes resource
// versions for etcd
// revisions, as kube-apiserver's are. kube-apiserver compacts its history
// every five minutes: a view that lags further back than that may find its
// version gone (410), and is then served fresh and not counted.
//
// A FaultProxy is safe for concurrent use. Close it when done.
type FaultProxy struct {
	upstream *rest.Config
	forward  *httputil.ReverseProxy
	client   *http.Client // to the apiserver
	schedule *schedule
	url      string
	caPEM    []byte // the serving certificate, which clients trust
	dir      string // kubeconfigs
	server   *http.Server
	ctx      context.Context // ends at Close
	cancel   context.CancelFunc
	wg       sync.WaitGroup // the server and the logs
	handlers sync.WaitGroup // requests in flight, added to under mu while not closed

	mu         sync.Mutex
	identities map[string]*identity // by token
	byName     map[string]*identity
	counts     map[FaultClass]int
	logs       map[string]*eventLog // by collection path
	closed     bool
}

// NewFaultProxy starts a FaultProxy on a free loopback port in front of the
// apiserver upstream reaches (Environment.Config, or envtest's), injecting
// plan's faults. A plan Validate refuses is refused with its error.
func NewFaultProxy(upstream *rest.Config, plan FaultPlan) (*FaultProxy, error) {
	if upstream == nil {
		return nil, converge.Invalidf("testenv", "fault proxy", "upstream rest.Config is required")
	}
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	plan.Faults = append([]Fault(nil), plan.Faults...)
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("testenv: fault proxy: %w", err)
	}
	cert, err := proxyCertificate()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testenv: fault proxy: %w", err)
	}
	dir, err := os.MkdirTemp("", "converge-faultproxy-")
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("testenv: fault proxy: %w", err)
	}
	p := &FaultProxy{
		upstream:   rest.CopyConfig(upstream),
		client:     &http.Client{Transport: transport},
		schedule:   newSchedule(plan),
		url:        "https://" + l.Addr().String(),
		caPEM:      cert.pem,
		dir:        dir,
		identities: map[string]*identity{},
		byName:     map[string]*identity{},
		counts:     map[FaultClass]int{},
		logs:       map[string]*eventLog{},
	}
	p.forward = p.reverseProxy(transport)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.server = &http.Server{
		Handler:           http.HandlerFunc(p.serve),
		ReadHeaderTimeout: time.Minute,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert.tls}, MinVersion: tls.VersionTLS12},
	}
	p.wg.Go(func() { _ = p.server.ServeTLS(l, "", "") })
	return p, nil
}

// Config returns a rest.Config that reaches the apiserver through the
// proxy as the instance identity (the same identity, the same instance):
// the identity is carried in the bearer token, which the proxy replaces by
// upstream's credentials. Impersonation set on it passes through. Config
// is nil for a FaultProxy not made by NewFaultProxy.
func (p *FaultProxy) Config(identity string) *rest.Config {
	if p == nil || p.server == nil {
		return nil
	}
	return &rest.Config{
		Host:            p.url,
		BearerToken:     p.register(identity).token,
		TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM},
		QPS:             p.upstream.QPS,
		Burst:           p.upstream.Burst,
	}
}

// Kubeconfig writes a kubeconfig file for Config(identity), for programs
// that take -kubeconfig, and returns its path; Close removes it.
func (p *FaultProxy) Kubeconfig(identity string) (string, error) {
	if p == nil || p.server == nil {
		return "", notMade()
	}
	id := p.register(identity)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["faultproxy"] = &clientcmdapi.Cluster{Server: p.url, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos[identity] = &clientcmdapi.AuthInfo{Token: id.token}
	cfg.Contexts["faultproxy"] = &clientcmdapi.Context{Cluster: "faultproxy", AuthInfo: identity}
	cfg.CurrentContext = "faultproxy"
	path := filepath.Join(p.dir, "kubeconfig-"+strconv.Itoa(id.number))
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("testenv: fault proxy: %w", err)
	}
	return path, nil
}

// Counts returns how many times the proxy injected each fault class,
// every class included.
func (p *FaultProxy) Counts() map[FaultClass]int {
	counts := map[FaultClass]int{}
	for _, c := range FaultClasses() {
		counts[c] = 0
	}
	if p == nil || p.server == nil {
		return counts
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, n := range p.counts {
		counts[c] = n
	}
	return counts
}

// count records one injection of class.
func (p *FaultProxy) count(class FaultClass) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts[class]++
}

// Close ends every request in flight (open watches end), stops the proxy
// and its logs, waits for them, and removes its kubeconfigs. It is safe to
// call more than once.
func (p *FaultProxy) Close() error {
	if p == nil || p.server == nil {
		return nil
	}
	p.mu.Lock()
	closed := p.closed
	p.closed = true
	p.mu.Unlock()
	if closed {
		return nil
	}
	p.cancel()
	err := p.server.Close()
	p.handlers.Wait()
	p.wg.Wait()
	utilnet.CloseIdleConnectionsFor(p.client.Transport)
	return errors.Join(err, os.RemoveAll(p.dir))
}

// notMade is the error of a FaultProxy used without NewFaultProxy.
func notMade() error {
	return converge.Invalidf("testenv", "FaultProxy", "not made by NewFaultProxy")
}

// newToken returns a random bearer token.
func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
