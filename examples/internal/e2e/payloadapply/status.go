package payloadapply

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/converge-dev/converge/kube"
)

// StatusConfigMap is the ConfigMap that keeps the worker's status.
const StatusConfigMap = "payload-apply-status"

// ConfigMap is the kube.ConfigMapClient of the status ConfigMap that writes with a
// field manager of its own, so that the ConfigMap tells which instance wrote it
// (kube.NewConfigMapStatusStore's client writes as its user agent).
type ConfigMap struct {
	Client       kubernetes.Interface
	Namespace    string
	FieldManager string
}

var _ kube.ConfigMapClient = ConfigMap{}

// Get reads the ConfigMap.
func (c ConfigMap) Get(ctx context.Context) (*corev1.ConfigMap, error) {
	return c.Client.CoreV1().ConfigMaps(c.Namespace).Get(ctx, StatusConfigMap, metav1.GetOptions{})
}

// Create creates cm.
func (c ConfigMap) Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return c.Client.CoreV1().ConfigMaps(c.Namespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: c.FieldManager})
}

// Update writes cm at its resource version.
func (c ConfigMap) Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return c.Client.CoreV1().ConfigMaps(c.Namespace).Update(ctx, cm, metav1.UpdateOptions{FieldManager: c.FieldManager})
}
