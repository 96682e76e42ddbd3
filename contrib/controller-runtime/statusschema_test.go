package crconverge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge/kube"
)

// schemaWarnings returns the StatusSchemaMismatch events of log about key.
func schemaWarnings(log *eventLog, key client.ObjectKey) []recordedEvent {
	var out []recordedEvent
	for _, e := range log.recorded() {
		if e.Regarding == key && e.Reason == kube.ReasonStatusSchemaMismatch {
			out = append(out, e)
		}
	}
	return out
}

func TestConfiguredControllersReportAStatusTheSchemaCannotHold(t *testing.T) {
	key := client.ObjectKey{Name: "etcd"}
	t.Run("a field the schema drops is reported once, as an error and a Warning naming it", func(t *testing.T) {
		c := interceptStatus(newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), testRollout("etcd", 1)), func(obj client.Object) error {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				unstructured.RemoveNestedField(u.Object, "status", "heldSince")
				unstructured.RemoveNestedField(u.Object, "status", "conditions")
			}
			return nil
		})
		mgr, events := testManager(t, c, nil)
		_, err := reconcileRollout(t, mgr, key)
		var se *kube.StatusSchemaError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, []string{"status.conditions"}, se.Fields)
		warnings := schemaWarnings(events, key)
		require.Len(t, warnings, 1)
		assert.Equal(t, "Warning", warnings[0].Type)
		assert.Contains(t, warnings[0].Note, "status.conditions")
		assert.Contains(t, warnings[0].Note, "rollouts.test.converge.dev etcd")

		_, err = reconcileRollout(t, mgr, key)
		assert.NoError(t, err, "the rollout goes on with what the schema holds")
		assert.Len(t, schemaWarnings(events, key), 1, "reported once")
	})
	t.Run("a resource without a status subresource is named, not not-found", func(t *testing.T) {
		c := interceptStatus(newTestClient(t, readyNode("a", corev1.ConditionTrue, nil), testRollout("etcd", 1)), func(client.Object) error {
			return apierrors.NewNotFound(schema.GroupResource{Group: "testapi.converge.dev", Resource: "rollouts"}, "etcd")
		})
		mgr, events := testManager(t, c, nil)
		_, err := reconcileRollout(t, mgr, key)
		var se *kube.StatusSchemaError
		require.ErrorAs(t, err, &se)
		assert.True(t, se.NoSubresource)
		require.NotEmpty(t, schemaWarnings(events, key))
		assert.Contains(t, schemaWarnings(events, key)[0].Note, "has no status subresource")
	})
}
