package standin

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Completed is the status the Job controller writes when job's one pod
// succeeded at now, with the fields the apiserver requires of a finished
// Job: a start and completion time and the conditions SuccessCriteriaMet
// and Complete.
func Completed(job *batchv1.Job, now time.Time) batchv1.JobStatus {
	finished := metav1.NewTime(now.UTC().Truncate(time.Second))
	started := metav1.NewTime(finished.Add(-time.Second))
	return batchv1.JobStatus{
		StartTime: &started, CompletionTime: &finished, Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			jobCondition(batchv1.JobSuccessCriteriaMet, "CompletionsReached", "Reached expected number of succeeded pods", finished),
			jobCondition(batchv1.JobComplete, "CompletionsReached", "Reached expected number of succeeded pods", finished),
		},
	}
}

// Failed is the status the Job controller writes when job's pod failed at
// now and its backoff limit is reached: a start time, one failed pod and
// the conditions FailureTarget and Failed (BackoffLimitExceeded).
func Failed(job *batchv1.Job, now time.Time) batchv1.JobStatus {
	finished := metav1.NewTime(now.UTC().Truncate(time.Second))
	started := metav1.NewTime(finished.Add(-time.Second))
	return batchv1.JobStatus{
		StartTime: &started, Failed: 1,
		Conditions: []batchv1.JobCondition{
			jobCondition(batchv1.JobFailureTarget, "BackoffLimitExceeded", "Job has reached the specified backoff limit", finished),
			jobCondition(batchv1.JobFailed, "BackoffLimitExceeded", "Job has reached the specified backoff limit", finished),
		},
	}
}

func jobCondition(t batchv1.JobConditionType, reason, message string, at metav1.Time) batchv1.JobCondition {
	return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: at, LastTransitionTime: at}
}
