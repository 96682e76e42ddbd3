// Package staticpodrollout is the harness of examples/staticpod-rollout: it
// wires the rollout engine to client-go through package kube
// (kube.RolloutPods for installer and operand pods and nodes,
// kube.ConfigMapStatusStore for the status, kube.RecordLegacyEvents for the
// events) and plays the example's scenario on an in-memory cluster or a real
// apiserver with a simulated kubelet.
package staticpodrollout

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// Config is what the example's flags set. Zero MaxUnavailable, MaxSyncs and
// Timeout scale with Nodes (see Scaled).
type Config struct {
	Nodes          int
	Kubeconfig     string
	Namespace      string
	Operand        string
	Image          string
	NodeSelector   string
	Revision       int
	MaxUnavailable int
	MaxSyncs       int
	Timeout        time.Duration
}

// detailedNodes is the largest cluster whose every sync, event and node is
// printed; a larger one prints a progress line every 10% of its nodes.
const detailedNodes = 50

// Scaled fills in the limits left zero from the number of nodes: a node in
// 100 may be unavailable at once, each wave of nodes may take 50 syncs, and
// the -kubeconfig mode may take 10 minutes plus a second a node.
func (c Config) Scaled() Config {
	if c.MaxUnavailable == 0 {
		c.MaxUnavailable = max(1, c.Nodes/100)
	}
	if c.MaxSyncs == 0 {
		c.MaxSyncs = 100 + 50*((c.Nodes+c.MaxUnavailable-1)/c.MaxUnavailable)
	}
	if c.Timeout == 0 {
		c.Timeout = 10*time.Minute + time.Duration(c.Nodes)*time.Second
	}
	return c
}

// SimulateQPS is the client rate limit of -simulate-kubelet: the simulated
// kubelet and the cache checks between syncs read much more than a
// controller would, so client-go's default of 5 requests a second would make
// the scenario take half a minute; it grows with the nodes.
func SimulateQPS(nodes int) float32 { return float32(100 + 10*nodes) }

// Hooks let tests wrap the controller's host interfaces (Wrap) and see
// every event the engine returns (Event).
type Hooks struct {
	Wrap  func(*rollout.Config)
	Event func(rollout.Event)
}

// StatusName is the name of the status ConfigMap of operand.
func StatusName(operand string) string { return operand + "-rollout-status" }

// NewStatusStore is the ConfigMap status store of the example.
func NewStatusStore(client kubernetes.Interface, ns, operand string) (*kube.ConfigMapStatusStore[rollout.Status], error) {
	return kube.NewConfigMapStatusStore[rollout.Status](client.CoreV1(), ns, StatusName(operand), "")
}

// engine wires the rollout Controller to client-go.
type engine struct {
	cfg     Config
	store   *kube.ConfigMapStatusStore[rollout.Status]
	ctrl    *rollout.Controller
	onEvent func(rollout.Event) // a test's hook on every event, nil in the program
	clock   clock.PassiveClock
	start   time.Time
	out     io.Writer
	syncs   int
	pods    func() string            // fingerprint of the pod cache
	cached  func(name string) string // resource version of a pod in the cache
	factory informers.SharedInformerFactory
	stop    context.CancelFunc // stops the informers
	events  record.EventBroadcaster
	done    <-chan struct{} // closed when the broadcaster's context ends
	rec     record.EventRecorder
	ref     *corev1.ConfigMap  // the object the events are about
	emitted atomic.Int64       // the events the engine emitted
	written *countingEventSink // the events written to the API
	// advance runs between syncs: the kubelet and the fake clock in memory, a wait on a real cluster.
	advance func(ctx context.Context, res rollout.Result) error
}

// newEngine wires the engine; a non-nil wrap may replace the controller's
// host interfaces (tests use it).
func newEngine(ctx context.Context, cfg Config, client kubernetes.Interface, clk clock.PassiveClock, out io.Writer,
	wrap func(*rollout.Config)) (*engine, error) {
	selector, err := labels.Parse(cfg.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("-node-selector: %w", err)
	}
	store, err := NewStatusStore(client, cfg.Namespace, cfg.Operand)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(cfg.Namespace))
	podLister := factory.Core().V1().Pods().Lister()
	nodeLister := factory.Core().V1().Nodes().Lister()
	informerCtx, stop := context.WithCancel(ctx)
	factory.Start(informerCtx.Done())
	fail := func(err error) (*engine, error) {
		stop()
		factory.Shutdown()
		return nil, err
	}
	for typ, ok := range factory.WaitForCacheSync(informerCtx.Done()) {
		if !ok {
			return fail(fmt.Errorf("informer cache for %v did not sync", typ))
		}
	}
	detailed := cfg.Nodes <= detailedNodes
	pods, err := kube.NewRolloutPods(kube.RolloutPodsConfig{Client: client, Pods: podLister, Nodes: nodeLister,
		Namespace: cfg.Namespace, Operand: cfg.Operand, NodeSelector: selector,
		InstallerPod: func(inst rollout.Installer) *corev1.Pod {
			if detailed {
				fmt.Fprintf(out, "    creating installer %s\n", inst.Name)
			}
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: cfg.Image,
				Command: []string{"sh", "-c", fmt.Sprintf("echo installing %s revision %d on %s", cfg.Operand, inst.Revision, inst.Node)}}}}}
		}})
	if err != nil {
		return fail(err)
	}
	rc := rollout.Config{Status: store, Installers: pods, Operands: pods, Nodes: pods, Clock: clk,
		Policy: rollout.Policy{MaxUnavailable: int32(cfg.MaxUnavailable)}}
	if wrap != nil {
		wrap(&rc)
	}
	ctrl, err := rollout.NewController(rc)
	if err != nil {
		return fail(err)
	}
	// Every event of a large rollout is written: the correlator's spam
	// filter and aggregation would otherwise drop or merge them.
	burst := max(25, 20*cfg.Nodes)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(
		record.CorrelatorOptions{BurstSize: burst, MaxEvents: burst, LRUCacheSize: max(4096, burst)}))
	written := &countingEventSink{EventSink: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(cfg.Namespace)}}
	broadcaster.StartRecordingToSink(written)
	return &engine{
		cfg: cfg, store: store, clock: clk, start: clk.Now(), out: out, factory: factory, stop: stop,
		events: broadcaster, done: ctx.Done(), written: written, ctrl: ctrl,
		rec: broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "staticpod-rollout"}),
		ref: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: StatusName(cfg.Operand), Namespace: cfg.Namespace}},
		pods: func() string {
			pods, _ := podLister.Pods(cfg.Namespace).List(labels.Everything())
			return podFingerprint(pods)
		},
		cached: func(name string) string {
			pod, err := podLister.Pods(cfg.Namespace).Get(name)
			if err != nil {
				return ""
			}
			return pod.ResourceVersion
		},
	}, nil
}

// eventFlushTimeout bounds how long shutdown waits for the events of the
// last syncs to be written, plus a millisecond a node.
const eventFlushTimeout = 5 * time.Second

// shutdown waits until the events of the last syncs are written, then stops
// the event broadcaster and the informers and waits for them.
func (e *engine) shutdown() {
	e.flushEvents(eventFlushTimeout + time.Duration(e.cfg.Nodes)*time.Millisecond)
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
	for e.written.count() < e.emitted.Load() {
		select {
		case <-e.done:
			return
		case <-deadline.C:
			return
		case <-ticker.C:
		}
	}
}

// create stores the initial status unless the ConfigMap exists.
func (e *engine) create(ctx context.Context, st rollout.Status) error {
	_, err := e.store.UpdateStatus(ctx, st, "")
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
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
func (e *engine) rollTo(ctx context.Context, rev int32) error {
	if err := e.setLatest(ctx, rev); err != nil {
		return fmt.Errorf("setting latest revision %d: %w", rev, err)
	}
	fmt.Fprintf(e.out, "== revision %d is the latest\n", rev)
	detailed, reported := e.cfg.Nodes <= detailedNodes, 0
	for range e.cfg.MaxSyncs {
		res, err := e.ctrl.Sync(ctx)
		kube.RecordLegacyEvents(e.rec, e.ref, res.Events)
		e.emitted.Add(int64(len(res.Events)))
		for _, ev := range res.Events {
			if detailed {
				fmt.Fprintf(e.out, "    event %s %s: %s\n", ev.Type, ev.Reason, ev.Message)
			}
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
		if tenth := 10 * atLatest / max(1, len(st.NodeStatuses)); detailed || tenth > reported {
			reported = tenth
			fmt.Fprintf(e.out, "[%6s] sync %3d: %d/%d nodes at revision %d - %s\n", e.clock.Since(e.start).Round(time.Second),
				e.syncs, atLatest, len(st.NodeStatuses), rev, progressing.Message)
		}
		if st.Converged() {
			return nil
		}
		if err := e.advance(ctx, res); err != nil {
			return err
		}
	}
	return fmt.Errorf("revision %d did not converge within %d syncs (-max-syncs)", rev, e.cfg.MaxSyncs)
}

// printTable prints the nodes (up to detailedNodes of them) and conditions of the persisted status.
func (e *engine) printTable(ctx context.Context) error {
	st, _, err := e.store.GetStatus(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(e.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCURRENT\tTARGET\tLAST FAILED\tFAILURES\tLAST ERROR")
	for i, n := range st.NodeStatuses {
		if i == detailedNodes {
			fmt.Fprintf(w, "... %d more\n", len(st.NodeStatuses)-i)
			break
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%s\n", n.NodeName, n.CurrentRevision, n.TargetRevision,
			n.LastFailedRevision, n.LastFailedCount, strings.Join(n.LastFailedErrors, "; "))
	}
	fmt.Fprintln(w, "\nCONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, c := range st.Conditions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, strings.ReplaceAll(c.Message, "\n", " | "))
	}
	return w.Flush()
}

// Simulate rolls 1 -> 2 -> 3 with a simulated kubelet and a fake clock, on
// the fake clientset or on a real apiserver without kubelets. Non-nil hooks
// let tests wrap the controller's host interfaces and see every event.
func Simulate(ctx context.Context, cfg Config, client kubernetes.Interface, out io.Writer, hooks *Hooks) error {
	cfg = cfg.Scaled()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	nodes := make([]string, cfg.Nodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("master-%d", i)
	}
	if err := Seed(ctx, client, nodes, cfg.Namespace, cfg.Operand, clk); err != nil {
		return fmt.Errorf("creating the nodes and operand pods: %w", err)
	}
	failing := nodes[min(1, len(nodes)-1)]
	k := &kubelet{client: client, ns: cfg.Namespace, operand: cfg.Operand, clock: clk,
		failures: map[string]string{"installer-2-" + failing: "copying secret/serving-cert: connection refused"}}
	where := "in-memory cluster"
	if cfg.Kubeconfig != "" {
		where = "apiserver " + cfg.Kubeconfig + " with a simulated kubelet"
	}
	fmt.Fprintf(out, "%s: %d nodes, up to %d unavailable, installer-2-%s will fail once\n", where, len(nodes), cfg.MaxUnavailable, failing)

	cacheTimeout := 5*time.Second + time.Duration(cfg.Nodes)*time.Millisecond
	var e *engine
	wrap := func(c *rollout.Config) {
		c.Installers = &pacedInstallers{InstallerClient: c.Installers, wait: func(ctx context.Context, name string) error {
			return waitForPod(ctx, e.cached, func(rv string) bool { return rv != "" }, name, cacheTimeout)
		}}
		if hooks != nil && hooks.Wrap != nil {
			hooks.Wrap(c)
		}
	}
	e, err := newEngine(ctx, cfg, client, clk, out, wrap)
	if err != nil {
		return err
	}
	defer e.shutdown()
	if hooks != nil {
		e.onEvent = hooks.Event
	}
	initial := rollout.Status{LatestAvailableRevision: 1}
	for _, n := range nodes {
		initial.NodeStatuses = append(initial.NodeStatuses, rollout.NodeStatus{NodeName: n, CurrentRevision: 1})
	}
	if err := e.create(ctx, initial); err != nil {
		return err
	}
	writes := 0
	k.written = func(ctx context.Context, pod *corev1.Pod) error {
		if writes++; writes%paceWrites != 0 {
			return nil
		}
		return waitForPod(ctx, e.cached, func(rv string) bool { return rv == pod.ResourceVersion }, pod.Name, cacheTimeout)
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
		return waitForCache(ctx, client, cfg.Namespace, e.pods, cacheTimeout)
	}
	for _, rev := range []int32{2, 3} {
		if err := e.rollTo(ctx, rev); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "converged on revision 3 after %d syncs and %v of simulated time\n\n", e.syncs, clk.Since(e.start))
	return e.printTable(ctx)
}

// paceWrites is how many pod writes the simulated kubelet (or installers the
// engine) makes before it waits for the pod informer to see them: client-go's
// fake clientset panics when more than 100 watch events wait for an informer.
const paceWrites = 25

// pacedInstallers waits, every paceWrites installers the engine ensures,
// until the pod informer has seen the last one.
type pacedInstallers struct {
	rollout.InstallerClient
	ensured int
	wait    func(ctx context.Context, name string) error
}

func (p *pacedInstallers) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	if err := p.InstallerClient.EnsureInstaller(ctx, inst); err != nil {
		return err
	}
	if p.ensured++; p.ensured%paceWrites != 0 {
		return nil
	}
	return p.wait(ctx, inst.Name)
}

// waitForPod waits (milliseconds) until the resource version of the pod
// called name in the informer cache ("" when it has none) is as wanted.
func waitForPod(ctx context.Context, cached func(name string) string, wanted func(rv string) bool, name string, timeout time.Duration) error {
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !wanted(cached(name)) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("pod informer did not see pod %s within %v (it grows with -nodes)", name, timeout)
		case <-ticker.C:
		}
	}
	return nil
}

// waitForCache waits (milliseconds) until the pod informer has seen every write.
func waitForCache(ctx context.Context, client kubernetes.Interface, ns string, cached func() string, timeout time.Duration) error {
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
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for cached() != want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("pod informer did not catch up within %v (it grows with -nodes)", timeout)
		case <-ticker.C:
		}
	}
	return nil
}

// RunCluster drives the engine against a real cluster: installer pods are
// created in the namespace, operand (mirror) pods <operand>-<node> are read
// from it, and the status is kept in a ConfigMap there.
func RunCluster(ctx context.Context, cfg Config, client kubernetes.Interface, out io.Writer) error {
	cfg = cfg.Scaled()
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, fmt.Errorf("-timeout %v passed: %w", cfg.Timeout, context.DeadlineExceeded))
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: cfg.NodeSelector})
	if err != nil {
		return err
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("no nodes match %q", cfg.NodeSelector)
	}
	if err := ensureNamespace(ctx, client, cfg.Namespace); err != nil {
		return err
	}
	e, err := newEngine(ctx, cfg, client, clock.RealClock{}, out, nil)
	if err != nil {
		return err
	}
	defer e.shutdown()
	initial := rollout.Status{}
	for _, n := range nodes.Items {
		initial.NodeStatuses = append(initial.NodeStatuses, rollout.NodeStatus{NodeName: n.Name})
	}
	if err := e.create(ctx, initial); err != nil {
		return err
	}
	e.advance = func(ctx context.Context, res rollout.Result) error {
		wait := 2 * time.Second
		if res.RequeueAfter > 0 && res.RequeueAfter < wait {
			wait = res.RequeueAfter
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
			return nil
		}
	}
	if err := e.rollTo(ctx, int32(cfg.Revision)); err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return err
	}
	return e.printTable(ctx)
}

// countingEventSink is the broadcaster's sink: it writes events to the API
// and counts the successful writes, so that shutdown can wait for them.
type countingEventSink struct {
	record.EventSink
	written atomic.Int64
}

var _ record.EventSink = (*countingEventSink)(nil)

func (s *countingEventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.counted(s.EventSink.Create(e))
}

func (s *countingEventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.counted(s.EventSink.Update(e))
}

func (s *countingEventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.counted(s.EventSink.Patch(e, data))
}

func (s *countingEventSink) counted(e *corev1.Event, err error) (*corev1.Event, error) {
	if err == nil {
		s.written.Add(1)
	}
	return e, err
}

// count returns how many events were written.
func (s *countingEventSink) count() int64 { return s.written.Load() }
