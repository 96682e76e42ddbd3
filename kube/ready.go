package kube

import (
	"errors"
	"fmt"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/internal/input"
)

// ErrNotReady is matched (errors.Is) by ObjectReady's error, and so by
// Applier.Ready's, while an object is still on its way: its controller has
// not observed its generation or not finished acting on it yet.
var ErrNotReady = errors.New("kube: not ready")

// ErrObjectFailed is matched by ObjectReady's error when an object failed:
// waiting longer does not make it ready (a failed Job, a Deployment past its
// progress deadline, a resource whose controller reports Stalled). It is
// never matched together with ErrNotReady.
var ErrObjectFailed = errors.New("kube: object failed")

// ObjectReady judges an object read from the cluster by its status: nil when
// it is ready, an error matching ErrNotReady while it is in progress, and one
// matching ErrObjectFailed once it failed. The message names the object's
// kind, namespace/name and the reason ("kube: Deployment shop/web is not
// ready: LessAvailable: Available: 1/3"). A nil object, or one without a
// kind, is an error matching converge.ErrInvalid.
//
// Any kind is judged, by kstatus' rules (github.com/fluxcd/cli-utils
// pkg/kstatus/status): an object being deleted is not ready; an object
// whose status.observedGeneration lags metadata.generation is not ready; a
// condition Reconciling=True means in progress and Stalled=True failed; the
// built-in workloads are ready once rolled out (every replica updated,
// available and ready, no old one left, a Deployment's Available and
// Progressing conditions; a ReplicaSet that cannot create its pods,
// ReplicaFailure=True, is in progress), a CustomResourceDefinition once
// Established (and failed when its names are not accepted), a
// PersistentVolumeClaim once Bound, a Service of type LoadBalancer once it
// has a cluster IP; any other object is ready when its Ready condition is
// True, not ready while it is False or Unknown, and ready once it exists
// when it has none of these conditions (a ConfigMap, a Secret, a CronJob, a
// PodDisruptionBudget).
//
// Where kstatus and kube disagree, kube's rules win:
//   - A Job is ready when it has completed (condition Complete=True) and
//     failed when Failed=True, whose message the error carries. kstatus calls
//     a Job Current as soon as it has started, but a payload that runs a
//     migration Job before the Deployment that needs it must wait for the
//     migration to end.
//   - A Pod that Succeeded is ready and one that Failed has failed; kstatus
//     calls both Current because both ended. A Pending Pod is not ready for
//     as long as it stays Pending, unschedulable or not: kstatus fails an
//     unschedulable Pod 15 seconds after its creation by reading the clock,
//     but capacity can still come (a cluster autoscaler), and how long to wait
//     is the caller's deadline (payload's Policy.ReadinessTimeout), not a
//     clock read inside a readiness check.
//   - A Deployment, ReplicaSet, DaemonSet or StatefulSet without
//     status.observedGeneration is not ready: its controller always writes
//     it, so a status without it comes from before the controller saw the
//     object. kstatus skips the
//     generation check when the field is absent (on kinds whose controllers
//     never write it, as on many custom resources, kube does too).
func ObjectReady(obj *unstructured.Unstructured) error {
	if obj == nil || obj.Object == nil || obj.GetKind() == "" {
		return input.Invalidf("kube", "ObjectReady arguments", "nil object or object without a kind")
	}
	res := judge(obj)
	switch res.Status {
	case status.CurrentStatus:
		return nil
	case status.FailedStatus:
		return &readinessError{obj: describe(obj), res: res, failed: true}
	default:
		return &readinessError{obj: describe(obj), res: res}
	}
}

// judge returns kstatus' result for obj, or kube's own where the two differ.
func judge(obj *unstructured.Unstructured) *status.Result {
	if obj.GetDeletionTimestamp() != nil {
		return &status.Result{Status: status.TerminatingStatus, Message: "Resource scheduled for deletion"}
	}
	if rule := kubeRules[obj.GroupVersionKind().GroupKind()]; rule != nil {
		if res := rule(obj); res != nil {
			return res
		}
	}
	res, err := status.Compute(obj)
	if err != nil {
		return inProgressResult("StatusUnreadable", "its status cannot be read: "+err.Error())
	}
	return res
}

// kubeRules are kube's rules where they differ from kstatus, by kind; a
// rule's nil result leaves the decision to kstatus.
var kubeRules = map[schema.GroupKind]func(*unstructured.Unstructured) *status.Result{
	{Group: "batch", Kind: "Job"}:        jobStatus,
	{Kind: "Pod"}:                        podStatus,
	{Group: "apps", Kind: "Deployment"}:  observedGenerationWritten,
	{Group: "apps", Kind: "ReplicaSet"}:  observedGenerationWritten,
	{Group: "apps", Kind: "DaemonSet"}:   observedGenerationWritten,
	{Group: "apps", Kind: "StatefulSet"}: observedGenerationWritten,
}

// jobStatus is ready on Complete=True, failed on Failed=True, in progress
// otherwise.
func jobStatus(obj *unstructured.Unstructured) *status.Result {
	if c, ok := conditionOf(obj, "Failed"); ok && c.Status == "True" {
		return &status.Result{Status: status.FailedStatus, Message: c.Message,
			Conditions: []status.Condition{{Type: status.ConditionStalled, Status: "True", Reason: nonEmpty(c.Reason, "JobFailed"), Message: c.Message}}}
	}
	if c, ok := conditionOf(obj, "Complete"); ok && c.Status == "True" {
		return &status.Result{Status: status.CurrentStatus, Message: "Job completed"}
	}
	active, _, _ := unstructured.NestedInt64(obj.Object, "status", "active")
	succeeded, _, _ := unstructured.NestedInt64(obj.Object, "status", "succeeded")
	failed, _, _ := unstructured.NestedInt64(obj.Object, "status", "failed")
	return inProgressResult("JobNotComplete", fmt.Sprintf("has not completed: %d active, %d succeeded, %d failed", active, succeeded, failed))
}

// podStatus decides a Pod that ended or is Pending; kstatus decides a
// running one (ready, crash-looping or not ready yet).
func podStatus(obj *unstructured.Unstructured) *status.Result {
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	switch phase {
	case "Succeeded":
		return &status.Result{Status: status.CurrentStatus, Message: "Pod succeeded"}
	case "Failed":
		reason, _, _ := unstructured.NestedString(obj.Object, "status", "reason")
		message, _, _ := unstructured.NestedString(obj.Object, "status", "message")
		message = nonEmpty(message, "Pod failed")
		return &status.Result{Status: status.FailedStatus, Message: message,
			Conditions: []status.Condition{{Type: status.ConditionStalled, Status: "True", Reason: nonEmpty(reason, "PodFailed"), Message: message}}}
	case "Pending":
		if c, ok := conditionOf(obj, "PodScheduled"); ok && c.Status == "False" {
			return inProgressResult(nonEmpty(c.Reason, "PodNotScheduled"), nonEmpty(c.Message, "Pod has not been scheduled"))
		}
		return inProgressResult("PodPending", "Pod is in the Pending phase")
	}
	return nil
}

// observedGenerationWritten is in progress while the workload's status has
// no observedGeneration.
func observedGenerationWritten(obj *unstructured.Unstructured) *status.Result {
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status", "observedGeneration"); !found {
		return inProgressResult("LatestGenerationNotObserved", obj.GetKind()+" status.observedGeneration not written yet")
	}
	return nil
}

func inProgressResult(reason, message string) *status.Result {
	return &status.Result{Status: status.InProgressStatus, Message: message,
		Conditions: []status.Condition{{Type: status.ConditionReconciling, Status: "True", Reason: reason, Message: message}}}
}

// conditionOf returns obj's status condition of condType.
func conditionOf(obj *unstructured.Unstructured, condType string) (status.BasicCondition, bool) {
	withConds, err := status.GetObjectWithConditions(obj.Object)
	if err != nil {
		return status.BasicCondition{}, false
	}
	for _, c := range withConds.Status.Conditions {
		if c.Type == condType {
			return c, true
		}
	}
	return status.BasicCondition{}, false
}

func nonEmpty(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// describe names obj as "Kind namespace/name", or "Kind name" when it is
// cluster-scoped.
func describe(obj *unstructured.Unstructured) string {
	return obj.GetKind() + " " + objectName(obj)
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}

// readinessError is ObjectReady's error: obj is not ready, or has failed.
type readinessError struct {
	obj    string
	res    *status.Result
	failed bool
}

// Error implements error: "kube: Job shop/migrate failed: BackoffLimitExceeded:
// Job has reached the specified backoff limit".
func (e *readinessError) Error() string {
	state := "is not ready"
	if e.res.Status == status.TerminatingStatus {
		state = "is being deleted"
	}
	if e.failed {
		state = "failed"
	}
	msg := fmt.Sprintf("kube: %s %s", e.obj, state)
	if reason := e.reason(); reason != "" {
		msg += ": " + reason
	}
	if e.res.Message != "" {
		msg += ": " + e.res.Message
	}
	return msg
}

// reason is the reason of kstatus' Reconciling or Stalled condition.
func (e *readinessError) reason() string {
	for _, c := range e.res.Conditions {
		if c.Reason != "" {
			return c.Reason
		}
	}
	return ""
}

// Is makes errors.Is match ErrObjectFailed for a failed object and
// ErrNotReady for any other.
func (e *readinessError) Is(target error) bool {
	if e.failed {
		return target == ErrObjectFailed
	}
	return target == ErrNotReady
}
