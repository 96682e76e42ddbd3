package crconverge

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/contrib/controller-runtime/internal/check"
	"github.com/converge-dev/converge/kube"
)

// PodClient is the kube.PodClient of a controller-runtime client, so that
// kube.NewRolloutPodsFor runs rollout's installers as pods through it.
//
// The manager's client reads pods and nodes from its cache: GetPod and
// ListNodes then cost no request, and the cache's informers need list and
// watch on pods and nodes (across the cluster, unless the manager's cache
// is limited to the rollout's namespace). An installer pod created a moment
// ago may be missing from the cache; creating it again is the API server's
// AlreadyExists, which RolloutPods takes as success.
//
// RBAC: get, list and watch on pods and nodes; create and delete on pods.
type PodClient struct {
	client client.Client
}

var _ kube.PodClient = (*PodClient)(nil)

// NewPodClient returns the PodClient of c.
func NewPodClient(c client.Client) (*PodClient, error) {
	if check.IsNil(c) {
		return nil, converge.Invalidf("crconverge", "NewPodClient arguments", "nil client")
	}
	return &PodClient{client: c}, nil
}

// GetPod reads a pod.
func (p *PodClient) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if p == nil || p.client == nil {
		return nil, errUnmade("PodClient.GetPod")
	}
	pod := &corev1.Pod{}
	if err := p.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// CreatePod creates pod.
func (p *PodClient) CreatePod(ctx context.Context, pod *corev1.Pod) error {
	switch {
	case p == nil || p.client == nil:
		return errUnmade("PodClient.CreatePod")
	case pod == nil:
		return converge.Invalidf("crconverge", "PodClient.CreatePod call", "nil pod")
	}
	return p.client.Create(ctx, pod.DeepCopy())
}

// DeletePod deletes a pod with a zero grace period.
func (p *PodClient) DeletePod(ctx context.Context, namespace, name string) error {
	if p == nil || p.client == nil {
		return errUnmade("PodClient.DeletePod")
	}
	pod := &corev1.Pod{}
	pod.Namespace, pod.Name = namespace, name
	return p.client.Delete(ctx, pod, client.GracePeriodSeconds(0))
}

// ListNodes lists the nodes selector matches.
func (p *PodClient) ListNodes(ctx context.Context, selector labels.Selector) ([]corev1.Node, error) {
	if p == nil || p.client == nil {
		return nil, errUnmade("PodClient.ListNodes")
	}
	var list corev1.NodeList
	if err := p.client.List(ctx, &list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// NewRolloutPods returns kube's RolloutPods, rollout's InstallerClient,
// OperandBatchReader and NodeLister, on c: cfg is kube's, without its
// Client, Pods and Nodes, which c replaces. A sync reads every operand in
// one call, each from the manager's cache.
func NewRolloutPods(c client.Client, cfg kube.RolloutPodsConfig) (*kube.RolloutPods, error) {
	pc, err := NewPodClient(c)
	if err != nil {
		return nil, err
	}
	return kube.NewRolloutPodsFor(pc, cfg)
}
