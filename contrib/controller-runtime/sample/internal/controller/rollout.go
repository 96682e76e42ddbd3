package controller

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// +kubebuilder:rbac:groups=sample.converge.dev,resources=rollouts,verbs=get;list;watch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=rollouts/status,verbs=get;update
// +kubebuilder:rbac:groups=sample.converge.dev,resources=rollouts/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete

// RolloutOptions configures the controller that rolls each Rollout's
// revision out node by node, as OpenShift's static-pod operators do: an
// installer pod per node and revision (running installerImage) writes the
// operand, whose pod <operand>-<node> in namespace then reports the
// revision it runs (label kube.LabelRevision).
func RolloutOptions(namespace, operand, installerImage string) crconverge.RolloutOptions {
	return crconverge.RolloutOptions{
		For: &v1alpha1.Rollout{},
		Pods: kube.RolloutPodsConfig{Namespace: namespace, Operand: operand, InstallerPod: func(inst rollout.Installer) *corev1.Pod {
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "installer", Image: installerImage, Args: []string{"--revision=" + strconv.Itoa(int(inst.Revision))},
			}}}}
		}},
	}
}
