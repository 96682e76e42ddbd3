package kube_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/rollout"
)

// A rollout adopted with kube: the status in a ConfigMap, installer and
// operand pods and nodes from informers, events through events/v1.
func ExampleRolloutPods() {
	ctx := context.Background()
	client := k8sfake.NewClientset()
	fake.EnforceResourceVersions(client) // the fake clientset keeps no resource versions of its own
	for _, name := range []string{"master-0", "master-1", "master-2"} {
		_, _ = client.CoreV1().Nodes().Create(ctx, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}, metav1.CreateOptions{})
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	pods.Informer()
	nodes.Informer()
	stop := make(chan struct{})
	defer factory.Shutdown()
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	status, _ := kube.NewConfigMapStatusStore[rollout.Status](client.CoreV1(), "etcd", "etcd-rollout", "")
	hosts, _ := kube.NewRolloutPods(kube.RolloutPodsConfig{
		Client: client, Pods: pods.Lister(), Nodes: nodes.Lister(), Namespace: "etcd", Operand: "etcd",
		InstallerPod: func(inst rollout.Installer) *corev1.Pod {
			return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "installer", Image: "installer:v1"}}}}
		},
	})
	ctrl, err := rollout.NewController(rollout.Config{
		Status: status, Installers: hosts, Operands: hosts, Nodes: hosts,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, _ = status.UpdateStatus(ctx, rollout.Status{LatestAvailableRevision: 1}, "")

	res, err := ctrl.Sync(ctx)
	fmt.Println("sync error:", err)
	recorder := events.NewFakeRecorder(10)
	kube.RecordEvents(recorder, nil, "Rollout", res.Events)
	for len(recorder.Events) > 0 {
		fmt.Println("event:", <-recorder.Events)
	}
	installers, _ := client.CoreV1().Pods("etcd").List(ctx, metav1.ListOptions{})
	for _, p := range installers.Items {
		fmt.Println("installer:", p.Name, "on", p.Spec.NodeName)
	}
	// Output:
	// sync error: <nil>
	// event: Normal NodeTargetRevisionChanged Updating node "master-0" from revision 0 to 1 because starting revision 1
	// installer: installer-1-master-0 on master-0
}
