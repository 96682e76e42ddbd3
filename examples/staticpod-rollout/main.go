// Command staticpod-rollout rolls a per-node component (a static pod) from
// revision 1 to 2 to 3 with the rollout engine, one node at a time.
//
// With no flags it runs on an in-memory cluster (client-go's fake clientset)
// where a small simulated kubelet moves real corev1.Pod objects through their
// phases, with one scripted installer failure that is retried after a backoff;
// it prints a line per sync, a final table of nodes and conditions, and exits
// 0 once every node runs revision 3. With -kubeconfig it drives the same
// engine against a real cluster's pods in -namespace; adding -simulate-kubelet
// plays the same scenario on a real apiserver that has no kubelet (the
// integration tests' etcd and kube-apiserver). The rollout status is kept as
// JSON in the ConfigMap <operand>-rollout-status (configMapStatus says why
// not in a custom resource).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/rollout"
)

// testHooks let tests wrap the controller's host interfaces (wrap) and see
// every event the engine returns (event).
type testHooks struct {
	wrap  func(*rollout.Config)
	event func(rollout.Event)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "staticpod-rollout:", err)
		os.Exit(1)
	}
}

type config struct {
	nodes        int
	kubeconfig   string
	namespace    string
	operand      string
	image        string
	nodeSelector string
	revision     int
	unavailable  int
	simulate     bool
	maxSyncs     int
	timeout      time.Duration
	verbose      bool
}

func parseFlags(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("staticpod-rollout", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.IntVar(&c.nodes, "nodes", 3, "number of nodes of the in-memory cluster")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig instead of in memory")
	fs.StringVar(&c.namespace, "namespace", "converge-rollout", "namespace of the installer and operand pods")
	fs.StringVar(&c.operand, "operand", "operand", "operand name: its mirror pods are <operand>-<node>")
	fs.StringVar(&c.image, "installer-image", "busybox:1.36", "installer pod image (-kubeconfig only)")
	fs.StringVar(&c.nodeSelector, "node-selector", "node-role.kubernetes.io/control-plane", "label selector of the nodes to roll out to")
	fs.IntVar(&c.revision, "revision", 1, "revision to roll out to (-kubeconfig only; in memory it is 1 -> 2 -> 3)")
	fs.IntVar(&c.unavailable, "max-unavailable", 1, "how many nodes may be in transition or not ready at once")
	fs.BoolVar(&c.simulate, "simulate-kubelet", false, "with -kubeconfig: create -nodes nodes and play the in-memory scenario on that apiserver")
	fs.IntVar(&c.maxSyncs, "max-syncs", 1000, "give up after this many syncs per revision")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up after this long (-kubeconfig only)")
	fs.BoolVar(&c.verbose, "v", false, "log what the engine does")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.nodes < 1 || c.revision < 1 || c.maxSyncs < 1 || c.unavailable < 1 {
		return c, errors.New("-nodes, -revision, -max-unavailable and -max-syncs must be at least 1")
	}
	return c, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args, out)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if cfg.verbose {
		ctx = klog.NewContext(ctx, klog.Background())
	} else {
		ctx = klog.NewContext(ctx, klog.Logger{})
	}
	if cfg.kubeconfig == "" {
		return simulate(ctx, cfg, newMemoryClient(), out, nil)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return err
	}
	if cfg.simulate {
		// The simulated kubelet and the cache checks between syncs read much
		// more than a controller would: client-go's default of 5 requests a
		// second would make the scenario take half a minute.
		rc.QPS, rc.Burst = simulateQPS, 2*simulateQPS
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if cfg.simulate {
		return simulate(ctx, cfg, client, out, nil)
	}
	return runCluster(ctx, cfg, client, out)
}

// simulateQPS is the client rate limit of -simulate-kubelet.
const simulateQPS = 100

// eventFlushTimeout bounds how long shutdown waits for the events of the
// last syncs to be written.
const eventFlushTimeout = 5 * time.Second

// engine wires the rollout Controller to client-go.
type engine struct {
	store   *configMapStatus
	ctrl    *rollout.Controller
	onEvent func(rollout.Event) // a test's hook on every event, nil in the program
	clock   clock.PassiveClock
	start   time.Time
	out     io.Writer
	syncs   int
	pods    func() string // fingerprint of the pod cache
	factory informers.SharedInformerFactory
	stop    context.CancelFunc // stops the informers
	events  record.EventBroadcaster
	done    <-chan struct{}    // closed when the broadcaster's context ends
	emitted *recorderSink      // the events the engine emitted
	written *countingEventSink // the events written to the API
	// advance runs between syncs: the kubelet and the fake clock in memory, a wait on a real cluster.
	advance func(ctx context.Context, res rollout.Result) error
}

// newEngine wires the engine. A non-nil only restricts the nodes to those
// names; a non-nil wrap may replace the controller's host interfaces (tests
// use it).
func newEngine(ctx context.Context, cfg config, client kubernetes.Interface, clk clock.PassiveClock, out io.Writer,
	only map[string]bool, wrap func(*rollout.Config)) (*engine, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.namespace))
	podLister := factory.Core().V1().Pods().Lister()
	nodeLister := factory.Core().V1().Nodes().Lister()
	informerCtx, stop := context.WithCancel(ctx)
	factory.Start(informerCtx.Done())
	for typ, ok := range factory.WaitForCacheSync(informerCtx.Done()) {
		if !ok {
			stop()
			factory.Shutdown()
			return nil, fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}
	store := &configMapStatus{client: client, ns: cfg.namespace, name: cfg.operand + "-rollout-status"}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	written := &countingEventSink{EventSink: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(cfg.namespace)}}
	broadcaster.StartRecordingToSink(written)
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "staticpod-rollout"})
	ref := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: store.name, Namespace: cfg.namespace}}
	emitted := &recorderSink{rec: recorder, ref: ref, out: out}

	selector, err := labels.Parse(cfg.nodeSelector)
	if err != nil {
		stop()
		factory.Shutdown()
		return nil, fmt.Errorf("-node-selector: %w", err)
	}
	adapter := &podAdapter{client: client, pods: podLister.Pods(cfg.namespace), nodes: nodeLister, selector: selector,
		only: only, ns: cfg.namespace, operand: cfg.operand, image: cfg.image, out: out}
	rc := rollout.Config{Status: store, Installers: adapter, Operands: adapter, Nodes: adapter, Clock: clk,
		Policy: rollout.Policy{MaxUnavailable: int32(cfg.unavailable)}}
	if wrap != nil {
		wrap(&rc)
	}
	ctrl, err := rollout.NewController(rc)
	if err != nil {
		stop()
		factory.Shutdown()
		return nil, err
	}
	e := &engine{
		store: store, clock: clk, start: clk.Now(), out: out, factory: factory, stop: stop,
		events: broadcaster, done: ctx.Done(), emitted: emitted, written: written, ctrl: ctrl,
		pods: func() string {
			pods, _ := podLister.Pods(cfg.namespace).List(labels.Everything())
			return podFingerprint(pods)
		},
	}
	return e, nil
}

// shutdown waits until the events of the last syncs are written (at most
// eventFlushTimeout, and not once the context has ended), then stops the
// event broadcaster and the informers and waits for them.
func (e *engine) shutdown() {
	e.flushEvents(eventFlushTimeout)
	e.events.Shutdown()
	e.stop()
	e.factory.Shutdown()
}

// flushEvents waits until the event sink has written as many events as the
// engine emitted, the broadcaster's context ends or timeout passes: the
// broadcaster writes events asynchronously and drops what is still queued
// when it shuts down.
func (e *engine) flushEvents(timeout time.Duration) {
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for e.written.count() < e.emitted.count() {
		select {
		case <-e.done:
			return
		case <-deadline.C:
			return
		case <-ticker.C:
		}
	}
}

// setLatest sets the latest available revision, as a revision controller would.
func (e *engine) setLatest(ctx context.Context, rev int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, rv, err := e.store.GetStatus(ctx)
		if err != nil {
			return err
		}
		st.LatestAvailableRevision = rev
		_, err = e.store.UpdateStatus(ctx, st, rv)
		return err
	})
}

// rollTo makes rev the latest revision and syncs until every node runs it.
func (e *engine) rollTo(ctx context.Context, rev int32, maxSyncs int) error {
	if err := e.setLatest(ctx, rev); err != nil {
		return fmt.Errorf("setting latest revision %d: %w", rev, err)
	}
	fmt.Fprintf(e.out, "== revision %d is the latest\n", rev)
	for range maxSyncs {
		res, err := e.ctrl.Sync(ctx)
		for _, ev := range res.Events {
			e.emitted.emit(ev)
			if e.onEvent != nil {
				e.onEvent(ev)
			}
		}
		if err != nil {
			return err
		}
		e.syncs++
		st, _, err := e.store.GetStatus(ctx)
		if err != nil {
			return err
		}
		atLatest := 0
		for _, n := range st.NodeStatuses {
			if n.CurrentRevision == rev && !n.InTransition() {
				atLatest++
			}
		}
		progressing, _ := conditions.Get(st.Conditions, conditions.TypeProgressing)
		fmt.Fprintf(e.out, "[%6s] sync %3d: %d/%d nodes at revision %d - %s\n", e.clock.Since(e.start).Round(time.Second),
			e.syncs, atLatest, len(st.NodeStatuses), rev, progressing.Message)
		if st.Converged() {
			return nil
		}
		if err := e.advance(ctx, res); err != nil {
			return err
		}
	}
	return fmt.Errorf("revision %d did not converge within %d syncs", rev, maxSyncs)
}

// printTable prints the nodes and conditions of the persisted status.
func (e *engine) printTable(ctx context.Context) error {
	st, _, err := e.store.GetStatus(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCURRENT\tTARGET\tLAST FAILED\tFAILURES\tLAST ERROR")
	for _, n := range st.NodeStatuses {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\n", n.NodeName, n.CurrentRevision, n.TargetRevision,
			n.LastFailedRevision, n.LastFailedCount, strings.Join(n.LastFailedErrors, "; "))
	}
	fmt.Fprintln(w, "\nCONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range st.Conditions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, strings.ReplaceAll(c.Message, "\n", " | "))
	}
	return w.Flush()
}

// simulate rolls 1 -> 2 -> 3 with a simulated kubelet and a fake clock, on
// the fake clientset or on a real apiserver without kubelets. Non-nil hooks
// let tests wrap the controller's host interfaces and see every event.
func simulate(ctx context.Context, cfg config, client kubernetes.Interface, out io.Writer, hooks *testHooks) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	nodes := make([]string, cfg.nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("master-%d", i)
	}
	if err := seed(ctx, client, nodes, cfg.namespace, cfg.operand, clk); err != nil {
		return fmt.Errorf("creating the nodes and operand pods: %w", err)
	}
	failing := nodes[min(1, len(nodes)-1)]
	k := &kubelet{client: client, ns: cfg.namespace, operand: cfg.operand, clock: clk,
		failures: map[string]string{"installer-2-" + failing: "copying secret/serving-cert: connection refused"}}
	where := "in-memory cluster"
	if cfg.kubeconfig != "" {
		where = "apiserver " + cfg.kubeconfig + " with a simulated kubelet"
	}
	fmt.Fprintf(out, "%s: %d nodes, installer-2-%s will fail once\n", where, len(nodes), failing)

	only := map[string]bool{}
	for _, n := range nodes {
		only[n] = true
	}
	var wrap func(*rollout.Config)
	if hooks != nil {
		wrap = hooks.wrap
	}
	e, err := newEngine(ctx, cfg, client, clk, out, only, wrap)
	if err != nil {
		return err
	}
	defer e.shutdown()
	if hooks != nil {
		e.onEvent = hooks.event
	}
	initial := rollout.Status{LatestAvailableRevision: 1}
	for _, n := range nodes {
		initial.NodeStatuses = append(initial.NodeStatuses, rollout.NodeStatus{NodeName: n, CurrentRevision: 1})
	}
	if err := e.store.create(ctx, initial); err != nil {
		return err
	}
	e.advance = func(ctx context.Context, res rollout.Result) error {
		moved, err := k.step(ctx)
		if err != nil {
			return err
		}
		step := time.Second
		if !moved && res.RequeueAfter > 0 {
			step = res.RequeueAfter
		}
		clk.Step(step)
		return waitForCache(ctx, client, cfg.namespace, e.pods)
	}
	for _, rev := range []int32{2, 3} {
		if err := e.rollTo(ctx, rev, cfg.maxSyncs); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "converged on revision 3 after %d syncs and %v of simulated time\n\n", e.syncs, clk.Since(e.start))
	return e.printTable(ctx)
}

// waitForCache waits (milliseconds) until the pod informer has seen every write.
func waitForCache(ctx context.Context, client kubernetes.Interface, ns string, cached func() string) error {
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	want := podFingerprint(pods)
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for cached() != want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout.C:
			return errors.New("pod informer did not catch up within 5s")
		case <-ticker.C:
		}
	}
	return nil
}

// runCluster drives the engine against a real cluster: installer pods are
// created in the namespace, operand (mirror) pods <operand>-<node> are read
// from it, and the status is kept in a ConfigMap there.
func runCluster(ctx context.Context, cfg config, client kubernetes.Interface, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: cfg.nodeSelector})
	if err != nil {
		return err
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("no nodes match %q", cfg.nodeSelector)
	}
	if err := ensureNamespace(ctx, client, cfg.namespace); err != nil {
		return err
	}
	e, err := newEngine(ctx, cfg, client, clock.RealClock{}, out, nil, nil)
	if err != nil {
		return err
	}
	defer e.shutdown()
	initial := rollout.Status{}
	for _, n := range nodes.Items {
		initial.NodeStatuses = append(initial.NodeStatuses, rollout.NodeStatus{NodeName: n.Name})
	}
	if err := e.store.create(ctx, initial); err != nil {
		return err
	}
	e.advance = func(ctx context.Context, res rollout.Result) error {
		wait := 2 * time.Second
		if res.RequeueAfter > 0 && res.RequeueAfter < wait {
			wait = res.RequeueAfter
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
			return nil
		}
	}
	if err := e.rollTo(ctx, int32(cfg.revision), cfg.maxSyncs); err != nil {
		return err
	}
	return e.printTable(ctx)
}
