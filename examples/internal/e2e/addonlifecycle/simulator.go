package addonlifecycle

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/converge-dev/converge/testenv/standin"
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
// template is rolled out: every replica available (standin.RolledOut)
// unless its image is tagged brokenImageTag (standin.Stuck).
func rolledOut(dep *appsv1.Deployment) appsv1.DeploymentStatus {
	if broken(dep) {
		return standin.Stuck(dep)
	}
	return standin.RolledOut(dep)
}

// broken reports whether one of dep's images is tagged brokenImageTag: its
// pods never become available.
func broken(dep *appsv1.Deployment) bool {
	for _, c := range dep.Spec.Template.Spec.Containers {
		if strings.HasSuffix(c.Image, ":"+brokenImageTag) {
			return true
		}
	}
	return false
}
