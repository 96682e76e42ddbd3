package kube

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/rollout"
)

// Labels RolloutPods puts on installer pods and reads from operand pods.
const (
	// LabelApp is "installer" on every installer pod.
	LabelApp = "app"
	// LabelRevision is the revision an installer installs, and the
	// revision an operand pod runs.
	LabelRevision = "revision"
	// LabelNode is the node an installer pod runs on.
	LabelNode = "node"
)

// The annotations library-go's startup monitor puts on the operand it
// starts when it falls back to a node's last good revision; RolloutPods
// reports such an operand's rollout.OperandFallback from them.
const (
	// AnnotationFallbackForRevision is the revision the operand stands in for.
	AnnotationFallbackForRevision = "startup-monitor.static-pods.openshift.io/fallback-for-revision"
	// AnnotationFallbackReason is the monitor's machine-readable reason.
	AnnotationFallbackReason = "startup-monitor.static-pods.openshift.io/fallback-reason"
	// AnnotationFallbackMessage is the monitor's human-readable message.
	AnnotationFallbackMessage = "startup-monitor.static-pods.openshift.io/fallback-message"
)

// RolloutPodsConfig says where RolloutPods finds and makes pods.
type RolloutPodsConfig struct {
	// Client creates and deletes installer pods. Required by NewRolloutPods;
	// left nil for NewRolloutPodsFor.
	Client kubernetes.Interface
	// Pods reads installer and operand pods (an informer's cache). Required
	// by NewRolloutPods; left nil for NewRolloutPodsFor.
	Pods corelisters.PodLister
	// Nodes reads nodes (an informer's cache). Required by NewRolloutPods;
	// left nil for NewRolloutPodsFor.
	Nodes corelisters.NodeLister
	// Namespace holds the installer and operand pods. Required.
	Namespace string
	// Operand names the operand: its pod on node N is "<Operand>-<N>", the
	// name of a static pod's mirror pod. Required unless OperandPodName is set.
	Operand string
	// OperandPodName names the operand pod of a node; nil means
	// "<Operand>-<node>".
	OperandPodName func(node string) string
	// NodeSelector selects the nodes the rollout covers; nil means every
	// node.
	NodeSelector labels.Selector
	// InstallerPod returns the pod that installs inst: its containers and
	// anything else the host needs. RolloutPods sets its name, namespace,
	// node, restart policy Never and the labels app=installer, revision and
	// node. Required.
	InstallerPod func(inst rollout.Installer) *corev1.Pod
	// Owner, when set, becomes the controller owner of every installer pod,
	// so that deleting the owner deletes them.
	Owner *metav1.OwnerReference
}

// PodClient is what RolloutPods needs of a cluster: client-go's listers and
// clientset through NewRolloutPods, or any other client (the
// controller-runtime module adapts its client.Client) through
// NewRolloutPodsFor. RolloutPods keeps every rule (installer pod labels,
// owner and restart policy, the states it maps pods and nodes to, the node
// order); a PodClient only moves objects.
type PodClient interface {
	// GetPod reads a pod; a missing pod is the API server's NotFound.
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// CreatePod creates pod; an existing one is the API server's AlreadyExists.
	CreatePod(ctx context.Context, pod *corev1.Pod) error
	// DeletePod deletes a pod with a zero grace period; a missing pod is the
	// API server's NotFound.
	DeletePod(ctx context.Context, namespace, name string) error
	// ListNodes lists the nodes selector matches, in any order.
	ListNodes(ctx context.Context, selector labels.Selector) ([]corev1.Node, error)
}

// RolloutPods implements rollout's InstallerClient, OperandBatchReader and
// NodeLister on a PodClient. An operand pod's revision is its "revision"
// label; it is ready while its Ready condition is True, since that
// condition's transition time; one that library-go's startup monitor
// started as a fallback carries its annotations. A node is known by its
// UID, and is unreachable unless its Ready condition is True. A sync reads
// every operand in one GetOperands call, served from the PodClient's cache
// (the listers of NewRolloutPods).
//
// RBAC (shipped as kube/rbac/rollout.yaml): get, list and watch on pods and
// nodes (the listers' informers list and watch; a client that reads without
// a cache gets); create and delete on pods in Namespace; with Owner, update
// on the owner's finalizers subresource, which the
// OwnerReferencesPermissionEnforcement admission plugin requires for
// blockOwnerDeletion.
type RolloutPods struct {
	cfg    RolloutPodsConfig
	client PodClient
}

var (
	_ rollout.InstallerClient    = (*RolloutPods)(nil)
	_ rollout.OperandBatchReader = (*RolloutPods)(nil)
	_ rollout.NodeLister         = (*RolloutPods)(nil)
	_ PodClient                  = listerPods{}
)

// NewRolloutPods checks cfg and returns the adapter on client-go: reads come
// from cfg's listers, writes go through cfg's clientset.
func NewRolloutPods(cfg RolloutPodsConfig) (*RolloutPods, error) {
	if input.IsNil(cfg.Client) || input.IsNil(cfg.Pods) || input.IsNil(cfg.Nodes) {
		return nil, input.Invalidf("kube", "NewRolloutPods arguments", "nil Client, Pods or Nodes")
	}
	client := listerPods{client: cfg.Client, pods: cfg.Pods, nodes: cfg.Nodes}
	cfg.Client, cfg.Pods, cfg.Nodes = nil, nil, nil
	return NewRolloutPodsFor(client, cfg)
}

// NewRolloutPodsFor checks cfg and returns the adapter on client; cfg's
// Client, Pods and Nodes, which belong to NewRolloutPods, must be nil.
func NewRolloutPodsFor(client PodClient, cfg RolloutPodsConfig) (*RolloutPods, error) {
	switch {
	case input.IsNil(client):
		return nil, input.Invalidf("kube", "NewRolloutPodsFor arguments", "nil pod client")
	case cfg.Client != nil || cfg.Pods != nil || cfg.Nodes != nil:
		return nil, input.Invalidf("kube", "NewRolloutPodsFor arguments", "Client, Pods and Nodes are NewRolloutPods' and must be nil")
	case cfg.Namespace == "":
		return nil, input.Invalidf("kube", "RolloutPodsConfig", "empty Namespace")
	case cfg.InstallerPod == nil:
		return nil, input.Invalidf("kube", "RolloutPodsConfig", "nil InstallerPod")
	case cfg.OperandPodName == nil && cfg.Operand == "":
		return nil, input.Invalidf("kube", "RolloutPodsConfig", "empty Operand and nil OperandPodName")
	}
	if cfg.OperandPodName == nil {
		operand := cfg.Operand
		cfg.OperandPodName = func(node string) string { return operand + "-" + node }
	}
	if input.IsNil(cfg.NodeSelector) {
		cfg.NodeSelector = labels.Everything()
	}
	return &RolloutPods{cfg: cfg, client: client}, nil
}

// check returns an error matching converge.ErrInvalid for a RolloutPods not made by NewRolloutPods or
// NewRolloutPodsFor.
func (a *RolloutPods) check(method string) error {
	if a == nil || a.client == nil {
		return input.Invalidf("kube", "RolloutPods."+method+" call", "adapter not made by NewRolloutPods or NewRolloutPodsFor")
	}
	return nil
}

// listerPods is the PodClient of client-go: listers read, the clientset writes.
type listerPods struct {
	client kubernetes.Interface
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister
}

func (l listerPods) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	return l.pods.Pods(namespace).Get(name)
}

func (l listerPods) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	_, err := l.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

func (l listerPods) DeletePod(ctx context.Context, namespace, name string) error {
	var zero int64
	return l.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
}

func (l listerPods) ListNodes(_ context.Context, selector labels.Selector) ([]corev1.Node, error) {
	nodes, err := l.nodes.List(selector)
	if err != nil {
		return nil, err
	}
	out := make([]corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, *n)
	}
	return out, nil
}

// GetInstaller reads the installer pod.
func (a *RolloutPods) GetInstaller(ctx context.Context, inst rollout.Installer) (rollout.InstallerState, error) {
	if err := a.check("GetInstaller"); err != nil {
		return rollout.InstallerState{}, err
	}
	pod, err := a.client.GetPod(ctx, a.cfg.Namespace, inst.Name)
	if apierrors.IsNotFound(err) {
		return rollout.InstallerState{Phase: rollout.InstallerNotFound}, nil
	}
	if err != nil {
		return rollout.InstallerState{}, err
	}
	return InstallerPodState(pod), nil
}

// InstallerPodState maps an installer pod onto what rollout needs: its
// phase, its status message, the terminated containers (OOM kills marked),
// and when it started (its creation time while it has no start time, so
// that InstallerPendingTimeout counts from creation). Hosts that read pods
// through another client (controller-runtime's) use it as it is.
func InstallerPodState(pod *corev1.Pod) rollout.InstallerState {
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

// EnsureInstaller creates the installer pod unless it exists.
func (a *RolloutPods) EnsureInstaller(ctx context.Context, inst rollout.Installer) error {
	if err := a.check("EnsureInstaller"); err != nil {
		return err
	}
	pod := a.cfg.InstallerPod(inst)
	if pod == nil {
		return input.Invalidf("kube", "InstallerPod result", "no pod for %s", inst.Name)
	}
	pod = pod.DeepCopy()
	pod.Name, pod.Namespace, pod.GenerateName = inst.Name, a.cfg.Namespace, ""
	pod.Spec.NodeName = inst.Node
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelApp] = "installer"
	pod.Labels[LabelRevision] = strconv.FormatInt(int64(inst.Revision), 10)
	pod.Labels[LabelNode] = inst.Node
	if a.cfg.Owner != nil {
		owner := *a.cfg.Owner
		owner.Controller, owner.BlockOwnerDeletion = ptrTrue(), ptrTrue()
		pod.OwnerReferences = append(pod.OwnerReferences, owner)
	}
	err := a.client.CreatePod(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ptrTrue() *bool { t := true; return &t }

// DeleteInstaller deletes the installer pod with no grace period, so that
// once it returns nil the installer can no longer run (rollout's contract);
// a pod already gone is success.
func (a *RolloutPods) DeleteInstaller(ctx context.Context, inst rollout.Installer) error {
	if err := a.check("DeleteInstaller"); err != nil {
		return err
	}
	err := a.client.DeletePod(ctx, a.cfg.Namespace, inst.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// GetOperand reads the node's operand pod.
func (a *RolloutPods) GetOperand(ctx context.Context, node string) (rollout.OperandState, error) {
	if err := a.check("GetOperand"); err != nil {
		return rollout.OperandState{}, err
	}
	return a.operand(ctx, node)
}

// GetOperands reads the operand pods of nodes into operands, in one call.
func (a *RolloutPods) GetOperands(ctx context.Context, nodes []string, operands []rollout.OperandState) error {
	if err := a.check("GetOperands"); err != nil {
		return err
	}
	if len(nodes) != len(operands) {
		return input.Invalidf("kube", "RolloutPods.GetOperands call", "%d nodes, %d operands", len(nodes), len(operands))
	}
	for i, node := range nodes {
		op, err := a.operand(ctx, node)
		if err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
		operands[i] = op
	}
	return nil
}

func (a *RolloutPods) operand(ctx context.Context, node string) (rollout.OperandState, error) {
	pod, err := a.client.GetPod(ctx, a.cfg.Namespace, a.cfg.OperandPodName(node))
	if apierrors.IsNotFound(err) {
		return rollout.OperandState{Phase: rollout.OperandNotFound}, nil
	}
	if err != nil {
		return rollout.OperandState{}, err
	}
	return operandState(pod)
}

// operandState maps an operand (mirror) pod onto what the engine needs.
func operandState(pod *corev1.Pod) (rollout.OperandState, error) {
	rev, err := strconv.ParseInt(pod.Labels[LabelRevision], 10, 32)
	if err != nil || rev < 0 {
		return rollout.OperandState{}, input.Invalidf("kube", "operand pod "+pod.Namespace+"/"+pod.Name, "no revision in its %q label", LabelRevision)
	}
	st := rollout.OperandState{Phase: rollout.OperandPending, Revision: int32(rev), Message: pod.Status.Message}
	if v, ok := pod.Annotations[AnnotationFallbackForRevision]; ok {
		forRev, err := strconv.ParseInt(v, 10, 32)
		if err != nil || forRev <= 0 {
			return rollout.OperandState{}, input.Invalidf("kube", "operand pod "+pod.Namespace+"/"+pod.Name, "no revision in its %q annotation", AnnotationFallbackForRevision)
		}
		st.Fallback = &rollout.OperandFallback{ForRevision: int32(forRev), Reason: pod.Annotations[AnnotationFallbackReason],
			Message: pod.Annotations[AnnotationFallbackMessage], Time: pod.CreationTimestamp.Time}
	}
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

// ListNodes lists the nodes NodeSelector matches, in name order, with
// their UIDs, each unreachable unless its Ready condition is True.
func (a *RolloutPods) ListNodes(ctx context.Context) ([]rollout.Node, error) {
	if err := a.check("ListNodes"); err != nil {
		return nil, err
	}
	nodes, err := a.client.ListNodes(ctx, a.cfg.NodeSelector)
	if err != nil {
		return nil, err
	}
	out := make([]rollout.Node, 0, len(nodes))
	for _, node := range nodes {
		ready := false
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
			}
		}
		out = append(out, rollout.Node{Name: node.Name, UID: string(node.UID), Unreachable: !ready})
	}
	slices.SortFunc(out, func(x, y rollout.Node) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}
