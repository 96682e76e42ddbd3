package staticpodrollout

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
)

// NewMemoryClient returns client-go's fake clientset, with writes given
// real optimistic concurrency (the fake tracker has none) and paced to its
// watchers. It is the simple clientset, without server-side apply: the
// field-managed one builds a REST mapper on every write, which makes a
// 10,000-node rollout take hours.
func NewMemoryClient() *k8sfake.Clientset {
	client := k8sfake.NewSimpleClientset()
	fake.EnforceResourceVersions(client)
	paceWatchers(client, watcherBacklog, watcherDrainTimeout)
	return client
}

// watcherBacklog is how many unread events a watcher of the fake clientset
// may hold before writes wait: its watchers hold 100 and panic beyond.
const watcherBacklog = 50

// watcherDrainTimeout bounds how long a write waits for the watchers to
// read their backlog.
const watcherDrainTimeout = 10 * time.Second

// paceWatchers makes every write through client wait while a watcher holds
// backlog unread events or more, for up to timeout: an informer reads its
// watch in a goroutine of its own, and a burst of writes (an engine
// creating a hundred installers, a kubelet moving a hundred pods) must not
// outrun it.
func paceWatchers(client *k8sfake.Clientset, backlog int, timeout time.Duration) {
	var mu sync.Mutex
	var watchers []watch.Interface
	tracker := client.Tracker()
	client.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if a, ok := action.(k8stesting.WatchActionImpl); ok {
			opts = a.ListOptions
		}
		w, err := tracker.Watch(action.GetResource(), action.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		watchers = append(watchers, w)
		return true, w, nil
	})
	behind := func() bool {
		mu.Lock()
		defer mu.Unlock()
		live := watchers[:0]
		full := false
		for _, w := range watchers {
			if s, ok := w.(interface{ IsStopped() bool }); ok && s.IsStopped() {
				continue
			}
			live = append(live, w)
			full = full || len(w.ResultChan()) >= backlog
		}
		clear(watchers[len(live):])
		watchers = live
		return full
	}
	client.PrependReactor("*", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "create", "update", "patch", "delete", "delete-collection":
			for deadline := time.Now().Add(timeout); behind() && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		return false, nil, nil
	})
}

// appInstaller is the app label kube.RolloutPods puts on installer pods.
const appInstaller = "installer"

// operandPodName is the mirror pod name of the node's static pod, as kube.RolloutPods reads it.
func operandPodName(operand, node string) string { return operand + "-" + node }

// Seed creates the namespace, ready nodes and, on each, a ready operand pod
// of revision 1, through the API (so it works on a real apiserver too).
func Seed(ctx context.Context, client kubernetes.Interface, nodes []string, ns, operand string, clk clock.PassiveClock) error {
	now := metav1.NewTime(clk.Now())
	if err := ensureNamespace(ctx, client, ns); err != nil {
		return err
	}
	for _, name := range nodes {
		node, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": ""}}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			node, err = client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		}
		if err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return err
		}
		pod, err := client.CoreV1().Pods(ns).Create(ctx, operandPod(operand, ns, name, "1"), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
		if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// ensureNamespace creates the namespace unless it exists.
func ensureNamespace(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// operandPod is the mirror pod of a node's static pod at a revision.
func operandPod(operand, ns, node, rev string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: operandPodName(operand, node), Namespace: ns,
			Labels: map[string]string{kube.LabelApp: operand, kube.LabelRevision: rev, kube.LabelNode: node}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: operand, Image: "registry.k8s.io/pause:3.10"}}},
	}
}

// markerPod is the pod the simulated kubelet writes to know when an
// informer has seen every write before: a watch delivers a namespace's pod
// events in order.
const markerPod = "simulated-kubelet"

// AppMarker is the app label of the marker pod.
const AppMarker = "simulated-kubelet"

// kubelet is a small simulated kubelet: each step moves every pod one phase
// on. Installer pods go Pending → Running → Succeeded (or Failed, as
// scripted); a succeeded installer restarts the node's operand pod at its
// revision, not ready; a not-ready operand becomes ready on the next step.
// Like a real kubelet it watches the pods, and a step touches only the pods
// it has to move, however many have finished.
type kubelet struct {
	client  kubernetes.Interface
	ns      string
	operand string
	clock   clock.PassiveClock
	// failures scripts installer pods that fail, by pod name, with their termination message.
	failures map[string]string
	timeout  time.Duration
	factory  informers.SharedInformerFactory
	pods     corelisters.PodLister
	cancel   context.CancelFunc
	marker   *corev1.Pod

	mu sync.Mutex
	// moving are the names of the pods a step moves on.
	moving map[string]bool
	// seen is the marker's resource version the kubelet's watch last delivered.
	seen string
}

// startKubelet creates the marker pod and starts the kubelet's pod informer.
func startKubelet(ctx context.Context, client kubernetes.Interface, ns, operand string, clk clock.PassiveClock,
	failures map[string]string, timeout time.Duration) (*kubelet, error) {
	marker, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: markerPod, Namespace: ns, Labels: map[string]string{kube.LabelApp: AppMarker}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "marker", Image: "registry.k8s.io/pause:3.10"}}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		marker, err = client.CoreV1().Pods(ns).Get(ctx, markerPod, metav1.GetOptions{})
	}
	if err != nil {
		return nil, err
	}
	k := &kubelet{client: client, ns: ns, operand: operand, clock: clk, failures: failures, timeout: timeout,
		marker: marker, moving: map[string]bool{},
		factory: informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))}
	informer := k.factory.Core().V1().Pods()
	k.pods = informer.Lister()
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.observe,
		UpdateFunc: func(_, obj any) { k.observe(obj) },
		DeleteFunc: k.forget,
	}); err != nil {
		return nil, err
	}
	informerCtx, cancel := context.WithCancel(ctx)
	k.cancel = cancel
	k.factory.Start(informerCtx.Done())
	for typ, ok := range k.factory.WaitForCacheSync(informerCtx.Done()) {
		if !ok {
			k.stop()
			return nil, fmt.Errorf("the kubelet's informer cache for %v did not sync", typ)
		}
	}
	return k, nil
}

// stop stops the kubelet's informer and waits for it.
func (k *kubelet) stop() {
	k.cancel()
	k.factory.Shutdown()
}

// observe notes whether a pod the watch delivered has to move on.
func (k *kubelet) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if pod.Name == markerPod {
		k.seen = pod.ResourceVersion
		return
	}
	if k.movesOn(pod) {
		k.moving[pod.Name] = true
	} else {
		delete(k.moving, pod.Name)
	}
}

// forget drops a deleted pod.
func (k *kubelet) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		k.mu.Lock()
		defer k.mu.Unlock()
		delete(k.moving, pod.Name)
	}
}

// movesOn reports whether a step moves the pod on: an installer not yet
// finished, or an operand running but not ready.
func (k *kubelet) movesOn(pod *corev1.Pod) bool {
	switch pod.Labels[kube.LabelApp] {
	case appInstaller:
		return pod.Status.Phase == "" || pod.Status.Phase == corev1.PodPending || pod.Status.Phase == corev1.PodRunning
	case k.operand:
		return pod.Status.Phase == corev1.PodRunning && !podReady(pod)
	}
	return false
}

// barrier writes the marker pod and waits until the kubelet's watch and
// pods (another informer's lister) have seen it, and so every pod write
// before it.
func (k *kubelet) barrier(ctx context.Context, pods corelisters.PodLister) error {
	if k.marker.Annotations == nil {
		k.marker.Annotations = map[string]string{}
	}
	n, _ := strconv.Atoi(k.marker.Annotations[markerAnnotation])
	k.marker.Annotations[markerAnnotation] = strconv.Itoa(n + 1)
	marker, err := k.client.CoreV1().Pods(k.ns).Update(ctx, k.marker, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	k.marker = marker
	rv := marker.ResourceVersion
	return poll(ctx, k.timeout, func() bool {
		k.mu.Lock()
		seen := k.seen
		k.mu.Unlock()
		if seen != rv {
			return false
		}
		p, err := pods.Pods(k.ns).Get(markerPod)
		return err == nil && p.ResourceVersion == rv
	}, "the pod informers did not see the kubelet's writes within %v (it grows with -nodes)")
}

// markerAnnotation counts the marker pod's writes.
const markerAnnotation = "converge.dev/simulated-kubelet-writes"

// step moves every pod one phase on, in name order, operands before
// installers, and reports whether anything moved. It waits first until its
// watch has seen every write before.
func (k *kubelet) step(ctx context.Context) (bool, error) {
	if err := k.barrier(ctx, k.pods); err != nil {
		return false, err
	}
	k.mu.Lock()
	names := make([]string, 0, len(k.moving))
	for name := range k.moving {
		names = append(names, name)
	}
	k.mu.Unlock()
	sort.Strings(names)
	var operands, installers []*corev1.Pod
	for _, name := range names {
		pod, err := k.pods.Pods(k.ns).Get(name)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		if pod.Labels[kube.LabelApp] == appInstaller {
			installers = append(installers, pod.DeepCopy())
		} else {
			operands = append(operands, pod.DeepCopy())
		}
	}
	now := metav1.NewTime(k.clock.Now())
	for _, pod := range operands {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if err := k.updateStatus(ctx, pod); err != nil {
			return false, err
		}
	}
	for _, pod := range installers {
		if pod.Status.Phase == corev1.PodRunning {
			if err := k.finish(ctx, pod, now); err != nil {
				return false, err
			}
		} else {
			pod.Status.Phase, pod.Status.StartTime = corev1.PodRunning, &now
		}
		if err := k.updateStatus(ctx, pod); err != nil {
			return false, err
		}
	}
	return len(operands)+len(installers) > 0, nil
}

// updateStatus writes the pod's status.
func (k *kubelet) updateStatus(ctx context.Context, pod *corev1.Pod) error {
	_, err := k.client.CoreV1().Pods(k.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	return err
}

// finish ends a running installer pod and, on success, restarts the operand.
func (k *kubelet) finish(ctx context.Context, pod *corev1.Pod, now metav1.Time) error {
	if msg, fail := k.failures[pod.Name]; fail {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "installer",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: msg}}}}
		return nil
	}
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "installer",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
	node, rev := pod.Spec.NodeName, pod.Labels[kube.LabelRevision]
	op, err := k.client.CoreV1().Pods(k.ns).Get(ctx, operandPodName(k.operand, node), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		op, err = k.client.CoreV1().Pods(k.ns).Create(ctx, operandPod(k.operand, k.ns, node, rev), metav1.CreateOptions{})
	case err == nil:
		op.Labels[kube.LabelRevision] = rev
		op, err = k.client.CoreV1().Pods(k.ns).Update(ctx, op, metav1.UpdateOptions{})
	}
	if err != nil {
		return err
	}
	op.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}}
	return k.updateStatus(ctx, op)
}

// podReady reports whether the pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
