package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/payload"
)

const fieldManager = "payload-apply"

// clusterApplier applies one manifest with a dynamic client: create it when missing,
// update it otherwise. Jobs are created once and then waited for: a Job that has not
// succeeded yet is an error, so the task retries it with its backoff, which makes the
// Job a real barrier.
type clusterApplier struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	// level is the run level of the manifest applied last, for the progress line.
	level atomic.Int64
	// onError, when set, is told about every failed attempt.
	onError func(m *payload.Manifest, err error)
}

var _ payload.Applier = (*clusterApplier)(nil)

// Apply applies m and reports a failed attempt to onError.
func (a *clusterApplier) Apply(ctx context.Context, m *payload.Manifest, _ payload.State) error {
	err := a.apply(ctx, m)
	if err != nil && a.onError != nil {
		a.onError(m, err)
	}
	return err
}

func (a *clusterApplier) apply(ctx context.Context, m *payload.Manifest) error {
	if level, _, ok := payload.ParseRunLevel(m.File); ok {
		a.level.Store(int64(level))
	}
	mapping, err := a.mapper.RESTMapping(m.GVK.GroupKind(), m.GVK.Version)
	if err != nil {
		return err
	}
	var client dynamic.ResourceInterface = a.client.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		client = a.client.Resource(mapping.Resource).Namespace(m.Namespace())
	}
	desired := m.Object.DeepCopy()
	existing, err := client.Get(ctx, m.Name(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		existing, err = client.Create(ctx, desired, metav1.CreateOptions{FieldManager: fieldManager})
	case err != nil:
	case m.GVK.Kind == "Job":
		// A Job's template is immutable: it is created once and then only watched.
	default:
		desired.SetResourceVersion(existing.GetResourceVersion())
		keepAllocated(desired, existing)
		existing, err = client.Update(ctx, desired, metav1.UpdateOptions{FieldManager: fieldManager})
	}
	if err != nil {
		return err
	}
	if m.GVK.Kind == "Job" {
		return jobOutcome(existing)
	}
	return nil
}

// keepAllocated copies the fields the server allocated on create into desired, so an
// update does not try to clear them.
func keepAllocated(desired, existing *unstructured.Unstructured) {
	if desired.GetKind() != "Service" {
		return
	}
	for _, field := range []string{"clusterIP", "clusterIPs"} {
		if v, ok, _ := unstructured.NestedFieldCopy(existing.Object, "spec", field); ok {
			_ = unstructured.SetNestedField(desired.Object, v, "spec", field)
		}
	}
}

// errJobRunning makes the task retry until the Job is done.
var errJobRunning = errors.New("the job has not completed yet")

func jobOutcome(job *unstructured.Unstructured) error {
	conditions, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["status"] != "True" {
			continue
		}
		switch cond["type"] {
		case "Complete":
			return nil
		case "Failed":
			return &payload.UpdateError{
				Reason:  "JobFailed",
				Message: fmt.Sprintf("Job %s/%s failed: %v", job.GetNamespace(), job.GetName(), cond["message"]),
				Effect:  payload.EffectFail,
				Name:    job.GetName(),
			}
		}
	}
	return fmt.Errorf("job %s/%s: %w", job.GetNamespace(), job.GetName(), errJobRunning)
}
