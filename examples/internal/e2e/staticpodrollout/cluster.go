// Package staticpodrollout is the cluster of examples/staticpod-rollout:
// the example wires the rollout engine to client-go itself, and this
// package plays the rest. In memory, or on a real apiserver that has no
// kubelet, it seeds ready nodes and operand pods, runs a simulated kubelet
// that moves installer and operand pods through their phases (with one
// scripted installer failure) on a fake clock, and acts as the revision
// controller that publishes revisions 2 and 3. On a real cluster it lists
// the nodes and publishes -revision. Either way it prints the run's
// progress and final table.
package staticpodrollout

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/cli"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// Config is what the example's flags set. Zero MaxUnavailable, MaxSyncs and
// Timeout scale with Nodes (see Scaled).
type Config struct {
	Nodes          int
	Kubeconfig     string
	Simulate       bool
	Namespace      string
	Operand        string
	Image          string
	NodeSelector   string
	Revision       int
	MaxUnavailable int
	MaxSyncs       int
	Timeout        time.Duration
	// Plan prints the decision of every sync (rollout.Decision's String).
	Plan bool
}

// Validate returns a *cli.UsageError naming the first flag whose value
// cannot run.
func (c Config) Validate() error {
	switch {
	case c.Nodes < 1:
		return cli.Errorf("nodes", "%d is not at least 1", c.Nodes)
	case c.Revision < 1:
		return cli.Errorf("revision", "%d is not at least 1", c.Revision)
	case c.MaxUnavailable < 0:
		return cli.Errorf("max-unavailable", "%d is negative", c.MaxUnavailable)
	case c.MaxSyncs < 0:
		return cli.Errorf("max-syncs", "%d is negative", c.MaxSyncs)
	case c.Timeout < 0:
		return cli.Errorf("timeout", "%v is negative", c.Timeout)
	}
	if _, err := labels.Parse(c.NodeSelector); err != nil {
		return cli.Errorf("node-selector", "%v", err)
	}
	return nil
}

// Simulated reports whether the run plays the simulated cluster: in memory,
// or on an apiserver with -simulate-kubelet.
func (c Config) Simulated() bool { return c.Kubeconfig == "" || c.Simulate }

// detailedNodes is the largest cluster whose every sync, event and node is
// printed; a larger one prints a progress line every 10% of its nodes.
const detailedNodes = 50

// Scaled fills in the limits left zero from the number of nodes: a node in
// 100 may be unavailable at once, each wave of nodes may take 50 syncs, and
// the run may take 10 minutes plus a second a node.
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
// kubelet writes much more than a controller would, so client-go's default
// of 5 requests a second would make the scenario take half a minute; it
// grows with the nodes.
func SimulateQPS(nodes int) float32 { return float32(100 + 10*nodes) }

// RateLimit is the client's QPS and burst: SimulateQPS with
// -simulate-kubelet, client-go's defaults (zero) otherwise.
func (c Config) RateLimit() (qps float32, burst int) {
	if !c.Simulate {
		return 0, 0
	}
	qps = SimulateQPS(c.Nodes)
	return qps, int(2 * qps)
}

// Selector is -node-selector parsed; Validate rejects one that does not
// parse, which selects no node here.
func (c Config) Selector() labels.Selector {
	s, err := labels.Parse(c.NodeSelector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// Hooks let tests wrap the controller's host interfaces and see every event
// the engine returns. A nil *Hooks does nothing.
type Hooks struct {
	Wrap  func(*rollout.Config)
	Event func(converge.Event)
}

// WrapConfig lets the test wrap the host interfaces of c.
func (h *Hooks) WrapConfig(c *rollout.Config) {
	if h != nil && h.Wrap != nil {
		h.Wrap(c)
	}
}

// StatusName is the name of the status ConfigMap of operand.
func StatusName(operand string) string { return operand + "-rollout-status" }

// NewStatusStore is the ConfigMap status store of the example.
func NewStatusStore(client kubernetes.Interface, ns, operand string) (*kube.ConfigMapStatusStore[rollout.Status], error) {
	return kube.NewConfigMapStatusStore[rollout.Status](client.CoreV1(), ns, StatusName(operand), "")
}

// Cluster is the cluster the example rolls out on, and what it prints.
type Cluster struct {
	cfg       Config
	store     rollout.StatusStore
	out       io.Writer
	hooks     *Hooks
	clock     clock.PassiveClock
	fakeClock *clocktesting.FakeClock // nil on a real cluster
	kubelet   *kubelet                // nil on a real cluster
	initial   rollout.Status
	revisions []int32
	start     time.Time
	syncs     int
	reported  int // tenths of the nodes at the latest revision last printed
	emitted   atomic.Int64
	sink      *countingEventSink
	// forget clears the calls client-go's fake clientset records, nil for
	// another client.
	forget func()
}

// Start readies the cluster of cfg (scaled): on a simulated one it seeds
// -nodes ready nodes and operand pods at revision 1 and starts the kubelet;
// on a real one it lists the nodes matching -node-selector. store is the
// engine's status store, which the cluster's revision controller writes
// to; hooks (nil in the program) see every event.
func Start(ctx context.Context, client kubernetes.Interface, store rollout.StatusStore, cfg Config, out io.Writer,
	hooks *Hooks) (*Cluster, error) {
	c := &Cluster{cfg: cfg, store: store, out: out, hooks: hooks, clock: clock.RealClock{},
		sink: &countingEventSink{EventSink: &typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(cfg.Namespace)}}}
	if !cfg.Simulated() {
		return c, c.listNodes(ctx, client)
	}
	if f, ok := client.(interface{ ClearActions() }); ok {
		c.forget = f.ClearActions
	}
	c.fakeClock = clocktesting.NewFakeClock(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	c.clock, c.start, c.revisions = c.fakeClock, c.fakeClock.Now(), []int32{2, 3}
	nodes := make([]string, cfg.Nodes)
	c.initial.LatestAvailableRevision = 1
	for i := range nodes {
		nodes[i] = fmt.Sprintf("master-%d", i)
		c.initial.NodeStatuses = append(c.initial.NodeStatuses, rollout.NodeStatus{NodeName: nodes[i], CurrentRevision: 1})
	}
	if err := Seed(ctx, client, nodes, cfg.Namespace, cfg.Operand, c.fakeClock); err != nil {
		return nil, fmt.Errorf("creating the nodes and operand pods: %w", err)
	}
	failing := nodes[min(1, len(nodes)-1)]
	k, err := startKubelet(ctx, client, cfg.Namespace, cfg.Operand, c.fakeClock,
		map[string]string{"installer-2-" + failing: "copying secret/serving-cert: connection refused"}, c.waitTimeout())
	if err != nil {
		return nil, err
	}
	c.kubelet = k
	where := "in-memory cluster"
	if cfg.Kubeconfig != "" {
		where = "apiserver " + cfg.Kubeconfig + " with a simulated kubelet"
	}
	fmt.Fprintf(out, "%s: %d nodes, up to %d unavailable, installer-2-%s will fail once\n", where, len(nodes), cfg.MaxUnavailable, failing)
	return c, nil
}

// listNodes makes the nodes matching -node-selector the initial status, at
// no revision, and -revision the one to publish.
func (c *Cluster) listNodes(ctx context.Context, client kubernetes.Interface) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: c.cfg.NodeSelector})
	if err != nil {
		return err
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("no nodes match %q", c.cfg.NodeSelector)
	}
	for _, n := range nodes.Items {
		c.initial.NodeStatuses = append(c.initial.NodeStatuses, rollout.NodeStatus{NodeName: n.Name})
	}
	c.start, c.revisions = c.clock.Now(), []int32{int32(c.cfg.Revision)}
	return ensureNamespace(ctx, client, c.cfg.Namespace)
}

// waitTimeout bounds each wait for an informer: 5 seconds plus a millisecond a node.
func (c *Cluster) waitTimeout() time.Duration {
	return 5*time.Second + time.Duration(c.cfg.Nodes)*time.Millisecond
}

// Clock is the cluster's clock: a fake one on a simulated cluster.
func (c *Cluster) Clock() clock.PassiveClock { return c.clock }

// Revisions are the revisions the cluster's revision controller publishes, in order.
func (c *Cluster) Revisions() []int32 { return c.revisions }

// EventSink is the sink the event broadcaster writes to: the API's events,
// counted so that Finish can wait until they are written.
func (c *Cluster) EventSink() record.EventSink { return c.sink }

// InstallerPod is the pod that installs inst: one container that would
// copy the revision's files onto the node.
func (c *Cluster) InstallerPod(inst rollout.Installer) *corev1.Pod {
	if c.detailed() {
		fmt.Fprintf(c.out, "    creating installer %s\n", inst.Name)
	}
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: c.cfg.Image,
		Command: []string{"sh", "-c", fmt.Sprintf("echo installing %s revision %d on %s", c.cfg.Operand, inst.Revision, inst.Node)}}}}}
}

func (c *Cluster) detailed() bool { return c.cfg.Nodes <= detailedNodes }

// Publish makes rev the latest available revision, as a revision
// controller would, creating the status first if it does not exist.
func (c *Cluster) Publish(ctx context.Context, rev int32) error {
	if _, err := c.store.UpdateStatus(ctx, c.initial, ""); err != nil && !apierrors.IsConflict(err) {
		return err
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, rv, err := c.store.GetStatus(ctx)
		if err != nil {
			return err
		}
		st.LatestAvailableRevision = rev
		_, err = c.store.UpdateStatus(ctx, st, rv)
		return err
	})
	if err != nil {
		return fmt.Errorf("setting latest revision %d: %w", rev, err)
	}
	fmt.Fprintf(c.out, "== revision %d is the latest\n", rev)
	c.reported = 0
	return nil
}

// Report prints what a sync did (every event and sync up to detailedNodes
// nodes, then a line every 10% of the nodes) and reports whether every
// node runs rev.
func (c *Cluster) Report(ctx context.Context, rev int32, res converge.Result) (bool, error) {
	c.emitted.Add(int64(len(res.Events)))
	for _, ev := range res.Events {
		if c.detailed() {
			fmt.Fprintf(c.out, "    event %s %s: %s\n", ev.Type, ev.Reason, ev.Message)
		}
		if c.hooks != nil && c.hooks.Event != nil {
			c.hooks.Event(ev)
		}
	}
	c.syncs++
	st, _, err := c.store.GetStatus(ctx)
	if err != nil {
		return false, err
	}
	atLatest, installing, waiting := 0, 0, 0
	for _, n := range st.NodeStatuses {
		switch {
		case n.InTransition() && (n.InstallerOrderedTime != nil || n.InstalledTime != nil):
			installing++
		case n.InTransition():
			waiting++
		case n.CurrentRevision == rev:
			atLatest++
		}
	}
	if tenth := 10 * atLatest / max(1, len(st.NodeStatuses)); c.detailed() || tenth > c.reported {
		c.reported = tenth
		fmt.Fprintf(c.out, "[%6s] sync %3d: %d/%d nodes at revision %d%s\n", c.clock.Since(c.start).Round(time.Second),
			c.syncs, atLatest, len(st.NodeStatuses), rev, progress(installing, waiting, st.Holds))
	}
	return st.Converged(), nil
}

// progress says what a sync line adds to the count of nodes at the
// revision: the nodes installing, those waiting to install (a retry's
// backoff, the budget, the gate), and what holds nodes back (the status's
// holds, at most 3 of them).
func progress(installing, waiting int, holds []converge.Hold) string {
	var b strings.Builder
	if installing > 0 {
		fmt.Fprintf(&b, ", %d installing", installing)
	}
	if waiting > 0 {
		fmt.Fprintf(&b, ", %d waiting to install", waiting)
	}
	for i, h := range holds {
		if i == 3 {
			fmt.Fprintf(&b, " and %d more holds", len(holds)-i)
			break
		}
		sep := "; "
		if i == 0 {
			sep = " - held: "
		}
		b.WriteString(sep + h.Message)
	}
	return b.String()
}

// PrintDecision prints d, the decision of a sync, indented under the sync
// line (with Config.Plan).
func (c *Cluster) PrintDecision(d rollout.Decision) {
	fmt.Fprintf(c.out, "    plan: %s\n", strings.ReplaceAll(d.String(), "\n", "\n          "))
}

// Wait lets the cluster move on until the next sync, after requeueAfter
// when the engine asks for it. A real cluster moves on its own for up to 2
// seconds. A simulated one moves in lockstep: the kubelet waits until its
// informer has seen the engine's writes, moves every pod one phase on,
// steps the fake clock a second (requeueAfter when no pod moved), and
// waits until pods, the engine's pod cache, has seen the kubelet's writes.
// In memory it also forgets the calls the fake clientset recorded: it keeps
// a copy of every object written, and the status writes of a 10,000-node
// rollout alone (3 a node a revision, of a 0.66 MB status) would hold 40 GB.
func (c *Cluster) Wait(ctx context.Context, requeueAfter time.Duration, pods corelisters.PodLister) error {
	if c.kubelet == nil {
		wait := 2 * time.Second
		if requeueAfter > 0 && requeueAfter < wait {
			wait = requeueAfter
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(wait):
			return nil
		}
	}
	if c.forget != nil {
		c.forget()
	}
	moved, err := c.kubelet.step(ctx)
	if err != nil {
		return err
	}
	step := time.Second
	if !moved && requeueAfter > 0 {
		step = requeueAfter
	}
	c.fakeClock.Step(step)
	return c.kubelet.barrier(ctx, pods)
}

// Finish prints how the run ended and the final table, once the events of
// the last syncs are written (the broadcaster writes them asynchronously
// and drops what is queued when it shuts down).
func (c *Cluster) Finish(ctx context.Context) error {
	if c.kubelet != nil {
		fmt.Fprintf(c.out, "converged on revision %d after %d syncs and %v of simulated time\n\n",
			c.revisions[len(c.revisions)-1], c.syncs, c.clock.Since(c.start))
	}
	c.flushEvents(ctx)
	return c.printTable(ctx)
}

// Stop stops the simulated kubelet.
func (c *Cluster) Stop() {
	if c.kubelet != nil {
		c.kubelet.stop()
	}
}

// flushEvents waits (milliseconds) until the event sink has written as
// many events as the engine emitted, ctx ends or the wait times out: events
// are best effort, and a sink that cannot write them (no RBAC for events)
// must not fail the rollout.
func (c *Cluster) flushEvents(ctx context.Context) {
	if err := poll(ctx, c.waitTimeout(), func() bool { return c.sink.written.Load() >= c.emitted.Load() }, "%v"); err != nil {
		klog.FromContext(ctx).Info("Not every event was written", "emitted", c.emitted.Load(), "written", c.sink.written.Load(), "err", err)
	}
}

// printTable prints the nodes (up to detailedNodes of them) and conditions of the persisted status.
func (c *Cluster) printTable(ctx context.Context) error {
	st, _, err := c.store.GetStatus(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCURRENT\tTARGET\tLAST FAILED\tFAILURES\tLAST ERROR")
	for i, n := range st.NodeStatuses {
		if i == detailedNodes {
			fmt.Fprintf(w, "... %d more\n", len(st.NodeStatuses)-i)
			break
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%s\n", n.NodeName, n.CurrentRevision, revision(n.TargetRevision),
			revision(n.LastFailedRevision), n.LastFailedCount, strings.Join(n.LastFailedErrors, "; "))
	}
	fmt.Fprintln(w, "\nCONDITION\tSTATUS\tREASON\tMESSAGE")
	for _, cond := range st.Conditions {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cond.Type, cond.Status, cond.Reason, strings.ReplaceAll(cond.Message, "\n", " | "))
	}
	return w.Flush()
}

// revision renders a revision of the node table: "-" for none.
func revision(r int32) string {
	if r == 0 {
		return "-"
	}
	return strconv.Itoa(int(r))
}

// poll checks done every millisecond until it holds, ctx ends or timeout
// passes; the error then is format with the timeout.
func poll(ctx context.Context, timeout time.Duration, done func() bool, format string) error {
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C:
			return fmt.Errorf(format, timeout)
		case <-ticker.C:
		}
	}
	return nil
}

// countingEventSink writes events to the API and counts the successful
// writes.
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
