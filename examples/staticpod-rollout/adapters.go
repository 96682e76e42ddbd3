package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/converge-dev/converge/rollout"
)

// Labels the adapters put on and read from pods.
const (
	labelApp      = "app"
	labelRevision = "revision"
	labelNode     = "node"
	appInstaller  = "installer"
)

// podAdapter implements the rollout host interfaces on client-go: reads come
// from listers (informer caches), writes go through the clientset.
type podAdapter struct {
	client  kubernetes.Interface
	pods    corelisters.PodNamespaceLister
	nodes   corelisters.NodeLister
	ns      string
	operand string
	image   string
}

var (
	_ rollout.InstallerClient = (*podAdapter)(nil)
	_ rollout.OperandReader   = (*podAdapter)(nil)
	_ rollout.NodeReadiness   = (*podAdapter)(nil)
)

// operandPodName is the mirror pod name of the node's static pod.
func operandPodName(operand, node string) string { return operand + "-" + node }

func (a *podAdapter) GetInstaller(_ context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	pod, err := a.pods.Get(inst.Name)
	if apierrors.IsNotFound(err) {
		return rollout.InstallerState{Phase: rollout.InstallerNotFound}, nil
	}
	if err != nil {
		return rollout.InstallerState{}, err
	}
	return installerState(pod), nil
}

// installerState maps an installer pod onto what the engine needs.
func installerState(pod *corev1.Pod) rollout.InstallerState {
	st := rollout.InstallerState{Message: pod.Status.Message, StartTime: pod.CreationTimestamp.Time}
	if pod.Status.StartTime != nil {
		st.StartTime = pod.Status.StartTime.Time
	}
	switch pod.Status.Phase {
	case corev1.PodRunning:
		st.Phase = rollout.InstallerRunning
	case corev1.PodSucceeded:
		st.Phase = rollout.InstallerSucceeded
	case corev1.PodFailed:
		st.Phase = rollout.InstallerFailed
	default:
		st.Phase = rollout.InstallerPending
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			st.Containers = append(st.Containers, rollout.ContainerTermination{
				Name: cs.Name, Message: t.Message, OOMKilled: t.Reason == "OOMKilled"})
		}
	}
	return st
}

func (a *podAdapter) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	rev := strconv.Itoa(int(inst.Revision))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: inst.Name, Namespace: a.ns,
			Labels: map[string]string{labelApp: appInstaller, labelRevision: rev, labelNode: inst.Node}},
		Spec: corev1.PodSpec{
			NodeName:      inst.Node,
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "installer",
				Image:   a.image,
				Command: []string{"sh", "-c", fmt.Sprintf("echo installing %s revision %s on %s", a.operand, rev, inst.Node)},
			}},
		},
	}
	_, err := a.client.CoreV1().Pods(a.ns).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func (a *podAdapter) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	err := a.client.CoreV1().Pods(a.ns).Delete(ctx, inst.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (a *podAdapter) GetOperand(_ context.Context, node string) (rollout.OperandState, error) {
	pod, err := a.pods.Get(operandPodName(a.operand, node))
	if apierrors.IsNotFound(err) {
		return rollout.OperandState{Phase: rollout.OperandNotFound}, nil
	}
	if err != nil {
		return rollout.OperandState{}, err
	}
	return operandState(pod)
}

// operandState maps a static (mirror) pod onto what the engine needs.
func operandState(pod *corev1.Pod) (rollout.OperandState, error) {
	rev, err := strconv.ParseInt(pod.Labels[labelRevision], 10, 32)
	if err != nil {
		return rollout.OperandState{}, fmt.Errorf("pod %s has no numeric %q label: %w", pod.Name, labelRevision, err)
	}
	st := rollout.OperandState{Phase: rollout.OperandPending, Revision: int32(rev), Message: pod.Status.Message}
	switch pod.Status.Phase {
	case corev1.PodFailed:
		st.Phase = rollout.OperandFailed
	case corev1.PodRunning, corev1.PodSucceeded:
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				st.Phase, st.ReadySince = rollout.OperandReady, c.LastTransitionTime.Time
			}
		}
	}
	return st, nil
}

func (a *podAdapter) NodeReady(_ context.Context, name string) (bool, error) {
	node, err := a.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue, nil
		}
	}
	return false, nil
}

// configMapStatus persists the rollout status as JSON in a ConfigMap; the
// ConfigMap's resourceVersion gives optimistic concurrency. (A real operator
// keeps it in its custom resource's status.)
type configMapStatus struct {
	client kubernetes.Interface
	ns     string
	name   string
}

var _ rollout.StatusStore = (*configMapStatus)(nil)

func (s *configMapStatus) GetStatus(ctx context.Context) (rollout.Status, string, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.ns).Get(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return rollout.Status{}, "", err
	}
	var st rollout.Status
	if err := json.Unmarshal([]byte(cm.Data["status"]), &st); err != nil {
		return rollout.Status{}, "", fmt.Errorf("decoding %s/%s: %w", s.ns, s.name, err)
	}
	return st, cm.ResourceVersion, nil
}

func (s *configMapStatus) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns, ResourceVersion: rv},
		Data:       map[string]string{"status": string(data)},
	}
	out, err := s.client.CoreV1().ConfigMaps(s.ns).Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return "", rollout.Conflict(err)
	}
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}

// create stores the initial status unless the ConfigMap exists.
func (s *configMapStatus) create(ctx context.Context, st rollout.Status) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns}, Data: map[string]string{"status": string(data)}}
	_, err = s.client.CoreV1().ConfigMaps(s.ns).Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// recorderSink emits plan events through a client-go EventRecorder and
// prints them.
type recorderSink struct {
	rec record.EventRecorder
	ref runtime.Object
	out io.Writer
}

var _ rollout.EventSink = (*recorderSink)(nil)

func (r *recorderSink) Emit(_ context.Context, e rollout.Event) {
	r.rec.Event(r.ref, e.Type, e.Reason, e.Message)
	fmt.Fprintf(r.out, "    event %s %s: %s\n", e.Type, e.Reason, e.Message)
}
