package kube

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/converge-dev/converge/internal/input"
)

var configMapsResource = schema.GroupResource{Resource: "configmaps"}

// ConfigMapClient reads, creates and updates one ConfigMap: client-go's
// typed client through NewConfigMapStatusStore, or any other client (the
// controller-runtime module adapts its client.Client) through
// NewConfigMapStatusStoreFor. Get returns the API server's NotFound when the
// ConfigMap does not exist; Create and Update return its AlreadyExists and
// Conflict errors unchanged.
type ConfigMapClient interface {
	// Get reads the ConfigMap.
	Get(ctx context.Context) (*corev1.ConfigMap, error)
	// Create creates cm.
	Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
	// Update writes cm with the optimistic concurrency of its resource
	// version.
	Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
}

// ConfigMapStatusStore keeps an engine's status of type T as JSON under one
// key of a ConfigMap, with optimistic concurrency: the status of a host that
// has no custom resource of its own (a rollout driven by a ClusterOperator,
// a payload worker).
//
// GetStatus returns the zero T and resource version "" when the ConfigMap
// does not exist; UpdateStatus with resource version "" creates it (a
// ConfigMap created meanwhile is a 409), and otherwise updates it if it is
// still at that version, returning the API server's 409 unchanged when it is
// not. Other keys, labels and annotations of the ConfigMap are kept.
//
// RBAC: get, create and update on configmaps in the namespace.
type ConfigMapStatusStore[T any] struct {
	client    ConfigMapClient
	namespace string
	name      string
	key       string
}

// NewConfigMapStatusStore returns a store for ConfigMap namespace/name with
// the status under key (default "status.json").
func NewConfigMapStatusStore[T any](client corev1client.ConfigMapsGetter, namespace, name, key string) (*ConfigMapStatusStore[T], error) {
	if input.IsNil(client) {
		return nil, input.Invalidf("kube", "NewConfigMapStatusStore arguments", "nil client")
	}
	if namespace == "" || name == "" {
		return nil, input.Invalidf("kube", "NewConfigMapStatusStore arguments", "empty namespace or name")
	}
	return NewConfigMapStatusStoreFor[T](typedConfigMap{client: client.ConfigMaps(namespace), name: name}, namespace, name, key)
}

// NewConfigMapStatusStoreFor returns a store on any ConfigMapClient of the
// ConfigMap namespace/name, with the status under key (default
// "status.json").
func NewConfigMapStatusStoreFor[T any](client ConfigMapClient, namespace, name, key string) (*ConfigMapStatusStore[T], error) {
	if input.IsNil(client) {
		return nil, input.Invalidf("kube", "NewConfigMapStatusStoreFor arguments", "nil ConfigMap client")
	}
	if namespace == "" || name == "" {
		return nil, input.Invalidf("kube", "NewConfigMapStatusStoreFor arguments", "empty namespace or name")
	}
	if key == "" {
		key = "status.json"
	}
	return &ConfigMapStatusStore[T]{client: client, namespace: namespace, name: name, key: key}, nil
}

// typedConfigMap is the ConfigMapClient of one ConfigMap on client-go's
// typed client.
type typedConfigMap struct {
	client corev1client.ConfigMapInterface
	name   string
}

var _ ConfigMapClient = typedConfigMap{}

func (c typedConfigMap) Get(ctx context.Context) (*corev1.ConfigMap, error) {
	return c.client.Get(ctx, c.name, metav1.GetOptions{})
}

func (c typedConfigMap) Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return c.client.Create(ctx, cm, metav1.CreateOptions{})
}

func (c typedConfigMap) Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	return c.client.Update(ctx, cm, metav1.UpdateOptions{})
}

// GetStatus reads the ConfigMap and decodes the status under the key.
func (s *ConfigMapStatusStore[T]) GetStatus(ctx context.Context) (T, string, error) {
	var st T
	cm, err := s.client.Get(ctx)
	if apierrors.IsNotFound(err) {
		return st, "", nil
	}
	if err != nil {
		return st, "", err
	}
	if data := cm.Data[s.key]; data != "" {
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			return st, "", fmt.Errorf("kube: decoding the status in ConfigMap %s/%s key %q: %w", s.namespace, s.name, s.key, err)
		}
	}
	return st, cm.ResourceVersion, nil
}

// UpdateStatus writes st under the key if the ConfigMap is still at
// resourceVersion ("" = does not exist yet), and returns the new version.
func (s *ConfigMapStatusStore[T]) UpdateStatus(ctx context.Context, st T, resourceVersion string) (string, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("kube: encoding the status for ConfigMap %s/%s: %w", s.namespace, s.name, err)
	}
	if resourceVersion == "" {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name}, Data: map[string]string{s.key: string(data)}}
		out, err := s.client.Create(ctx, cm)
		if apierrors.IsAlreadyExists(err) {
			return "", apierrors.NewConflict(configMapsResource, s.name, err)
		}
		if err != nil {
			return "", err
		}
		return out.ResourceVersion, nil
	}
	cm, err := s.client.Get(ctx)
	if apierrors.IsNotFound(err) {
		return "", apierrors.NewConflict(configMapsResource, s.name, err)
	}
	if err != nil {
		return "", err
	}
	if cm.ResourceVersion != resourceVersion {
		return "", apierrors.NewConflict(configMapsResource, s.name, fmt.Errorf("the ConfigMap is at resource version %q, not %q", cm.ResourceVersion, resourceVersion))
	}
	if cm.Data[s.key] == string(data) {
		return resourceVersion, nil
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[s.key] = string(data)
	out, err := s.client.Update(ctx, cm)
	if err != nil {
		return "", err
	}
	return out.ResourceVersion, nil
}
