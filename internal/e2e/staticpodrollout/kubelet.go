package staticpodrollout

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
)

// NewMemoryClient returns client-go's fake clientset, with writes given
// real optimistic concurrency (the fake tracker has none). It is the simple
// clientset, without server-side apply: the field-managed one builds a REST
// mapper on every write, which makes a 10,000-node rollout take hours.
func NewMemoryClient() *k8sfake.Clientset {
	client := k8sfake.NewSimpleClientset()
	fake.EnforceResourceVersions(client)
	return client
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

// kubelet is a small simulated kubelet for the in-memory cluster: each step
// moves every pod one phase on. Installer pods go Pending → Running →
// Succeeded (or Failed, as scripted); a succeeded installer restarts the
// node's operand pod at its revision, not ready; a not-ready operand becomes
// ready on the next step.
type kubelet struct {
	client  kubernetes.Interface
	ns      string
	operand string
	clock   clock.PassiveClock
	// failures scripts installer pods that fail, by pod name, with their termination message.
	failures map[string]string
	// written is told of every pod write, with the pod written.
	written func(ctx context.Context, pod *corev1.Pod) error
}

// updateStatus writes the pod's status and tells k.written.
func (k *kubelet) updateStatus(ctx context.Context, pod *corev1.Pod) error {
	out, err := k.client.CoreV1().Pods(k.ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	return k.written(ctx, out)
}

// step moves every pod one phase on and reports whether anything moved.
func (k *kubelet) step(ctx context.Context) (bool, error) {
	list, err := k.client.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, err
	}
	pods := list.Items
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	now := metav1.NewTime(k.clock.Now())
	moved := false
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[kube.LabelApp] != k.operand || pod.Status.Phase != corev1.PodRunning || podReady(pod) {
			continue
		}
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if err := k.updateStatus(ctx, pod); err != nil {
			return false, err
		}
		moved = true
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Labels[kube.LabelApp] != appInstaller {
			continue
		}
		switch pod.Status.Phase {
		case "", corev1.PodPending:
			pod.Status.Phase, pod.Status.StartTime = corev1.PodRunning, &now
		case corev1.PodRunning:
			if err := k.finish(ctx, pod, now); err != nil {
				return false, err
			}
		default:
			continue
		}
		if err := k.updateStatus(ctx, pod); err != nil {
			return false, err
		}
		moved = true
	}
	return moved, nil
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

// podFingerprint summarises what the engine reads from pods, to tell when an
// informer cache has caught up with the clientset.
func podFingerprint(pods []*corev1.Pod) string {
	lines := make([]string, 0, len(pods))
	for _, p := range pods {
		lines = append(lines, fmt.Sprintf("%s/%s/%s/%t", p.Name, p.Labels[kube.LabelRevision], p.Status.Phase, podReady(p)))
	}
	sort.Strings(lines)
	return strings.Join(lines, ",")
}
