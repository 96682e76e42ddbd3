package payloadapply

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

// Applier is kube.Applier as the example runs it: it tells the run level of the
// manifest applied last (for the progress line), reports every failed attempt and every
// readiness check that must wait, and, with SimulateJobs, plays the job controller of a
// cluster that has none (the in-memory one, an apiserver without
// kube-controller-manager): a Job that has not completed is marked Complete through its
// status subresource, so the next check finds it done. Only Jobs are waited for: the
// apiserver of the integration tests runs no controllers, so a Deployment would never
// roll out there, and the in-memory cluster has none either.
type Applier struct {
	// Kube applies, deletes and checks readiness.
	Kube *kube.Applier
	// Cluster reaches the Jobs to complete; FieldManager names their status writer.
	Cluster      *Cluster
	FieldManager string
	SimulateJobs bool
	// OnError and OnWait, when set, are told about failed attempts and waits.
	OnError, OnWait func(m *payload.Manifest, err error)
	level           atomic.Int64
}

var (
	_ payload.Applier   = (*Applier)(nil)
	_ payload.Deleter   = (*Applier)(nil)
	_ payload.Readiness = (*Applier)(nil)
)

// Level is the run level of the manifest applied last.
func (a *Applier) Level() int64 { return a.level.Load() }

// Apply applies m and reports a failed attempt to OnError.
func (a *Applier) Apply(ctx context.Context, m *payload.Manifest, s payload.State) error {
	if level, _, ok := payload.ParseRunLevel(m.File); ok {
		a.level.Store(int64(level))
	}
	err := a.Kube.Apply(ctx, m, s)
	if err != nil && a.OnError != nil {
		a.OnError(m, err)
	}
	return err
}

// Delete deletes the object of m.
func (a *Applier) Delete(ctx context.Context, m *payload.Manifest) error {
	return a.Kube.Delete(ctx, m)
}

// Ready checks a Job with kube.Applier (any other object is ready once applied), reports a wait to OnWait and completes a Job that
// must be waited for when SimulateJobs is set. A failed Job stays failed.
func (a *Applier) Ready(ctx context.Context, m *payload.Manifest) error {
	if m.GVK.Group != "batch" || m.GVK.Kind != "Job" {
		return nil
	}
	err := a.Kube.Ready(ctx, m)
	if !errors.Is(err, kube.ErrNotReady) {
		return err
	}
	if a.OnWait != nil {
		a.OnWait(m, err)
	}
	if a.SimulateJobs {
		client, resErr := a.Cluster.ResourceFor(m)
		if resErr != nil {
			return resErr
		}
		job, getErr := client.Get(ctx, m.Name(), metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if _, updateErr := client.UpdateStatus(ctx, CompletedJob(job, a.Cluster.Clock.Now()), metav1.UpdateOptions{FieldManager: a.FieldManager}); updateErr != nil {
			return updateErr
		}
	}
	return err
}

// CompletedJob returns a copy of job with the status a job controller writes when the
// Job's one pod succeeded, with the fields the apiserver requires of a finished Job.
func CompletedJob(job *unstructured.Unstructured, now time.Time) *unstructured.Unstructured {
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
