package standin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/testenv/standin"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func deployment(name string, replicas *int32, image string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: 3, Labels: map[string]string{"app": name}},
		Spec: appsv1.DeploymentSpec{Replicas: replicas, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: image}}}}},
	}
}

func unstructuredOf(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: u}
}

func TestStatusesReadAsKstatusDoes(t *testing.T) {
	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "ns", Generation: 1}}
	tests := []struct {
		name    string
		obj     func() runtime.Object
		current bool
	}{
		{name: "a rolled-out Deployment is current", current: true, obj: func() runtime.Object {
			d := deployment("web", ptr.To[int32](3), "web:1")
			d.Status = standin.RolledOut(d)
			return d
		}},
		{name: "a Deployment without replicas set rolls out its one replica", current: true, obj: func() runtime.Object {
			d := deployment("web", nil, "web:1")
			d.Status = standin.RolledOut(d)
			return d
		}},
		{name: "a stuck Deployment is in progress", obj: func() runtime.Object {
			d := deployment("web", ptr.To[int32](2), "web:broken")
			d.Status = standin.Stuck(d)
			return d
		}},
		{name: "a completed Job is current", current: true, obj: func() runtime.Object {
			j := job.DeepCopy()
			j.Status = standin.Completed(j, t0)
			return j
		}},
		{name: "a failed Job is not current", obj: func() runtime.Object {
			j := job.DeepCopy()
			j.Status = standin.Failed(j, t0)
			return j
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := kube.ObjectReady(unstructuredOf(t, tt.obj()))
			if tt.current {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

func TestRolledOutCountsEveryReplicaOfTheGeneration(t *testing.T) {
	d := deployment("web", ptr.To[int32](3), "web:1")
	got := standin.RolledOut(d)
	assert.Equal(t, int64(3), got.ObservedGeneration)
	assert.Equal(t, []int32{3, 3, 3, 3}, []int32{got.Replicas, got.UpdatedReplicas, got.ReadyReplicas, got.AvailableReplicas})
	stuck := standin.Stuck(d)
	assert.Equal(t, []int32{3, 3, 0, 0, 3}, []int32{stuck.Replicas, stuck.UpdatedReplicas, stuck.ReadyReplicas, stuck.AvailableReplicas, stuck.UnavailableReplicas})
}

func TestDoneWritesTheStatusOfDeploymentsAndJobsOnly(t *testing.T) {
	d := unstructuredOf(t, deployment("web", ptr.To[int32](2), "web:1"))
	done, ok := standin.Done(d, t0)
	require.True(t, ok)
	assert.Empty(t, d.Object["status"], "the object given is not changed")
	replicas, _, _ := unstructured.NestedInt64(done.Object, "status", "availableReplicas")
	generation, _, _ := unstructured.NestedInt64(done.Object, "status", "observedGeneration")
	assert.Equal(t, []int64{2, 3}, []int64{replicas, generation})
	assert.NoError(t, kube.ObjectReady(done))

	job := &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}
	done, ok = standin.Done(unstructuredOf(t, job), t0)
	require.True(t, ok)
	completion, _, _ := unstructured.NestedString(done.Object, "status", "completionTime")
	assert.Equal(t, "2026-03-01T10:00:00Z", completion)

	fresh := unstructuredOf(t, deployment("web", nil, "web:1"))
	fresh.SetGeneration(0)
	done, ok = standin.Done(fresh, t0)
	require.True(t, ok)
	assert.NoError(t, kube.ObjectReady(done), "a fake client's Deployment, of generation 0, is rolled out too")

	cm := unstructuredOf(t, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c"}})
	same, ok := standin.Done(cm, t0)
	assert.False(t, ok, "a ConfigMap has no controller to play")
	assert.Same(t, cm, same)
}

func TestDeploymentsRollsOutWhatItsSelectorPicks(t *testing.T) {
	client := fake.NewClientset(deployment("web", ptr.To[int32](2), "web:1"), deployment("api", nil, "api:broken"),
		deployment("other", nil, "other:1"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- standin.Deployments{Client: client, Selector: "app in (web,api)",
			Stuck: func(d *appsv1.Deployment) bool { return d.Spec.Template.Spec.Containers[0].Image == "api:broken" }}.Run(ctx)
	}()
	get := func(name string) appsv1.DeploymentStatus {
		d, err := client.AppsV1().Deployments("ns").Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		return d.Status
	}
	assert.Eventually(t, func() bool { return get("web").AvailableReplicas == 2 && get("api").UnavailableReplicas == 1 },
		10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, appsv1.DeploymentStatus{}, get("other"), "a Deployment the selector does not pick is left alone")
}

func TestDeploymentsRefusesAMissingClient(t *testing.T) {
	err := standin.Deployments{}.Run(context.Background())
	assert.ErrorIs(t, err, converge.ErrInvalid)
	assert.EqualError(t, err, "standin: invalid Deployments: Client is required")
}

func TestRollOutAllWritesEveryDeploymentOfTheNamespaceOnce(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, appsv1.AddToScheme(scheme))
	web, other := deployment("web", ptr.To[int32](2), "web:1"), deployment("api", nil, "api:1")
	other.Namespace = "elsewhere"
	client := dynamicfake.NewSimpleDynamicClient(scheme, web, other)
	ctx := context.Background()
	require.NoError(t, standin.RollOutAll(ctx, client, "ns", t0))
	got, err := client.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace("ns").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NoError(t, kube.ObjectReady(got))
	untouched, err := client.Resource(appsv1.SchemeGroupVersion.WithResource("deployments")).Namespace("elsewhere").Get(ctx, "api", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, untouched.Object["status"], "a Deployment of another namespace is left alone")

	writes := len(client.Actions())
	require.NoError(t, standin.RollOutAll(ctx, client, "ns", t0))
	assert.Len(t, client.Actions(), writes+1, "a rolled-out Deployment is listed, not written again")
	assert.ErrorIs(t, standin.RollOutAll(ctx, nil, "ns", t0), converge.ErrInvalid)
}
