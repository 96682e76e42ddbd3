package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"

	"github.com/converge-dev/converge/payload"
)

// defaultFieldManager is the field manager of the objects the example applies.
const defaultFieldManager = "payload-apply"

// clusterApplier applies one manifest with server-side apply, forcing conflicts as an
// operator that owns its payload does: the fields of the manifest are the applier's,
// whoever changed them last. A re-apply of an unchanged manifest writes nothing. Jobs
// are applied once; Ready tells whether one has succeeded, which the worker waits for
// before the next run level, so the Job is a real barrier. Delete removes the object of
// a manifest marked for deletion.
type clusterApplier struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	// fieldManager names the applier in the objects' managedFields.
	fieldManager string
	// level is the run level of the manifest applied last, for the progress line.
	level atomic.Int64
	// onError, when set, is told about every failed attempt.
	onError func(m *payload.Manifest, err error)
	// onWait, when set, is told about every readiness check that must wait.
	onWait func(m *payload.Manifest, err error)
	// completeJobs plays the job controller of a cluster that has none (the in-memory
	// one, an apiserver without kube-controller-manager): a Job without an outcome is
	// marked Complete through its status subresource.
	completeJobs bool
	// clock stamps the status of a Job marked Complete.
	clock clock.PassiveClock
}

var (
	_ payload.Applier   = (*clusterApplier)(nil)
	_ payload.Deleter   = (*clusterApplier)(nil)
	_ payload.Readiness = (*clusterApplier)(nil)
)

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
	client, err := resourceFor(a.client, a.mapper, m)
	if err != nil {
		return err
	}
	if m.GVK.Kind == "Job" {
		// A Job's template is immutable: it is created once and then only watched (Ready).
		_, err := client.Get(ctx, m.Name(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = a.serverSideApply(ctx, client, m)
		}
		return err
	}
	_, err = a.serverSideApply(ctx, client, m)
	return err
}

// Ready tells whether the object of m is ready: a Job must have succeeded (a failed one
// is an *payload.UpdateError, which stops the wait); other objects are ready once
// applied. Playing the job controller (completeJobs), it marks a running Job Complete,
// so the next check finds it done.
func (a *clusterApplier) Ready(ctx context.Context, m *payload.Manifest) error {
	if m.GVK.Kind != "Job" {
		return nil
	}
	client, err := resourceFor(a.client, a.mapper, m)
	if err != nil {
		return err
	}
	job, err := client.Get(ctx, m.Name(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	err = jobOutcome(job)
	if errors.Is(err, errJobRunning) {
		if a.onWait != nil {
			a.onWait(m, err)
		}
		if a.completeJobs {
			if _, updateErr := client.UpdateStatus(ctx, completedJob(job, a.clock.Now()), metav1.UpdateOptions{FieldManager: a.fieldManager}); updateErr != nil {
				return updateErr
			}
		}
	}
	return err
}

// Delete removes the object of m; the worker takes NotFound for an object already gone.
func (a *clusterApplier) Delete(ctx context.Context, m *payload.Manifest) error {
	client, err := resourceFor(a.client, a.mapper, m)
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	return client.Delete(ctx, m.Name(), metav1.DeleteOptions{PropagationPolicy: &background})
}

func (a *clusterApplier) serverSideApply(ctx context.Context, client dynamic.ResourceInterface, m *payload.Manifest) (*unstructured.Unstructured, error) {
	return client.Apply(ctx, m.Name(), m.Object, metav1.ApplyOptions{FieldManager: a.fieldManager, Force: true})
}

// resourceFor returns the client of m's resource, namespaced when the resource is.
func resourceFor(client dynamic.Interface, mapper meta.RESTMapper, m *payload.Manifest) (dynamic.ResourceInterface, error) {
	mapping, err := mapper.RESTMapping(m.GVK.GroupKind(), m.GVK.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return client.Resource(mapping.Resource).Namespace(m.Namespace()), nil
	}
	return client.Resource(mapping.Resource), nil
}

// errJobRunning makes the worker wait until the Job is done.
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

// completedJob returns a copy of job with the status a job controller writes when the
// Job's one pod succeeded, with the fields the apiserver requires of a finished Job.
func completedJob(job *unstructured.Unstructured, now time.Time) *unstructured.Unstructured {
	done := job.DeepCopy()
	finished := now.UTC().Truncate(time.Second).Format(time.RFC3339)
	started := now.UTC().Truncate(time.Second).Add(-time.Second).Format(time.RFC3339)
	condition := func(condType string) any {
		return map[string]any{
			"type": condType, "status": "True", "reason": "CompletionsReached",
			"message": "Reached expected number of succeeded pods", "lastProbeTime": finished, "lastTransitionTime": finished,
		}
	}
	done.Object["status"] = map[string]any{
		"startTime":      started,
		"completionTime": finished,
		"succeeded":      int64(1),
		"conditions":     []any{condition("SuccessCriteriaMet"), condition("Complete")},
	}
	return done
}
