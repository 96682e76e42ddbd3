package main

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/converge-dev/converge/payload"
)

const (
	// statusConfigMap is the ConfigMap that keeps the worker's status.
	statusConfigMap = "payload-apply-status"
	// statusKey is the key of the status, as JSON, in the ConfigMap's data.
	statusKey = "status.json"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// statusStore keeps the worker's status in the ConfigMap payload-apply-status, so that
// a restarted instance, or the next leader, continues from where the last one stopped:
// it reconciles a payload that was applied, initializes one whose first apply did not
// finish, and updates to a new release.
type statusStore struct {
	client       dynamic.ResourceInterface
	fieldManager string
}

func newStatusStore(client dynamic.Interface, namespace, fieldManager string) *statusStore {
	return &statusStore{client: client.Resource(configMaps).Namespace(namespace), fieldManager: fieldManager}
}

// load returns the persisted status, the zero status when there is none.
func (s *statusStore) load(ctx context.Context) (payload.Status, error) {
	var status payload.Status
	cm, err := s.client.Get(ctx, statusConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return status, nil
	}
	if err != nil {
		return status, fmt.Errorf("reading the status: %w", err)
	}
	data, _, _ := unstructured.NestedString(cm.Object, "data", statusKey)
	if data == "" {
		return status, nil
	}
	if err := json.Unmarshal([]byte(data), &status); err != nil {
		return status, fmt.Errorf("reading the status of ConfigMap %s/%s: %w", cm.GetNamespace(), statusConfigMap, err)
	}
	return status, nil
}

// save applies status to the ConfigMap; saving an unchanged status writes nothing.
func (s *statusStore) save(ctx context.Context, status payload.Status) error {
	data, err := json.Marshal(status)
	if err != nil {
		return err
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": statusConfigMap},
		"data":       map[string]any{statusKey: string(data)},
	}}
	if _, err := s.client.Apply(ctx, statusConfigMap, cm, metav1.ApplyOptions{FieldManager: s.fieldManager, Force: true}); err != nil {
		return fmt.Errorf("saving the status: %w", err)
	}
	return nil
}
