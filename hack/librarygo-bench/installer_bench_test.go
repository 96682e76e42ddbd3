//go:build librarygobench

// Package librarygobench measures library-go's static-pod installer
// controller on the steady state converge's
// BenchmarkControllerSyncNothingChanged measures (rollout/bench_test.go): a
// rollout to revision 3 where a third of the nodes are at 3, one node's
// installer is running and the rest are at 2, every operand ready, and
// nothing changed since the last sync. Run it with run.sh; the build tag
// keeps it out of the root module's builds.
package librarygobench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	operatorv1 "github.com/openshift/api/operator/v1"
	applyoperatorv1 "github.com/openshift/client-go/operator/applyconfigurations/operator/v1"
	"github.com/openshift/library-go/pkg/controller/factory"
	"github.com/openshift/library-go/pkg/operator/events"
	"github.com/openshift/library-go/pkg/operator/staticpod/controller/installer"
	"github.com/openshift/library-go/pkg/operator/staticpod/controller/revision"
	"github.com/openshift/library-go/pkg/operator/v1helpers"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	namespace     = "openshift-kube-apiserver"
	staticPodName = "kube-apiserver"
	latest        = 3
)

// The revisioned resources the controller checks on every sync (the first
// configmap holds the pod manifest) and the unrevisioned certs it checks too.
var (
	revisionConfigMaps = []revision.RevisionResource{{Name: "kube-apiserver-pod"}, {Name: "config"}}
	revisionSecrets    = []revision.RevisionResource{{Name: "localhost-serving-cert"}}
	certConfigMaps     = []installer.UnrevisionedResource{{Name: "aggregator-client-ca"}}
	certSecrets        = []installer.UnrevisionedResource{{Name: "aggregator-client"}}
)

// benchNodes are the node counts converge's benchmarks use, up to 5,000.
var benchNodes = []int{3, 100, 1000, 5000}

// midRollout mirrors converge's midRollout(n): node-%05d, a third of the
// nodes at revision 3, node n/3 installing revision 3, the rest at 2. Every
// node status carries its node's UID, as library-go's node controller
// writes it.
func midRollout(n int) []operatorv1.NodeStatus {
	nodes := make([]operatorv1.NodeStatus, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		ns := operatorv1.NodeStatus{NodeName: name, NodeUID: "uid-" + name, CurrentRevision: 2}
		switch {
		case i < n/3:
			ns.CurrentRevision = latest
		case i == n/3:
			ns.TargetRevision = latest
		}
		nodes[i] = ns
	}
	return nodes
}

// world is the cluster one benchmark syncs against: the objects of
// midRollout in a fake clientset, every operand pod running and ready at
// its node's current revision since readySince.
func world(nodes []operatorv1.NodeStatus, readySince time.Time) []runtime.Object {
	var objs []runtime.Object
	for _, cm := range revisionConfigMaps {
		objs = append(objs, configMap(fmt.Sprintf("%s-%d", cm.Name, latest)))
	}
	for _, s := range revisionSecrets {
		objs = append(objs, secret(fmt.Sprintf("%s-%d", s.Name, latest)))
	}
	for _, cm := range certConfigMaps {
		objs = append(objs, configMap(cm.Name))
	}
	for _, s := range certSecrets {
		objs = append(objs, secret(s.Name))
	}
	// The installer pods' owner.
	objs = append(objs, configMap(fmt.Sprintf("revision-status-%d", latest)))
	for _, ns := range nodes {
		objs = append(objs,
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns.NodeName, UID: types.UID(ns.NodeUID)}},
			&corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: namespace,
					Name:      staticPodName + "-" + ns.NodeName,
					Labels:    map[string]string{"app": "openshift-kube-apiserver", "revision": strconv.Itoa(int(ns.CurrentRevision))},
				},
				Spec: corev1.PodSpec{NodeName: ns.NodeName},
				Status: corev1.PodStatus{
					Phase: corev1.PodRunning,
					Conditions: []corev1.PodCondition{{
						Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readySince),
					}},
				},
			})
	}
	return objs
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)}}
}

func secret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
}

// calls counts what one sync reads and writes, whether from the API or
// from an informer's cache.
type calls struct {
	// From the API: the operator's state (the fake serves it from memory)
	// and pods (the fake clientset).
	operatorReads, operatorApplies, podGets int
	// From informers.
	cachedPodGets, configMapGets, secretGets, nodeGets int
}

func (c calls) apiReads() int { return c.operatorReads + c.podGets }

func (c calls) cacheReads() int {
	return c.cachedPodGets + c.configMapGets + c.secretGets + c.nodeGets
}

// BenchmarkInstallerControllerSync syncs library-go's InstallerController
// as library-go's static-pod operator builder wires it without
// WithMinReadyDuration (kube-controller-manager-operator,
// kube-scheduler-operator): configmaps, secrets and nodes read from
// informers, pods from the API (here the fake clientset), the operator's
// state from v1helpers' fake StaticPodOperatorClient.
func BenchmarkInstallerControllerSync(b *testing.B) {
	for _, n := range benchNodes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) { benchSync(b, n, wiring{}) })
	}
}

// BenchmarkInstallerControllerSyncMinReady is the same with
// WithMinReadyDuration(30s), as kube-apiserver-operator wires it: every
// sync then also reads every node's operand pod to see how long it has been
// ready. pods=api reads them from the API as the builder wires it;
// pods=cache from the pod informer instead, as converge's kube host does,
// which leaves the controller's own cost without the fake clientset's.
func BenchmarkInstallerControllerSyncMinReady(b *testing.B) {
	for _, cached := range []bool{false, true} {
		pods := map[bool]string{false: "api", true: "cache"}[cached]
		for _, n := range benchNodes {
			b.Run(fmt.Sprintf("pods=%s/nodes=%d", pods, n), func(b *testing.B) {
				benchSync(b, n, wiring{minReady: 30 * time.Second, cachedPods: cached})
			})
		}
	}
}

// wiring is how a benchmark builds the controller.
type wiring struct {
	minReady   time.Duration
	cachedPods bool
}

func benchSync(b *testing.B, n int, w wiring) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Operands have been ready an hour: longer than any minReady wait.
	readySince := time.Now().Add(-time.Hour)
	nodes := midRollout(n)
	client := fake.NewClientset(world(nodes, readySince)...)
	var count calls

	nsInformers := v1helpers.NewKubeInformersForNamespaces(client, namespace)
	clusterInformers := informers.NewSharedInformerFactory(client, 10*time.Minute)
	operator := &countingOperatorClient{
		StaticPodOperatorClient: v1helpers.NewFakeStaticPodOperatorClient(
			&operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			&operatorv1.StaticPodOperatorStatus{
				OperatorStatus: operatorv1.OperatorStatus{LatestAvailableRevision: latest},
				NodeStatuses:   nodes,
			},
			nil, nil),
		count: &count,
	}
	var pods corev1client.PodsGetter = countingPods{client.CoreV1(), &count}
	podLister := nsInformers.InformersFor(namespace).Core().V1().Pods().Lister()
	if w.cachedPods {
		pods = cachedPods{client.CoreV1(), podLister, &count}
	}
	recorder := events.NewInMemoryRecorder("bench", clocktesting.NewFakePassiveClock(time.Now()))
	c := installer.NewInstallerController(
		staticPodName, namespace, staticPodName,
		revisionConfigMaps, revisionSecrets,
		[]string{"cluster-kube-apiserver-operator", "installer"},
		nsInformers.InformersFor(namespace),
		countingFactory{SharedInformerFactory: clusterInformers, count: &count},
		operator,
		countingConfigMaps{v1helpers.CachedConfigMapGetter(client.CoreV1(), nsInformers), &count},
		countingSecrets{v1helpers.CachedSecretGetter(client.CoreV1(), nsInformers), &count},
		pods,
		recorder,
	).WithCerts("kube-apiserver-certs", certConfigMaps, certSecrets).
		WithMinReadyDuration(w.minReady)

	nsInformers.Start(ctx.Done())
	clusterInformers.Start(ctx.Done())
	for ns, synced := range nsInformers.WaitForCacheSync(ctx.Done()) {
		for typ, ok := range synced {
			if !ok {
				b.Fatalf("informer %v in %q did not sync", typ, ns)
			}
		}
	}
	for typ, ok := range clusterInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			b.Fatalf("informer %v did not sync", typ)
		}
	}

	syncCtx := factory.NewSyncContext("InstallerController", recorder)
	defer syncCtx.Queue().ShutDown()

	// The first sync creates node n/3's installer pod and writes the
	// conditions; the kubelet then runs the installer.
	if err := c.Sync(ctx, syncCtx); err != nil {
		b.Fatal(err)
	}
	installerPod := fmt.Sprintf("installer-%d-%s", latest, nodes[n/3].NodeName)
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, installerPod, metav1.GetOptions{})
	if err != nil {
		b.Fatalf("the first sync did not create the installer pod: %v", err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: readySince}}
	if _, err := client.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The second sync sees the running installer, from the informer too;
	// from here on nothing changes.
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		p, err := podLister.Pods(namespace).Get(installerPod)
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	}); err != nil {
		b.Fatalf("the pod informer did not see the installer running: %v", err)
	}
	if err := c.Sync(ctx, syncCtx); err != nil {
		b.Fatal(err)
	}
	_, steady, _, _ := operator.StaticPodOperatorClient.GetStaticPodOperatorState()
	steady = steady.DeepCopy()
	if !equality.Semantic.DeepEqual(steady.NodeStatuses, midRollout(n)) {
		b.Fatalf("the nodes are not where midRollout put them: %+v", steady.NodeStatuses)
	}
	if !available(steady) {
		b.Fatalf("the steady state is not what the benchmark claims: %+v", steady.Conditions)
	}
	eventsBefore := len(recorder.Events())
	logsBefore, _ := logs.written()

	count = calls{}
	client.ClearActions()
	syncs, mutations := 0, 0
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if err := c.Sync(ctx, syncCtx); err != nil {
			b.Fatal(err)
		}
		for _, a := range client.Actions() {
			if a.GetVerb() != "get" {
				mutations++
			}
		}
		client.ClearActions()
		syncs++
	}
	b.StopTimer()
	cpu = processCPU() - cpu

	if mutations != 0 {
		b.Fatalf("syncs where nothing changed made %d mutating API calls", mutations)
	}
	if count.operatorApplies != syncs {
		b.Fatalf("%d syncs applied the operator status %d times: a sync took another path", syncs, count.operatorApplies)
	}
	_, after, _, _ := operator.StaticPodOperatorClient.GetStaticPodOperatorState()
	if !equality.Semantic.DeepEqual(steady, after) {
		b.Fatalf("syncs where nothing changed changed the operator status:\nbefore %+v\nafter  %+v", steady, after)
	}
	if e := len(recorder.Events()) - eventsBefore; e != 0 {
		b.Fatalf("syncs where nothing changed recorded %d events", e)
	}
	if n, last := logs.written(); n != logsBefore {
		b.Fatalf("syncs where nothing changed logged %d bytes, the last: %s", n-logsBefore, last)
	}
	perSync := func(v int) float64 { return float64(v) / float64(syncs) }
	b.ReportMetric(float64(cpu)/float64(syncs), "cpu-ns/op")
	b.ReportMetric(perSync(count.apiReads()), "apireads/sync")
	b.ReportMetric(perSync(count.cacheReads()), "cachereads/sync")
	b.ReportMetric(perSync(count.podGets+count.cachedPodGets), "podgets/sync")
	b.ReportMetric(perSync(count.nodeGets), "nodegets/sync")
	b.ReportMetric(perSync(count.operatorApplies), "statusapplies/sync")
	b.ReportMetric(perSync(mutations), "mutations/sync")
}

// available reports whether status says what midRollout is: the installer
// conditions written, no node failing.
func available(status *operatorv1.StaticPodOperatorStatus) bool {
	want := map[string]operatorv1.ConditionStatus{
		"StaticPodsAvailable":         operatorv1.ConditionTrue,
		"NodeInstallerProgressing":    operatorv1.ConditionTrue,
		"NodeInstallerDegraded":       operatorv1.ConditionFalse,
		"InstallerControllerDegraded": operatorv1.ConditionFalse,
	}
	for _, cond := range status.Conditions {
		if s, ok := want[cond.Type]; ok && s == cond.Status {
			delete(want, cond.Type)
		}
	}
	return len(want) == 0
}

// countingOperatorClient counts the controller's reads and applies of the
// operator's state; the fake serves them from memory.
type countingOperatorClient struct {
	v1helpers.StaticPodOperatorClient
	count *calls
}

func (c *countingOperatorClient) GetStaticPodOperatorState() (*operatorv1.StaticPodOperatorSpec, *operatorv1.StaticPodOperatorStatus, string, error) {
	c.count.operatorReads++
	return c.StaticPodOperatorClient.GetStaticPodOperatorState()
}

func (c *countingOperatorClient) GetStaticPodOperatorStateWithQuorum(ctx context.Context) (*operatorv1.StaticPodOperatorSpec, *operatorv1.StaticPodOperatorStatus, string, error) {
	c.count.operatorReads++
	return c.StaticPodOperatorClient.GetStaticPodOperatorStateWithQuorum(ctx)
}

func (c *countingOperatorClient) ApplyStaticPodOperatorStatus(ctx context.Context, fieldManager string, status *applyoperatorv1.StaticPodOperatorStatusApplyConfiguration) error {
	c.count.operatorApplies++
	return c.StaticPodOperatorClient.ApplyStaticPodOperatorStatus(ctx, fieldManager, status)
}

// cachedPods reads pods from the pod informer, as library-go's
// CachedConfigMapGetter reads configmaps, and writes them through the API.
type cachedPods struct {
	corev1client.PodsGetter
	lister corev1listers.PodLister
	count  *calls
}

func (g cachedPods) Pods(ns string) corev1client.PodInterface {
	return cachedPodInterface{g.PodsGetter.Pods(ns), g.lister.Pods(ns), g.count}
}

type cachedPodInterface struct {
	corev1client.PodInterface
	lister corev1listers.PodNamespaceLister
	count  *calls
}

func (p cachedPodInterface) Get(_ context.Context, name string, _ metav1.GetOptions) (*corev1.Pod, error) {
	p.count.cachedPodGets++
	pod, err := p.lister.Get(name)
	if err != nil {
		return nil, err
	}
	return pod.DeepCopy(), nil
}

// countingPods, countingConfigMaps and countingSecrets count the Gets of
// the getters the controller is given.
type countingPods struct {
	corev1client.PodsGetter
	count *calls
}

func (g countingPods) Pods(ns string) corev1client.PodInterface {
	return countingPodInterface{g.PodsGetter.Pods(ns), g.count}
}

type countingPodInterface struct {
	corev1client.PodInterface
	count *calls
}

func (p countingPodInterface) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error) {
	p.count.podGets++
	return p.PodInterface.Get(ctx, name, opts)
}

type countingConfigMaps struct {
	corev1client.ConfigMapsGetter
	count *calls
}

func (g countingConfigMaps) ConfigMaps(ns string) corev1client.ConfigMapInterface {
	return countingConfigMapInterface{g.ConfigMapsGetter.ConfigMaps(ns), g.count}
}

type countingConfigMapInterface struct {
	corev1client.ConfigMapInterface
	count *calls
}

func (c countingConfigMapInterface) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	c.count.configMapGets++
	return c.ConfigMapInterface.Get(ctx, name, opts)
}

type countingSecrets struct {
	corev1client.SecretsGetter
	count *calls
}

func (g countingSecrets) Secrets(ns string) corev1client.SecretInterface {
	return countingSecretInterface{g.SecretsGetter.Secrets(ns), g.count}
}

type countingSecretInterface struct {
	corev1client.SecretInterface
	count *calls
}

func (s countingSecretInterface) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Secret, error) {
	s.count.secretGets++
	return s.SecretInterface.Get(ctx, name, opts)
}

// countingFactory hands the controller a node lister that counts its Gets;
// the controller takes its node lister from the cluster-scoped factory.
type countingFactory struct {
	informers.SharedInformerFactory
	count *calls
}

func (f countingFactory) Core() coreinformers.Interface {
	return countingCore{f.SharedInformerFactory.Core(), f.count}
}

type countingCore struct {
	coreinformers.Interface
	count *calls
}

func (c countingCore) V1() corev1informers.Interface {
	return countingCoreV1{c.Interface.V1(), c.count}
}

type countingCoreV1 struct {
	corev1informers.Interface
	count *calls
}

func (c countingCoreV1) Nodes() corev1informers.NodeInformer {
	return countingNodeInformer{c.Interface.Nodes(), c.count}
}

type countingNodeInformer struct {
	corev1informers.NodeInformer
	count *calls
}

func (i countingNodeInformer) Lister() corev1listers.NodeLister {
	return countingNodeLister{i.NodeInformer.Lister(), i.count}
}

type countingNodeLister struct {
	corev1listers.NodeLister
	count *calls
}

func (l countingNodeLister) Get(name string) (*corev1.Node, error) {
	l.count.nodeGets++
	return l.NodeLister.Get(name)
}
