package standin

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// RolledOut is the status the deployment controller writes once every
// replica of dep's generation is updated and available: the counts, and
// the conditions Available (MinimumReplicasAvailable) and Progressing
// (NewReplicaSetAvailable) that kstatus reads. The conditions carry no
// timestamps, so that writing the status twice writes the same status.
func RolledOut(dep *appsv1.Deployment) appsv1.DeploymentStatus {
	replicas := ptr.Deref(dep.Spec.Replicas, 1)
	return appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Replicas:           replicas, UpdatedReplicas: replicas,
		ReadyReplicas: replicas, AvailableReplicas: replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				Message: "Deployment has minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
				Message: "ReplicaSet has successfully progressed."},
		},
	}
}

// Stuck is the status the deployment controller writes while dep's pods
// are created but none becomes available (an image that cannot be pulled,
// a crash loop): every replica updated, none ready, Available False.
func Stuck(dep *appsv1.Deployment) appsv1.DeploymentStatus {
	replicas := ptr.Deref(dep.Spec.Replicas, 1)
	return appsv1.DeploymentStatus{
		ObservedGeneration: dep.Generation,
		Replicas:           replicas, UpdatedReplicas: replicas, UnavailableReplicas: replicas,
		Conditions: []appsv1.DeploymentCondition{
			{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable",
				Message: "Deployment does not have minimum availability."},
			{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated",
				Message: "ReplicaSet is progressing."},
		},
	}
}
