package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// dirPrefix names every environment's temporary directory, so that one a
	// killed test process left behind is found and removed by the next Start.
	dirPrefix = "converge-testenv-"
	// ownerFile in that directory holds the pid of the process that owns it.
	ownerFile = "owner.pid"
	// readyTimeout bounds the wait for /readyz.
	readyTimeout = 90 * time.Second
	// stopGrace is how long a process has to exit after SIGTERM before SIGKILL.
	stopGrace = 15 * time.Second
)

// Environment is a running etcd and kube-apiserver on loopback.
type Environment struct {
	// Config reaches the apiserver as a member of system:masters.
	Config *rest.Config
	// Dir is the temporary directory of the environment: data, certificates,
	// logs, and Kubeconfig.
	Dir string
	// Kubeconfig is the path of a kubeconfig file for Config, for programs
	// that take -kubeconfig.
	Kubeconfig string

	etcd, apiserver *process
	stopOnce        sync.Once
	stopErr         error
}

// process is one started binary and the log it writes.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when cmd.Wait returned
	err  error         // of cmd.Wait, read after done
}

// processIDs returns the process ids of etcd and kube-apiserver.
func (e *Environment) processIDs() []int {
	var pids []int
	for _, p := range []*process{e.etcd, e.apiserver} {
		if p != nil {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	return pids
}

// Start builds or locates the binaries, starts etcd and kube-apiserver on
// free loopback ports in a new temporary directory, and returns once the
// apiserver answers /readyz. The apiserver authorizes with RBAC and, beside
// the default admission plugins (less ServiceAccount, which needs the
// controller-manager's tokens), enforces OwnerReferencesPermissionEnforcement,
// as many production clusters do: setting blockOwnerDeletion needs update on the
// owner's finalizers. On error everything started is stopped again.
func Start(ctx context.Context) (env *Environment, err error) {
	removeStale()
	bins, err := EnsureBinaries(ctx)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	env = &Environment{Dir: dir}
	defer func() {
		if err != nil {
			_ = env.Stop()
			env = nil
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return env, fmt.Errorf("testenv: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return env, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	env.etcd, err = startProcess("etcd", dir, bins.Etcd,
		"--name=testenv",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testenv="+peerURL,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if err != nil {
		return env, err
	}
	token, err := writeCredentials(dir)
	if err != nil {
		return env, err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(ports[2])
	env.apiserver, err = startProcess("kube-apiserver", dir, bins.KubeAPIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--disable-admission-plugins=ServiceAccount",
		"--enable-admission-plugins=OwnerReferencesPermissionEnforcement",
		"--enable-priority-and-fairness=false",
	)
	if err != nil {
		return env, err
	}
	env.Config = &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             1000,
		Burst:           2000,
	}
	if err := env.waitReady(ctx, host, token); err != nil {
		return env, err
	}
	env.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(env.Kubeconfig, host, token); err != nil {
		return env, err
	}
	return env, nil
}

// Stop stops kube-apiserver, then etcd (the other order leaves the apiserver
// retrying its storage), each with SIGTERM and after a grace period SIGKILL,
// waits for both, and removes the temporary directory. It is safe to call
// more than once.
func (e *Environment) Stop() error {
	e.stopOnce.Do(func() {
		var errs []error
		for _, p := range []*process{e.apiserver, e.etcd} {
			if p != nil {
				errs = append(errs, p.stop())
			}
		}
		if e.Dir != "" {
			errs = append(errs, os.RemoveAll(e.Dir))
		}
		e.stopErr = errors.Join(errs...)
	})
	return e.stopErr
}

func startProcess(name, dir, bin string, args ...string) (*process, error) {
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	// Its own process group, and killed with the test process should that die.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// The kernel sends Pdeathsig when the thread that started the child
		// exits, not the process: this goroutine keeps its thread until the
		// child is reaped, so the Go runtime never retires it before.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	if err := <-started; err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("testenv: start %s: %w", name, err)
	}
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) stop() error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopGrace):
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	return nil
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

func (e *Environment) waitReady(ctx context.Context, host, token string) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback test server with a self-signed certificate
	}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, p := range []*process{e.etcd, e.apiserver} {
			if p.exited() {
				return fmt.Errorf("testenv: %s exited before the apiserver was ready: %v\n%s", p.name, p.err, p.logTail())
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, host+"/readyz", nil)
		if err != nil {
			return fmt.Errorf("testenv: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := client.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: apiserver not ready: %w\n%s", ctx.Err(), e.apiserver.logTail())
		case <-tick.C:
		}
	}
}

// freePorts returns n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("testenv: free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// writeCredentials writes the service-account key pair and a static token
// file with one admin in system:masters, and returns the admin's token.
func writeCredentials(dir string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	token := hex.EncodeToString(raw)
	files := map[string][]byte{
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		"sa.pub":     pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}),
		"tokens.csv": []byte(token + `,admin,admin-uid,"system:masters"` + "\n"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
	}
	return token, nil
}

func writeKubeconfig(path, host, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["testenv"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["testenv"] = &clientcmdapi.Context{Cluster: "testenv", AuthInfo: "admin"}
	cfg.CurrentContext = "testenv"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	return nil
}

// removeStale removes the temporary directories of environments whose owner
// process is gone (killed before it could stop them).
func removeStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(bytes.TrimSpace(b)))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
