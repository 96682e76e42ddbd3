package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/examples/internal/e2e/staticpodrollout"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// The scenario's nodes and the installers it creates, in order: revision 2
// node by node with one failure and its retry on master-1, then revision 3.
var (
	scenarioNodes      = []string{"master-0", "master-1", "master-2"}
	scenarioInstallers = []string{
		"installer-2-master-0", "installer-2-master-1", "installer-2-retry-1-master-1", "installer-2-master-2",
		"installer-3-master-0", "installer-3-master-1", "installer-3-master-2",
	}
)

// otherWriterAnnotation is the annotation the interfering writer bumps.
const otherWriterAnnotation = "converge.dev/other-writer"

// scenarioRun is what one simulated rollout did, seen through wrappers of the
// controller's host interfaces.
type scenarioRun struct {
	mu sync.Mutex
	// installers are the installers the engine ensured, in order.
	installers []string
	// events are the events the engine emitted, in order.
	events []converge.Event
	// calls logs the engine's status calls: "get", "write" or "conflict".
	calls []string
	// interfered are the node transitions whose first write the other writer raced.
	interfered []string
	// apiConflicts counts conflicts that carry the API server's 409.
	apiConflicts int
}

func (r *scenarioRun) log(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

// recordingInstallers records every installer the engine ensures.
type recordingInstallers struct {
	rollout.InstallerClient
	run *scenarioRun
}

func (i recordingInstallers) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	i.run.mu.Lock()
	i.run.installers = append(i.run.installers, inst.Name)
	i.run.mu.Unlock()
	return i.InstallerClient.EnsureInstaller(ctx, inst)
}

// interferingStore wraps the ConfigMap status store. With interfere set,
// before the first write of every node transition it updates the
// ConfigMap's annotations through the clientset, as another writer would
// between the engine's read and its write, so that the write carries a stale
// resource version.
type interferingStore struct {
	rollout.StatusStore
	client    kubernetes.Interface
	ns, name  string
	interfere bool
	run       *scenarioRun
	seen      map[string]bool
}

func (s *interferingStore) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	s.run.log("get")
	return s.StatusStore.GetStatus(ctx)
}

func (s *interferingStore) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	if s.interfere {
		persisted, _, err := s.StatusStore.GetStatus(ctx)
		if err != nil {
			return "", err
		}
		if tr := nodeTransitions(persisted, st); tr != "" && !s.seen[tr] {
			s.seen[tr] = true
			if err := s.bump(ctx); err != nil {
				return "", err
			}
			s.run.mu.Lock()
			s.run.interfered = append(s.run.interfered, tr)
			s.run.mu.Unlock()
		}
	}
	newRV, err := s.StatusStore.UpdateStatus(ctx, st, rv)
	switch {
	case converge.IsConflict(err):
		s.run.log("conflict")
		if apierrors.IsConflict(err) {
			s.run.mu.Lock()
			s.run.apiConflicts++
			s.run.mu.Unlock()
		}
	case err == nil:
		s.run.log("write")
	}
	return newRV, err
}

// bump increments the other writer's annotation with a read and an update of
// its own.
func (s *interferingStore) bump(ctx context.Context) error {
	cm, err := s.client.CoreV1().ConfigMaps(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(cm.Annotations[otherWriterAnnotation])
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[otherWriterAnnotation] = strconv.Itoa(n + 1)
	_, err = s.client.CoreV1().ConfigMaps(s.ns).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// nodeTransitions describes how the nodes of next differ from persisted in
// revisions or failure counts, "" when they do not.
func nodeTransitions(persisted, next rollout.Status) string {
	var out []string
	for _, n := range next.NodeStatuses {
		i := slices.IndexFunc(persisted.NodeStatuses, func(p rollout.NodeStatus) bool { return p.NodeName == n.NodeName })
		if i < 0 {
			continue
		}
		p := persisted.NodeStatuses[i]
		if p.CurrentRevision != n.CurrentRevision || p.TargetRevision != n.TargetRevision || p.LastFailedCount != n.LastFailedCount {
			out = append(out, fmt.Sprintf("%s current %d->%d target %d->%d failures %d->%d", n.NodeName,
				p.CurrentRevision, n.CurrentRevision, p.TargetRevision, n.TargetRevision, p.LastFailedCount, n.LastFailedCount))
		}
	}
	return strings.Join(out, "; ")
}

// runScenario plays the simulated rollout in ns with client, recording what
// the engine does, and racing every node transition's first status write
// when interfere is set.
func runScenario(t *testing.T, client kubernetes.Interface, kubeconfig, ns string, interfere bool) *scenarioRun {
	t.Helper()
	cfg := scenarioConfig(ns, kubeconfig)
	run := &scenarioRun{}
	hooks := &staticpodrollout.Hooks{
		Wrap: func(c *rollout.Config) {
			c.Status = &interferingStore{StatusStore: c.Status, client: client, ns: ns, name: staticpodrollout.StatusName(cfg.Operand),
				interfere: interfere, run: run, seen: map[string]bool{}}
			c.Installers = recordingInstallers{InstallerClient: c.Installers, run: run}
		},
		Event: func(e converge.Event) {
			run.mu.Lock()
			run.events = append(run.events, e)
			run.mu.Unlock()
		},
	}
	_, ctx := ktesting.NewTestContext(t)
	var out bytes.Buffer
	require.NoError(t, rollOut(ctx, cfg.Scaled(), client, &out, hooks), out.String())
	return run
}

// scenarioConfig is the configuration of the example's default flags in ns.
func scenarioConfig(ns, kubeconfig string) staticpodrollout.Config {
	return staticpodrollout.Config{Nodes: len(scenarioNodes), Kubeconfig: kubeconfig, Namespace: ns, Operand: "operand", Image: "busybox:1.36",
		NodeSelector: "node-role.kubernetes.io/control-plane", Revision: 1, Simulate: kubeconfig != ""}
}

// testConflictsLoseNoTransition runs the scenario twice, undisturbed and with
// another writer racing every node transition's status write, each with a
// client of its own from newClient, and checks that both end in the same
// real state.
func testConflictsLoseNoTransition(t *testing.T, newClient func() kubernetes.Interface, kubeconfig string) {
	ctx := context.Background()
	freeClient, racedClient := newClient(), newClient()
	free := runScenario(t, freeClient, kubeconfig, "conflict-free", false)
	raced := runScenario(t, racedClient, kubeconfig, "conflicted", true)

	assert.NotContains(t, free.calls, "conflict")
	// 3 nodes through 2 revisions and a failure, some transitions sharing a write.
	require.GreaterOrEqual(t, len(raced.interfered), 9, "every write that carries a node transition was raced")
	racedWrites := strings.Join(raced.interfered, "; ")
	assert.Contains(t, racedWrites, "master-1 current 2->3 target 3->0 failures 1->1",
		"a write that carries a node's new current revision was raced")
	assert.Contains(t, racedWrites, "master-1 current 1->1 target 2->2 failures 0->1",
		"the write that records the installer failure was raced")
	conflicts := 0
	for i, call := range raced.calls {
		if call != "conflict" {
			continue
		}
		conflicts++
		require.Less(t, i+1, len(raced.calls))
		assert.Equal(t, "get", raced.calls[i+1], "the engine reads the status again after conflict %d", conflicts)
	}
	assert.Equal(t, len(raced.interfered), conflicts, "every raced write conflicted")
	assert.Equal(t, conflicts, raced.apiConflicts, "every conflict is the API server's 409")

	assert.Equal(t, scenarioInstallers, free.installers)
	assert.Equal(t, free.installers, raced.installers, "the same installers, in the same order")
	assert.Equal(t, free.events, raced.events, "the same events, in the same order")
	assertEventsOnce(t, racedClient, "conflicted", raced.events)

	freeStatus := assertConverged(t, freeClient, "conflict-free")
	racedStatus := assertConverged(t, racedClient, "conflicted")
	assert.Equal(t, freeStatus, racedStatus, "the same persisted status")

	cm, err := racedClient.CoreV1().ConfigMaps("conflicted").Get(ctx, "operand-rollout-status", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(len(raced.interfered)), cm.Annotations[otherWriterAnnotation],
		"the engine's status writes keep the other writer's annotation")
}

// assertEventsOnce checks that the engine emitted no event twice and that
// the Event objects in ns are exactly those events, each counted once.
func assertEventsOnce(t *testing.T, client kubernetes.Interface, ns string, emitted []converge.Event) {
	t.Helper()
	want := map[string]int32{}
	for _, e := range emitted {
		key := e.Type + " " + e.Reason + ": " + e.Message
		assert.NotContains(t, want, key, "emitted twice")
		want[key] = 1
	}
	list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	got := map[string]int32{}
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "ConfigMap" && e.InvolvedObject.Name == "operand-rollout-status" {
			got[e.Type+" "+e.Reason+": "+e.Message] += max(e.Count, 1)
		}
	}
	assert.Equal(t, want, got, "Event objects in %s", ns)
}

// assertConverged checks the real objects in ns after the scenario: every
// operand pod runs revision 3 and is ready, exactly the scenario's
// installers exist with the scripted outcome, and the persisted status has
// every node at revision 3 with the converged conditions. It returns the
// persisted status.
func assertConverged(t *testing.T, client kubernetes.Interface, ns string) rollout.Status {
	t.Helper()
	ctx := context.Background()
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var installers []string
	operands := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		switch p.Labels[kube.LabelApp] {
		case "installer":
			installers = append(installers, p.Name)
		case "operand":
			operands[p.Name] = p
		case staticpodrollout.AppMarker:
		default:
			t.Errorf("unexpected pod %s", p.Name)
		}
	}
	assert.Empty(t, installers, "no installer outlives its decision in %s: each finished one is deleted", ns)
	for _, node := range scenarioNodes {
		op, ok := operands["operand-"+node]
		if !assert.True(t, ok, "operand pod of %s", node) {
			continue
		}
		assert.Equal(t, "3", op.Labels[kube.LabelRevision], "operand revision on %s", node)
		assert.Equal(t, corev1.PodRunning, op.Status.Phase, "operand phase on %s", node)
		assert.True(t, slices.ContainsFunc(op.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
		}), "operand on %s is ready", node)
	}
	assert.Len(t, operands, len(scenarioNodes))

	store, err := staticpodrollout.NewStatusStore(client, ns, "operand")
	require.NoError(t, err)
	st, _, err := store.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(3), st.LatestAvailableRevision)
	var names []string
	for _, n := range st.NodeStatuses {
		names = append(names, n.NodeName)
		assert.Equal(t, int32(3), n.CurrentRevision, "current revision of %s", n.NodeName)
		assert.Zero(t, n.TargetRevision, "target revision of %s", n.NodeName)
	}
	assert.ElementsMatch(t, scenarioNodes, names)
	for _, want := range []struct {
		typ    string
		status metav1.ConditionStatus
		reason string
	}{
		{conditions.TypeAvailable, metav1.ConditionTrue, ""},
		{conditions.TypeProgressing, metav1.ConditionFalse, rollout.ReasonAllNodesAtLatestRevision},
		{conditions.TypeDegraded, metav1.ConditionFalse, ""},
	} {
		c, ok := conditions.Get(st.Conditions, want.typ)
		if assert.True(t, ok, "condition %s", want.typ) {
			assert.Equal(t, want.status, c.Status, "condition %s", want.typ)
			if want.reason != "" {
				assert.Equal(t, want.reason, c.Reason, "condition %s", want.typ)
			}
		}
	}
	return st
}

func TestConflictsLoseNoTransitionInMemory(t *testing.T) {
	testConflictsLoseNoTransition(t, func() kubernetes.Interface { return staticpodrollout.NewMemoryClient() }, "")
}
