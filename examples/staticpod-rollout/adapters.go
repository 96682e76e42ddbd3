package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
	client   kubernetes.Interface
	pods     corelisters.PodNamespaceLister
	nodes    corelisters.NodeLister
	selector labels.Selector
	only     map[string]bool // nil: every node the selector matches
	ns       string
	operand  string
	image    string
	out      io.Writer
}

var (
	_ rollout.InstallerClient = (*podAdapter)(nil)
	_ rollout.OperandReader   = (*podAdapter)(nil)
	_ rollout.NodeLister      = (*podAdapter)(nil)
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
	if err == nil {
		fmt.Fprintf(a.out, "    creating installer %s\n", inst.Name)
	}
	return err
}

// DeleteInstaller deletes the pod with no grace period, so that once it
// returns the installer can no longer run (the engine's contract).
func (a *podAdapter) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	err := a.client.CoreV1().Pods(a.ns).Delete(ctx, inst.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
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

// ListNodes lists the nodes the selector matches (and only, when set), in
// name order, each unreachable unless its Ready condition is True.
func (a *podAdapter) ListNodes(context.Context) ([]rollout.Node, error) {
	nodes, err := a.nodes.List(a.selector)
	if err != nil {
		return nil, err
	}
	out := make([]rollout.Node, 0, len(nodes))
	for _, node := range nodes {
		if a.only != nil && !a.only[node.Name] {
			continue
		}
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, rollout.Node{Name: node.Name, Unreachable: !ready})
	}
	slices.SortFunc(out, func(x, y rollout.Node) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// configMapStatus persists the rollout status as JSON under the "status" key
// of a ConfigMap; the ConfigMap's resourceVersion gives the optimistic
// concurrency the engine needs.
//
// Why a ConfigMap and not a custom resource with a status subresource: the
// example runs on any cluster, in memory or on a bare kube-apiserver, with no
// CRD to install first and no RBAC beyond ConfigMaps in its namespace, and
// client-go's typed clientset (and its fake) reads and writes it. What the
// engine needs is the same for both objects: read the status with a resource
// version, write it only if that version is still current, and see a 409
// Conflict otherwise. A real operator keeps the status in its own custom
// resource's status subresource, where a status write cannot touch the spec
// and `kubectl get` shows the conditions; its adapter is this one writing to
// the /status subresource. The price of the ConfigMap is that anyone
// who may edit ConfigMaps in the namespace may edit the status too.
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

// UpdateStatus writes the status with a merge patch that carries rv as its
// metadata.resourceVersion: the API server applies it only while rv is
// current and answers 409 Conflict otherwise, and, unlike an Update, the
// patch leaves the labels and annotations other writers put on the
// ConfigMap alone.
func (s *configMapStatus) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	if rv == "" {
		return "", fmt.Errorf("writing %s/%s: no resource version to write over", s.ns, s.name)
	}
	data, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]string{"resourceVersion": rv},
		"data":     map[string]string{"status": string(data)},
	})
	if err != nil {
		return "", err
	}
	out, err := s.client.CoreV1().ConfigMaps(s.ns).Patch(ctx, s.name, types.MergePatchType, patch, metav1.PatchOptions{})
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

// recorderSink emits the events a sync returns through a client-go
// EventRecorder, prints them and counts them.
type recorderSink struct {
	rec     record.EventRecorder
	ref     runtime.Object
	out     io.Writer
	emitted atomic.Int64
}

func (r *recorderSink) emit(e rollout.Event) {
	r.rec.Event(r.ref, e.Type, e.Reason, e.Message)
	r.emitted.Add(1)
	fmt.Fprintf(r.out, "    event %s %s: %s\n", e.Type, e.Reason, e.Message)
}

// count returns how many events were emitted.
func (r *recorderSink) count() int64 { return r.emitted.Load() }

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
