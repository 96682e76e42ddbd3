//go:build integration

package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"
)

// liveCase is an object created on the API server, the status its
// controller would write (none runs here), and what Applier.Ready must say
// of it then, word for word.
type liveCase struct {
	readinessCase
	// status is written through the status subresource after the object is
	// created; empty writes none.
	status string
	// specPatch, when set, is a merge patch of the spec applied after the
	// status, so that the API server moves the generation past the one the
	// status observed.
	specPatch string
}

const podTemplate = `
    metadata: {labels: {app: x}}
    spec: {containers: [{name: c, image: busybox}]}`

// liveCases hold each built-in kind and custom resources with the standard
// conditions in the states a real API server lets a test put them in. A CRD
// being installed and a LoadBalancer Service without a cluster IP last no
// longer than the API server takes to establish it or to allocate an IP, so
// they are on the fake client only (readinessCases).
var liveCases = []liveCase{
	{readinessCase: readinessCase{name: "a Deployment no controller has written a status for is in progress", want: inProgress,
		wantErr: "kube: Deployment kube-ready/web-new is not ready: LatestGenerationNotObserved: Deployment status.observedGeneration not written yet", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-new, namespace: kube-ready}
spec:
  replicas: 3
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}},
	{readinessCase: readinessCase{name: "a rolled out Deployment is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-ready, namespace: kube-ready}
spec:
  replicas: 3
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
observedGeneration: 1
replicas: 3
updatedReplicas: 3
readyReplicas: 3
availableReplicas: 3
conditions:
- {type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability.}
- {type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: ReplicaSet "web-ready-1" has successfully progressed.}`},
	{readinessCase: readinessCase{name: "a Deployment whose new replicas are not all available is in progress", want: inProgress,
		wantErr: "kube: Deployment kube-ready/web-rolling is not ready: LessAvailable: Available: 1/3", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-rolling, namespace: kube-ready}
spec:
  replicas: 3
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
observedGeneration: 1
replicas: 3
updatedReplicas: 3
readyReplicas: 1
availableReplicas: 1
conditions:
- {type: Available, status: "False", reason: MinimumReplicasUnavailable, message: Deployment does not have minimum availability.}
- {type: Progressing, status: "True", reason: ReplicaSetUpdated, message: ReplicaSet "web-rolling-1" is progressing.}`},
	{readinessCase: readinessCase{name: "a Deployment past its progress deadline failed", want: failed,
		wantErr: "kube: Deployment kube-ready/web-stuck failed: ProgressDeadlineExceeded: Progress deadline exceeded", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-stuck, namespace: kube-ready}
spec:
  replicas: 3
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
observedGeneration: 1
replicas: 3
updatedReplicas: 1
conditions:
- {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "web-stuck-1" has timed out progressing.}`},
	{readinessCase: readinessCase{name: "a Deployment whose spec changed since its status was written is in progress", want: inProgress,
		wantErr: "kube: Deployment kube-ready/web-changed is not ready: LatestGenerationNotObserved: Deployment generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-changed, namespace: kube-ready}
spec:
  replicas: 3
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, specPatch: `{"spec": {"replicas": 4}}`, status: `
observedGeneration: 1
replicas: 3
updatedReplicas: 3
readyReplicas: 3
availableReplicas: 3
conditions:
- {type: Available, status: "True", reason: MinimumReplicasAvailable, message: Deployment has minimum availability.}
- {type: Progressing, status: "True", reason: NewReplicaSetAvailable, message: ReplicaSet "web-changed-1" has successfully progressed.}`},
	{readinessCase: readinessCase{name: "a rolled out DaemonSet is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent-ready, namespace: kube-ready}
spec:
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
{observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, numberReady: 3, numberMisscheduled: 0}`},
	{readinessCase: readinessCase{name: "a DaemonSet with a pod not yet available is in progress", want: inProgress,
		wantErr: "kube: DaemonSet kube-ready/agent-rolling is not ready: LessAvailable: Available: 2/3", yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent-rolling, namespace: kube-ready}
spec:
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
{observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2, numberReady: 2, numberMisscheduled: 0}`},
	{readinessCase: readinessCase{name: "a DaemonSet whose spec changed since its status was written is in progress", want: inProgress,
		wantErr: "kube: DaemonSet kube-ready/agent-changed is not ready: LatestGenerationNotObserved: DaemonSet generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent-changed, namespace: kube-ready}
spec:
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, specPatch: `{"spec": {"minReadySeconds": 5}}`, status: `
{observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, numberReady: 3, numberMisscheduled: 0}`},
	{readinessCase: readinessCase{name: "a rolled out StatefulSet is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db-ready, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
{observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: db-ready-1, updateRevision: db-ready-1}`},
	{readinessCase: readinessCase{name: "a StatefulSet in the middle of a rolling update is in progress", want: inProgress,
		wantErr: "kube: StatefulSet kube-ready/db-rolling is not ready: PartitionRollout: updated: 1/2", yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db-rolling, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
{observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 1, updatedReplicas: 1, currentRevision: db-rolling-1, updateRevision: db-rolling-2}`},
	{readinessCase: readinessCase{name: "a StatefulSet whose spec changed since its status was written is in progress", want: inProgress,
		wantErr: "kube: StatefulSet kube-ready/db-changed is not ready: LatestGenerationNotObserved: StatefulSet generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db-changed, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, specPatch: `{"spec": {"replicas": 3}}`, status: `
{observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: db-changed-1, updateRevision: db-changed-1}`},
	{readinessCase: readinessCase{name: "a ReplicaSet no controller has written a status for is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet kube-ready/web-rs-new is not ready: LatestGenerationNotObserved: ReplicaSet status.observedGeneration not written yet", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs-new, namespace: kube-ready}
spec:
  replicas: 0
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}},
	{readinessCase: readinessCase{name: "a ReplicaSet with every replica available is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs-ready, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
{observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2}`},
	{readinessCase: readinessCase{name: "a ReplicaSet with a replica not yet available is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet kube-ready/web-rs-starting is not ready: LessAvailable: Available: 1/2", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs-starting, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
{observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 1, availableReplicas: 1}`},
	{readinessCase: readinessCase{name: "a ReplicaSet that cannot create its pods is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet kube-ready/web-rs-quota is not ready: ReplicaFailure: Replica Failure condition. Check Pods", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs-quota, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, status: `
observedGeneration: 1
replicas: 0
conditions:
- {type: ReplicaFailure, status: "True", reason: FailedCreate, message: exceeded quota, lastTransitionTime: "2026-01-01T00:00:00Z"}`},
	{readinessCase: readinessCase{name: "a ReplicaSet whose spec changed since its status was written is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet kube-ready/web-rs-changed is not ready: LatestGenerationNotObserved: ReplicaSet generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-rs-changed, namespace: kube-ready}
spec:
  replicas: 2
  selector: {matchLabels: {app: x}}
  template:` + podTemplate}, specPatch: `{"spec": {"replicas": 3}}`, status: `
{observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2}`},
	{readinessCase: readinessCase{name: "a Job that has not started is in progress", want: inProgress,
		wantErr: "kube: Job kube-ready/migrate-new is not ready: JobNotComplete: has not completed: 0 active, 0 succeeded, 0 failed", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate-new, namespace: kube-ready}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`}},
	{readinessCase: readinessCase{name: "a running Job is in progress, where kstatus calls it Current", want: inProgress,
		wantErr: "kube: Job kube-ready/migrate-running is not ready: JobNotComplete: has not completed: 1 active, 0 succeeded, 0 failed", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate-running, namespace: kube-ready}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`}, status: `
{startTime: "2026-01-01T00:00:00Z", active: 1, ready: 0, terminating: 0, uncountedTerminatedPods: {}}`},
	{readinessCase: readinessCase{name: "a completed Job is ready", want: ready, yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate-done, namespace: kube-ready}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`}, status: `
startTime: "2026-01-01T00:00:00Z"
completionTime: "2026-01-01T00:00:10Z"
succeeded: 1
ready: 0
terminating: 0
uncountedTerminatedPods: {}
conditions:
- {type: SuccessCriteriaMet, status: "True", reason: CompletionsReached, message: Reached expected number of succeeded pods, lastProbeTime: "2026-01-01T00:00:10Z", lastTransitionTime: "2026-01-01T00:00:10Z"}
- {type: Complete, status: "True", reason: CompletionsReached, message: Reached expected number of succeeded pods, lastProbeTime: "2026-01-01T00:00:10Z", lastTransitionTime: "2026-01-01T00:00:10Z"}`},
	{readinessCase: readinessCase{name: "a failed Job failed", want: failed,
		wantErr: "kube: Job kube-ready/migrate-failed failed: BackoffLimitExceeded: Job has reached the specified backoff limit", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate-failed, namespace: kube-ready}
spec:
  backoffLimit: 0
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`}, status: `
startTime: "2026-01-01T00:00:00Z"
failed: 1
ready: 0
terminating: 0
uncountedTerminatedPods: {}
conditions:
- {type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastProbeTime: "2026-01-01T00:00:10Z", lastTransitionTime: "2026-01-01T00:00:10Z"}
- {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit, lastProbeTime: "2026-01-01T00:00:10Z", lastTransitionTime: "2026-01-01T00:00:10Z"}`},
	{readinessCase: readinessCase{name: "a Pod no kubelet has started is in progress", want: inProgress,
		wantErr: "kube: Pod kube-ready/shell-new is not ready: PodPending: Pod is in the Pending phase", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell-new, namespace: kube-ready}
spec: {containers: [{name: shell, image: busybox}]}`}},
	{readinessCase: readinessCase{name: "an unschedulable Pod is in progress", want: inProgress,
		wantErr: "kube: Pod kube-ready/shell-unschedulable is not ready: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell-unschedulable, namespace: kube-ready}
spec: {containers: [{name: shell, image: busybox}]}`}, status: `
phase: Pending
conditions:
- {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu.", lastTransitionTime: "2026-01-01T00:00:00Z"}`},
	{readinessCase: readinessCase{name: "a running Pod that is Ready is ready", want: ready, yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell-ready, namespace: kube-ready}
spec: {containers: [{name: shell, image: busybox}]}`}, status: `
phase: Running
conditions:
- {type: Ready, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}`},
	{readinessCase: readinessCase{name: "a crash-looping Pod failed", want: failed,
		wantErr: "kube: Pod kube-ready/shell-crashing failed: ContainerCrashLooping: Containers in CrashLoop state: shell", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell-crashing, namespace: kube-ready}
spec: {containers: [{name: shell, image: busybox}]}`}, status: `
phase: Running
conditions:
- {type: Ready, status: "False", reason: ContainersNotReady, lastTransitionTime: "2026-01-01T00:00:00Z"}
containerStatuses:
- {name: shell, image: busybox, imageID: "", ready: false, restartCount: 5, state: {waiting: {reason: CrashLoopBackOff}}}`},
	{readinessCase: readinessCase{name: "a Pod that succeeded is ready", want: ready, yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell-succeeded, namespace: kube-ready}
spec: {restartPolicy: Never, containers: [{name: shell, image: busybox}]}`}, status: `
{phase: Succeeded}`},
	{readinessCase: readinessCase{name: "a Pod that failed failed", want: failed,
		wantErr: "kube: Pod kube-ready/shell-evicted failed: Evicted: The node was low on resource: memory.", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell-evicted, namespace: kube-ready}
spec: {restartPolicy: Never, containers: [{name: shell, image: busybox}]}`}, status: `
{phase: Failed, reason: Evicted, message: "The node was low on resource: memory."}`},
	{readinessCase: readinessCase{name: "a PersistentVolumeClaim no volume is bound to is in progress", want: inProgress,
		wantErr: "kube: PersistentVolumeClaim kube-ready/data-new is not ready: NotBound: PVC is not Bound. phase: Pending", yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-new, namespace: kube-ready}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`}},
	{readinessCase: readinessCase{name: "a bound PersistentVolumeClaim is ready", want: ready, yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-bound, namespace: kube-ready}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}`}, status: `
{phase: Bound, accessModes: [ReadWriteOnce], capacity: {storage: 1Gi}}`},
	{readinessCase: readinessCase{name: "a PodDisruptionBudget no controller has written a status for is ready, as kstatus has it", want: ready, yaml: `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb-new, namespace: kube-ready}
spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}`}},
	{readinessCase: readinessCase{name: "a PodDisruptionBudget whose spec changed since its status was written is in progress", want: inProgress,
		wantErr: "kube: PodDisruptionBudget kube-ready/web-pdb-changed is not ready: LatestGenerationNotObserved: PodDisruptionBudget generation is 2, but latest observed generation is 1", yaml: `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web-pdb-changed, namespace: kube-ready}
spec: {minAvailable: 1, selector: {matchLabels: {app: x}}}`}, specPatch: `{"spec": {"minAvailable": 2}}`, status: `
{observedGeneration: 1, disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 0}`},
	{readinessCase: readinessCase{name: "a CronJob is ready once it exists", want: ready, yaml: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: kube-ready}
spec:
  schedule: "0 * * * *"
  jobTemplate:
    spec:
      template:
        spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}`}},
	{readinessCase: readinessCase{name: "a Secret is ready once it exists", want: ready, yaml: `
apiVersion: v1
kind: Secret
metadata: {name: credentials, namespace: kube-ready}
stringData: {password: hunter2}`}},
	{readinessCase: readinessCase{name: "a ClusterIP Service is ready", want: ready, yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: kube-ready}
spec: {ports: [{port: 80}]}`}},
	{readinessCase: readinessCase{name: "a LoadBalancer Service is ready once the API server gave it a cluster IP", want: ready, yaml: `
apiVersion: v1
kind: Service
metadata: {name: web-public, namespace: kube-ready}
spec: {type: LoadBalancer, ports: [{port: 80}]}`}},
	{readinessCase: readinessCase{name: "a ConfigMap is ready once it exists", want: ready, yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: kube-ready}
data: {level: "1"}`}},
	{readinessCase: readinessCase{name: "a custom resource without a status is ready once it exists", want: ready, yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: plain, namespace: kube-ready}
spec: {size: 1}`}},
	{readinessCase: readinessCase{name: "a custom resource that is Ready is ready", want: ready, yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: ready, namespace: kube-ready}
spec: {size: 1}`}, status: `
observedGeneration: 1
conditions:
- {type: Ready, status: "True", reason: Available}`},
	{readinessCase: readinessCase{name: "a custom resource that is not Ready yet is in progress", want: inProgress,
		wantErr: "kube: Widget kube-ready/provisioning is not ready: Provisioning: waiting for the volume", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: provisioning, namespace: kube-ready}
spec: {size: 1}`}, status: `
observedGeneration: 1
conditions:
- {type: Ready, status: "False", reason: Provisioning, message: waiting for the volume}`},
	{readinessCase: readinessCase{name: "a custom resource that is Reconciling is in progress", want: inProgress,
		wantErr: "kube: Widget kube-ready/upgrading is not ready: Upgrading: rolling out 1.2.0", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: upgrading, namespace: kube-ready}
spec: {size: 1}`}, status: `
observedGeneration: 1
conditions:
- {type: Reconciling, status: "True", reason: Upgrading, message: rolling out 1.2.0}
- {type: Stalled, status: "False", reason: Upgrading}`},
	{readinessCase: readinessCase{name: "a custom resource that is Stalled failed", want: failed,
		wantErr: "kube: Widget kube-ready/stalled failed: InvalidSpec: size must be positive", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: stalled, namespace: kube-ready}
spec: {size: -1}`}, status: `
observedGeneration: 1
conditions:
- {type: Reconciling, status: "False", reason: InvalidSpec}
- {type: Stalled, status: "True", reason: InvalidSpec, message: size must be positive}`},
	{readinessCase: readinessCase{name: "a custom resource whose spec changed since it was Ready is in progress", want: inProgress,
		wantErr: "kube: Widget kube-ready/resized is not ready: LatestGenerationNotObserved: Widget generation is 2, but latest observed generation is 1", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: resized, namespace: kube-ready}
spec: {size: 1}`}, specPatch: `{"spec": {"size": 2}}`, status: `
observedGeneration: 1
conditions:
- {type: Ready, status: "True", reason: Available}`},
	{readinessCase: readinessCase{name: "a ConfigMap being deleted is not ready", want: inProgress,
		wantErr: "kube: ConfigMap kube-ready/leaving is being deleted: Resource scheduled for deletion", yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: leaving, namespace: kube-ready, finalizers: [example.com/keep]}`}},
}

// TestObjectReadinessOnTheAPIServer puts each object of liveCases in its
// state on the API server, as its controller would, and reads it back with
// Applier.Ready: the readiness the fake client's table establishes holds
// for the objects the API server stores, defaults and validates.
func TestObjectReadinessOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	namespace(t, c, "kube-ready")
	widgetCRD(t, c)
	restMapper := mapper(t)
	a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: restMapper, FieldManager: "kube-test"})
	require.NoError(t, err)
	for _, tt := range liveCases {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromYAML(t, tt.yaml)
			mapping, err := restMapper.RESTMapping(obj.GroupVersionKind().GroupKind(), obj.GroupVersionKind().Version)
			require.NoError(t, err)
			ri := c.dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace())
			created, err := ri.Create(ctx, obj, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() {
				background := metav1.DeletePropagationBackground
				err := ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &background})
				if !apierrors.IsNotFound(err) {
					require.NoError(t, err)
				}
			})
			if tt.status != "" {
				var status map[string]any
				require.NoError(t, yaml.Unmarshal([]byte(tt.status), &status))
				created.Object["status"] = status
				_, err := ri.UpdateStatus(ctx, created, metav1.UpdateOptions{})
				require.NoError(t, err)
			}
			if tt.specPatch != "" {
				_, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, []byte(tt.specPatch), metav1.PatchOptions{})
				require.NoError(t, err)
			}
			if len(obj.GetFinalizers()) > 0 {
				require.NoError(t, ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}))
				t.Cleanup(func() { // the deletion completes once the finalizer is gone
					_, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, []byte(`{"metadata": {"finalizers": null}}`), metav1.PatchOptions{})
					require.NoError(t, err)
				})
			}
			err = a.Ready(ctx, manifestOf(obj))
			requireReadiness(t, tt.readinessCase, err)
		})
	}
}

// crdRuns counts the runs of TestCRDReadinessOnTheAPIServer, whose CRDs
// have a group of their own in each run (-count), since the API server
// removes a deleted CRD only once it has cleaned up after it.
var crdRuns int

// A CustomResourceDefinition is judged on the conditions the API server
// itself writes: established when its names are accepted, failed when its
// kind is another's.
func TestCRDReadinessOnTheAPIServer(t *testing.T) {
	ctx := context.Background()
	crdRuns++
	group := fmt.Sprintf("ready%d.example.com", crdRuns)
	c := connect(t)
	a, err := NewApplier(ApplierConfig{Client: c.dynamic, Mapper: mapper(t), FieldManager: "kube-test"})
	require.NoError(t, err)
	crd := func(plural string) *unstructured.Unstructured {
		return fromYAML(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: `+plural+`.`+group+`}
spec:
  group: `+group+`
  scope: Namespaced
  names: {plural: `+plural+`, kind: Lamp}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]`)
	}
	tests := []readinessCase{
		{name: "the first CRD of kind Lamp is established", want: ready},
		{name: "a second CRD of kind Lamp failed", want: failed,
			wantErr: "kube: CustomResourceDefinition lanterns." + group + ` failed: ListKindConflict: "LampList" is already in use`},
	}
	for i, plural := range []string{"lamps", "lanterns"} {
		tt := tests[i]
		obj := crd(plural)
		// Deleted once both subtests are done: the second conflicts with the first.
		t.Cleanup(func() {
			require.NoError(t, c.dynamic.Resource(crds).Delete(ctx, obj.GetName(), metav1.DeleteOptions{}))
		})
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.dynamic.Resource(crds).Create(ctx, obj, metav1.CreateOptions{})
			require.NoError(t, err)
			// The API server's controllers accept the names and establish
			// the CRD in a moment; until then it is installing.
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				err = a.Ready(ctx, manifestOf(obj))
				return err == nil || !isInstalling(err), nil
			})
			require.NoError(t, err, "the CRD stays installing: %v", a.Ready(ctx, manifestOf(obj)))
			requireReadiness(t, tt, a.Ready(ctx, manifestOf(obj)))
		})
	}
}

// isInstalling reports whether err says a CRD is still being installed.
func isInstalling(err error) bool {
	var re *readinessError
	return errors.As(err, &re) && !re.failed && re.reason() == "Installing"
}
