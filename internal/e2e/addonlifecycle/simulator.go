package addonlifecycle

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// deploymentSimulator stands in for the deployment controller of the
// in-memory cluster. Called between reconciles (no goroutine), it rolls each
// Deployment out: a new template becomes available on the next call, and an
// image tagged brokenImageTag never does.
type deploymentSimulator struct {
	client kubernetes.Interface
	seen   map[string]string // deployment name -> image of the last call
}

func (s *deploymentSimulator) Sync(ctx context.Context) error {
	deps := s.client.AppsV1().Deployments(namespace)
	list, err := deps.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	seen := make(map[string]string, len(list.Items))
	defer func() { s.seen = seen }()
	for i := range list.Items {
		dep := &list.Items[i]
		img := dep.Spec.Template.Spec.Containers[0].Image
		dep.Status = rolledOut(dep)
		if s.seen[dep.Name] != img {
			dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = 0, 0
		}
		seen[dep.Name] = img
		if _, err := deps.UpdateStatus(ctx, dep, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// rolledOut is the status the deployment controller reports once dep's
// template is rolled out: every replica updated, and every replica
// available unless its image is tagged brokenImageTag.
func rolledOut(dep *appsv1.Deployment) appsv1.DeploymentStatus {
	replicas := ptr.Deref(dep.Spec.Replicas, 1)
	available := replicas
	for _, c := range dep.Spec.Template.Spec.Containers {
		if strings.HasSuffix(c.Image, ":"+brokenImageTag) {
			available = 0
		}
	}
	return appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Replicas:           replicas, UpdatedReplicas: replicas,
		ReadyReplicas: available, AvailableReplicas: available,
		Conditions: deploymentConditions(available == replicas),
	}
}

// deploymentConditions are the Available and Progressing conditions the
// deployment controller writes beside its counts (kstatus reads them): a
// rollout whose replicas are all available has progressed, one whose
// replicas are not is still updating. They carry no timestamps, so a status
// written twice is the same status.
func deploymentConditions(available bool) []appsv1.DeploymentCondition {
	if available {
		return []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable", Message: "ReplicaSet has successfully progressed."},
		}
	}
	return []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated", Message: "ReplicaSet is progressing."},
	}
}
