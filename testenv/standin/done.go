package standin

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/internal/input"
)

// Done returns a copy of obj with the status its controller writes once
// it is done at now — a Deployment RolledOut, a Job Completed — and true;
// for any other kind, or an object that does not decode as its kind, it
// returns obj unchanged and false.
func Done(obj *unstructured.Unstructured, now time.Time) (*unstructured.Unstructured, bool) {
	var status any
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		var dep appsv1.Deployment
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &dep) != nil {
			return obj, false
		}
		dep.Generation = obj.GetGeneration()
		s := RolledOut(&dep)
		status = &s
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		var job batchv1.Job
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &job) != nil {
			return obj, false
		}
		s := Completed(&job, now)
		status = &s
	default:
		return obj, false
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return obj, false
	}
	if _, isDeployment := status.(*appsv1.DeploymentStatus); isDeployment {
		// Written even when 0 (an object of a fake client has no
		// generation), where the typed field's omitempty would drop it:
		// kstatus reads a missing observedGeneration as not observed yet.
		u["observedGeneration"] = obj.GetGeneration()
	}
	done := obj.DeepCopy()
	done.Object["status"] = u
	return done, true
}

// deployments is the resource RollOutAll lists.
var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// RollOutAll writes, through the status subresource, the status of a
// rolled-out Deployment on every Deployment of namespace whose status is
// not that already, at now: one call plays the deployment controller for a
// dynamic client (helmconverge's MemoryCluster, client-go's fake dynamic
// client with Deployments registered, or a real apiserver) between two
// reconciles of a test. A Deployment deleted meanwhile is skipped.
func RollOutAll(ctx context.Context, client dynamic.Interface, namespace string, now time.Time) error {
	if input.IsNil(client) {
		return input.Invalidf("standin", "RollOutAll", "client is required")
	}
	deps := client.Resource(deployments).Namespace(namespace)
	list, err := deps.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range list.Items {
		dep := &list.Items[i]
		done, ok := Done(dep, now)
		if !ok || equality.Semantic.DeepEqual(dep.Object["status"], done.Object["status"]) {
			continue
		}
		if _, err := deps.UpdateStatus(ctx, done, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
