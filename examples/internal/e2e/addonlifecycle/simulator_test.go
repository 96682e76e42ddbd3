package addonlifecycle

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/kube"
)

func TestRolledOut(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		replicas  *int32
		available int32
	}{
		{name: "runs", image: images["v1"], replicas: ptr.To[int32](3), available: 3},
		{name: "default replicas", image: images["v1"], available: 1},
		{name: "broken image never available", image: images["v3"], replicas: ptr.To[int32](2), available: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := (&meshDriver{}).deployment(addonRef{"ns", "mesh"}, addon.Request{To: "v"}, tt.image)
			dep.Spec.Replicas = tt.replicas
			dep.Generation = 4
			got := rolledOut(dep)
			want := ptr.Deref(tt.replicas, 1)
			assert.Equal(t, []int32{want, want, tt.available, tt.available},
				[]int32{got.Replicas, got.UpdatedReplicas, got.ReadyReplicas, got.AvailableReplicas})
			assert.Equal(t, int64(4), got.ObservedGeneration)
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&appsv1.Deployment{
				TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: dep.ObjectMeta, Spec: dep.Spec, Status: got,
			})
			require.NoError(t, err)
			ready := kube.ObjectReady(&unstructured.Unstructured{Object: u})
			if tt.available == want {
				assert.NoError(t, ready, "kstatus calls a rolled-out Deployment Current")
			} else {
				assert.ErrorIs(t, ready, kube.ErrNotReady, "a Deployment without available replicas is in progress")
			}
		})
	}
}
