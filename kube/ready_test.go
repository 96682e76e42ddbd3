package kube

import (
	"context"
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// readiness is what ObjectReady says of an object.
type readiness int

const (
	ready readiness = iota
	inProgress
	failed
)

// readinessCase is an object as its controller writes it in one state, and
// what ObjectReady must say of it, word for word.
type readinessCase struct {
	name    string
	yaml    string
	want    readiness
	wantErr string
}

// fromYAML decodes an object of a readiness case as the dynamic client
// decodes what the API server sends (integers are int64).
func fromYAML(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j))
	return u
}

// readinessCases hold each built-in kind kube or kstatus has a rule for, and
// custom resources with the standard conditions, in each state they can be
// in.
var readinessCases = []readinessCase{
	{name: "a rolled out Deployment is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`},
	{name: "a Deployment whose new replicas are not all available is in progress", want: inProgress,
		wantErr: "kube: Deployment shop/web is not ready: LessAvailable: Available: 1/3", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 1
  availableReplicas: 1
  conditions:
  - {type: Available, status: "False", reason: MinimumReplicasUnavailable}
  - {type: Progressing, status: "True", reason: ReplicaSetUpdated}
`},
	{name: "a Deployment with an old replica left is in progress", want: inProgress,
		wantErr: "kube: Deployment shop/web is not ready: ExtraPods: Pending termination: 1", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status: {observedGeneration: 2, replicas: 4, updatedReplicas: 3, readyReplicas: 4, availableReplicas: 4}
`},
	{name: "a Deployment past its progress deadline failed", want: failed,
		wantErr: "kube: Deployment shop/web failed: ProgressDeadlineExceeded: Progress deadline exceeded", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 2}
spec: {replicas: 3, progressDeadlineSeconds: 600}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 1
  conditions:
  - {type: Progressing, status: "False", reason: ProgressDeadlineExceeded, message: ReplicaSet "web-7d9" has timed out progressing.}
`},
	{name: "a Deployment whose generation is not observed yet is in progress", want: inProgress,
		wantErr: "kube: Deployment shop/web is not ready: LatestGenerationNotObserved: Deployment generation is 3, but latest observed generation is 2", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 3}
spec: {replicas: 3}
status:
  observedGeneration: 2
  replicas: 3
  updatedReplicas: 3
  readyReplicas: 3
  availableReplicas: 3
  conditions:
  - {type: Available, status: "True", reason: MinimumReplicasAvailable}
  - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
`},
	{name: "a Deployment no controller has written a status for is in progress", want: inProgress,
		wantErr: "kube: Deployment shop/web is not ready: LatestGenerationNotObserved: Deployment status.observedGeneration not written yet", yaml: `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, generation: 1}
spec: {replicas: 0}
`},
	{name: "a rolled out DaemonSet is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, numberReady: 3}
`},
	{name: "a DaemonSet with a pod not yet available is in progress", want: inProgress,
		wantErr: "kube: DaemonSet shop/agent is not ready: LessAvailable: Available: 2/3", yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop, generation: 1}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 2, numberReady: 2}
`},
	{name: "a DaemonSet whose generation is not observed yet is in progress", want: inProgress,
		wantErr: "kube: DaemonSet shop/agent is not ready: LatestGenerationNotObserved: DaemonSet generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: shop, generation: 2}
status: {observedGeneration: 1, desiredNumberScheduled: 3, currentNumberScheduled: 3, updatedNumberScheduled: 3, numberAvailable: 3, numberReady: 3}
`},
	{name: "a rolled out StatefulSet is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: db-2, updateRevision: db-2}
`},
	{name: "a StatefulSet in the middle of a revision is in progress", want: inProgress,
		wantErr: "kube: StatefulSet shop/db is not ready: RevisionMismatch: Waiting for updated revision to match current", yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 2, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: db-1, updateRevision: db-2}
`},
	{name: "a StatefulSet whose generation is not observed yet is in progress", want: inProgress,
		wantErr: "kube: StatefulSet shop/db is not ready: LatestGenerationNotObserved: StatefulSet generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 2, currentRevision: db-1, updateRevision: db-1}
`},
	{name: "a StatefulSet its user updates OnDelete is ready once its generation is observed", want: ready, yaml: `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: shop, generation: 2}
spec: {replicas: 2, updateStrategy: {type: OnDelete}}
status: {observedGeneration: 2, replicas: 2, readyReplicas: 2, currentReplicas: 2, updatedReplicas: 0, currentRevision: db-1, updateRevision: db-2}
`},
	{name: "a ReplicaSet with every replica available is ready", want: ready, yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: shop, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2}
`},
	{name: "a ReplicaSet with a replica not yet available is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet shop/web-7d9 is not ready: LessAvailable: Available: 1/2", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: shop, generation: 1}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 1, availableReplicas: 1}
`},
	{name: "a ReplicaSet that cannot create its pods is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet shop/web-7d9 is not ready: ReplicaFailure: Replica Failure condition. Check Pods", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: shop, generation: 1}
spec: {replicas: 2}
status:
  observedGeneration: 1
  replicas: 0
  conditions:
  - {type: ReplicaFailure, status: "True", reason: FailedCreate, message: exceeded quota}
`},
	{name: "a ReplicaSet no controller has written a status for is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet shop/web-7d9 is not ready: LatestGenerationNotObserved: ReplicaSet status.observedGeneration not written yet", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: shop, generation: 1}
spec: {replicas: 0}
`},
	{name: "a ReplicaSet whose generation is not observed yet is in progress", want: inProgress,
		wantErr: "kube: ReplicaSet shop/web-7d9 is not ready: LatestGenerationNotObserved: ReplicaSet generation is 2, but latest observed generation is 1", yaml: `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-7d9, namespace: shop, generation: 2}
spec: {replicas: 2}
status: {observedGeneration: 1, replicas: 2, fullyLabeledReplicas: 2, readyReplicas: 2, availableReplicas: 2}
`},
	{name: "a completed Job is ready", want: ready, yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
status:
  startTime: "2026-01-01T00:00:00Z"
  succeeded: 1
  conditions:
  - {type: SuccessCriteriaMet, status: "True"}
  - {type: Complete, status: "True"}
`},
	{name: "a running Job is in progress, where kstatus calls it Current", want: inProgress,
		wantErr: "kube: Job shop/migrate is not ready: JobNotComplete: has not completed: 1 active, 0 succeeded, 1 failed", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
status: {startTime: "2026-01-01T00:00:00Z", active: 1, failed: 1}
`},
	{name: "a Job that has not started is in progress", want: inProgress,
		wantErr: "kube: Job shop/migrate is not ready: JobNotComplete: has not completed: 0 active, 0 succeeded, 0 failed", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
`},
	{name: "a failed Job failed, with its condition's reason and message", want: failed,
		wantErr: "kube: Job shop/migrate failed: BackoffLimitExceeded: Job has reached the specified backoff limit", yaml: `
apiVersion: batch/v1
kind: Job
metadata: {name: migrate, namespace: shop, generation: 1}
status:
  startTime: "2026-01-01T00:00:00Z"
  failed: 7
  conditions:
  - {type: FailureTarget, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
  - {type: Failed, status: "True", reason: BackoffLimitExceeded, message: Job has reached the specified backoff limit}
`},
	{name: "an established CRD is ready", want: ready, yaml: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, generation: 1}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "True", reason: InitialNamesAccepted}
`},
	{name: "a CRD being installed is in progress", want: inProgress,
		wantErr: "kube: CustomResourceDefinition widgets.example.com is not ready: Installing: Install in progress", yaml: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com, generation: 1}
status:
  conditions:
  - {type: NamesAccepted, status: "True", reason: NoConflicts}
  - {type: Established, status: "False", reason: Installing}
`},
	{name: "a CRD whose names conflict failed", want: failed,
		wantErr: `kube: CustomResourceDefinition gadgets.example.com failed: KindConflict: "Widget" is already in use`, yaml: `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com, generation: 1}
status:
  conditions:
  - {type: NamesAccepted, status: "False", reason: KindConflict, message: '"Widget" is already in use'}
  - {type: Established, status: "False", reason: NotAccepted}
`},
	{name: "a running Pod that is Ready is ready", want: ready, yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "True"}
`},
	{name: "a running Pod that is not Ready yet is in progress", want: inProgress,
		wantErr: "kube: Pod shop/shell is not ready: PodRunningNotReady: Pod is running but is not Ready", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop}
status:
  phase: Running
  conditions:
  - {type: Ready, status: "False", reason: ContainersNotReady}
`},
	{name: "a crash-looping Pod failed", want: failed,
		wantErr: "kube: Pod shop/shell failed: ContainerCrashLooping: Containers in CrashLoop state: shell", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop}
status:
  phase: Running
  containerStatuses:
  - {name: shell, state: {waiting: {reason: CrashLoopBackOff}}}
`},
	{name: "a Pod that succeeded is ready", want: ready, yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop}
status: {phase: Succeeded}
`},
	{name: "a Pod that failed failed, where kstatus calls it Current", want: failed,
		wantErr: "kube: Pod shop/shell failed: Evicted: The node was low on resource: memory.", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop}
status: {phase: Failed, reason: Evicted, message: "The node was low on resource: memory."}
`},
	{name: "an unschedulable Pod is in progress however old, where kstatus fails it after 15s", want: inProgress,
		wantErr: "kube: Pod shop/shell is not ready: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu.", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop, creationTimestamp: "2020-01-01T00:00:00Z"}
status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, message: "0/3 nodes are available: 3 Insufficient cpu."}
`},
	{name: "a Pod in an unknown phase is in progress, saying its status cannot be read", want: inProgress,
		wantErr: "kube: Pod shop/shell is not ready: StatusUnreadable: its status cannot be read: unknown phase Hibernating", yaml: `
apiVersion: v1
kind: Pod
metadata: {name: shell, namespace: shop}
status: {phase: Hibernating}
`},
	{name: "a bound PersistentVolumeClaim is ready", want: ready, yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Bound}
`},
	{name: "a PersistentVolumeClaim no volume is bound to is in progress", want: inProgress,
		wantErr: "kube: PersistentVolumeClaim shop/data is not ready: NotBound: PVC is not Bound. phase: Pending", yaml: `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: shop}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
status: {phase: Pending}
`},
	{name: "a PodDisruptionBudget whose generation is observed is ready", want: ready, yaml: `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop, generation: 1}
spec: {minAvailable: 1}
status: {observedGeneration: 1, disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 0}
`},
	{name: "a PodDisruptionBudget whose generation is not observed yet is in progress", want: inProgress,
		wantErr: "kube: PodDisruptionBudget shop/web is not ready: LatestGenerationNotObserved: PodDisruptionBudget generation is 2, but latest observed generation is 1", yaml: `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: shop, generation: 2}
spec: {minAvailable: 2}
status: {observedGeneration: 1, disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 1, expectedPods: 0}
`},
	{name: "a CronJob is ready once it exists", want: ready, yaml: `
apiVersion: batch/v1
kind: CronJob
metadata: {name: backup, namespace: shop, generation: 1}
spec: {schedule: "0 * * * *"}
`},
	{name: "a Secret is ready once it exists", want: ready, yaml: `
apiVersion: v1
kind: Secret
metadata: {name: credentials, namespace: shop}
stringData: {password: hunter2}
`},
	{name: "a ClusterIP Service is ready", want: ready, yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: ClusterIP, clusterIP: 10.0.0.7}
`},
	{name: "a LoadBalancer Service without a cluster IP is in progress", want: inProgress,
		wantErr: "kube: Service shop/web is not ready: NoIPAssigned: ClusterIP not set. Service type: LoadBalancer", yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {type: LoadBalancer}
`},
	{name: "a ConfigMap is ready once it exists", want: ready, yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop}
data: {level: "1"}
`},
	{name: "a ConfigMap being deleted is not ready", want: inProgress,
		wantErr: "kube: ConfigMap shop/settings is being deleted: Resource scheduled for deletion", yaml: `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: shop, deletionTimestamp: "2026-01-01T00:00:00Z", finalizers: [example.com/keep]}
`},
	{name: "a custom resource that is Ready is ready", want: ready, yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop, generation: 4}
status:
  observedGeneration: 4
  conditions:
  - {type: Ready, status: "True", reason: Available}
`},
	{name: "a custom resource that is not Ready yet is in progress", want: inProgress,
		wantErr: "kube: Widget shop/blue is not ready: Provisioning: waiting for the volume", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop, generation: 4}
status:
  observedGeneration: 4
  conditions:
  - {type: Ready, status: "False", reason: Provisioning, message: waiting for the volume}
`},
	{name: "a custom resource whose readiness is Unknown is in progress", want: inProgress,
		wantErr: "kube: Widget shop/blue is not ready: Checking: health check pending", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop}
status:
  conditions:
  - {type: Ready, status: Unknown, reason: Checking, message: health check pending}
`},
	{name: "a custom resource that was Ready for its previous generation is in progress", want: inProgress,
		wantErr: "kube: Widget shop/blue is not ready: LatestGenerationNotObserved: Widget generation is 5, but latest observed generation is 4", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop, generation: 5}
status:
  observedGeneration: 4
  conditions:
  - {type: Ready, status: "True", reason: Available}
`},
	{name: "a custom resource that is Reconciling is in progress", want: inProgress,
		wantErr: "kube: Widget shop/blue is not ready: Upgrading: rolling out 1.2.0", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop, generation: 4}
status:
  observedGeneration: 4
  conditions:
  - {type: Reconciling, status: "True", reason: Upgrading, message: rolling out 1.2.0}
  - {type: Stalled, status: "False"}
`},
	{name: "a custom resource that is Stalled failed", want: failed,
		wantErr: "kube: Widget shop/blue failed: InvalidSpec: size must be positive", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop, generation: 4}
status:
  observedGeneration: 4
  conditions:
  - {type: Reconciling, status: "False"}
  - {type: Stalled, status: "True", reason: InvalidSpec, message: size must be positive}
`},
	{name: "a custom resource without a status is ready once it exists", want: ready, yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop, generation: 1}
`},
	{name: "a custom resource whose conditions cannot be read is in progress, saying why", want: inProgress,
		wantErr: "kube: Widget shop/blue is not ready: StatusUnreadable: its status cannot be read: cannot restore slice from string", yaml: `
apiVersion: example.com/v1
kind: Widget
metadata: {name: blue, namespace: shop}
status: {conditions: ready}
`},
}

func TestObjectReady(t *testing.T) {
	for _, tt := range readinessCases {
		t.Run(tt.name, func(t *testing.T) {
			requireReadiness(t, tt, ObjectReady(fromYAML(t, tt.yaml)))
		})
	}
}

// requireReadiness checks err against what tt wants: nil when ready, and
// otherwise an error of exactly one class whose message is tt.wantErr.
func requireReadiness(t *testing.T, tt readinessCase, err error) {
	t.Helper()
	switch tt.want {
	case ready:
		require.NoError(t, err)
		return
	case inProgress:
		assert.ErrorIs(t, err, ErrNotReady)
		assert.NotErrorIs(t, err, ErrObjectFailed)
	case failed:
		assert.ErrorIs(t, err, ErrObjectFailed)
		assert.NotErrorIs(t, err, ErrNotReady)
	}
	require.Error(t, err)
	assert.Equal(t, tt.wantErr, err.Error())
}

// ObjectReady answers an object it cannot judge with converge.ErrInvalid, never a
// panic.
func TestObjectReadyRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
	}{
		{name: "nil object"},
		{name: "object without content", obj: &unstructured.Unstructured{}},
		{name: "object without a kind", obj: &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ObjectReady(tt.obj)
			assert.ErrorIs(t, err, converge.ErrInvalid)
			assert.NotErrorIs(t, err, ErrNotReady)
			assert.NotErrorIs(t, err, ErrObjectFailed)
		})
	}
}

// TestApplierReadyJudgesEveryKindOnTheFakeClient reads each object of
// readinessCases from the dynamic fake client: Applier.Ready says what
// ObjectReady says, and turns a failure into an *payload.UpdateError that
// stops payload's wait.
func TestApplierReadyJudgesEveryKindOnTheFakeClient(t *testing.T) {
	for _, tt := range readinessCases {
		t.Run(tt.name, func(t *testing.T) {
			obj := fromYAML(t, tt.yaml)
			a := applierOn(t, obj)
			err := a.Ready(context.Background(), manifestOf(obj))
			requireReadiness(t, tt, err)
			var ue *payload.UpdateError
			if tt.want != failed {
				assert.False(t, errors.As(err, &ue), "only a failure stops the wait: %v", err)
				return
			}
			require.True(t, errors.As(err, &ue), "%v", err)
			assert.Equal(t, payload.EffectFail, ue.Effect)
			assert.Equal(t, obj.GetKind()+"Failed", ue.Reason)
			assert.Equal(t, objectName(obj), ue.Name)
			assert.Equal(t, tt.wantErr, ue.Message)
		})
	}
}

// applierOn is an Applier on the dynamic fake client holding obj, whose
// kind its mapper knows.
func applierOn(t *testing.T, obj *unstructured.Unstructured) *Applier {
	t.Helper()
	gvk := obj.GroupVersionKind()
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{plural: gvk.Kind + "List"}, obj)
	mapper := meta.NewDefaultRESTMapper(nil)
	scope := meta.RESTScopeNamespace
	if obj.GetNamespace() == "" {
		scope = meta.RESTScopeRoot
	}
	mapper.Add(gvk, scope)
	a, err := NewApplier(ApplierConfig{Client: client, Mapper: mapper, FieldManager: "test"})
	require.NoError(t, err)
	return a
}

// Only kube imports kstatus: no other package of the module (the engines,
// fake, testenv, the examples) does, so the engines judge no readiness by
// themselves and link no cli-utils.
func TestOnlyKubeImportsKstatus(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	var checked int
	require.NoError(t, filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if dir != root {
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		pkg, err := build.ImportDir(dir, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		require.NoError(t, err)
		checked++
		if rel, _ := filepath.Rel(root, dir); rel == "kube" {
			return nil
		}
		for _, imp := range pkg.Imports {
			assert.False(t, strings.HasPrefix(imp, "github.com/fluxcd/cli-utils/") || strings.HasPrefix(imp, "sigs.k8s.io/cli-utils/"),
				"%s imports %s", dir, imp)
		}
		return nil
	}))
	assert.Greater(t, checked, 10, "the module's packages were found")
}
