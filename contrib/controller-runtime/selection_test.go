package crconverge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/contrib/controller-runtime/internal/testapi"
)

// TestRolloutControllerActsOnlyOnWhatItOwns: the controller of the
// namespaces "team-a" and "team-b" and the label team=core acts on the
// objects of those namespaces with the label only: no other is reconciled,
// written, told about or mapped to from a node or a pod, whatever a cache
// serves it.
func TestRolloutControllerActsOnlyOnWhatItOwns(t *testing.T) {
	ctx := context.Background()
	labelled := func(ro *testapi.TenantRollout) *testapi.TenantRollout {
		ro.Labels = map[string]string{"team": "core"}
		return ro
	}
	owned := labelled(tenantRollout("team-a", "kv", "kv", 1))
	otherNamespace := labelled(tenantRollout("team-c", "kv", "kv", 1))
	unlabelled := tenantRollout("team-b", "kv", "kv", 1)
	opts := tenantOptions()
	opts.Namespaces, opts.Selector = []string{"team-a", "team-b"}, labels.SelectorFromSet(labels.Set{"team": "core"})
	node := readyNode("n", corev1.ConditionTrue, nil)

	t.Run("its watches pass only what it owns", func(t *testing.T) {
		mgr, _ := testManager(t, newTestClient(t, node, owned, otherNamespace, unlabelled), nil)
		_, b, err := newRolloutReconciler(mgr, opts)
		require.NoError(t, err)
		mine := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(owned)}}
		for _, p := range b.forPredicates {
			assert.True(t, p.Create(event.CreateEvent{Object: owned}), "its own object")
			assert.False(t, p.Create(event.CreateEvent{Object: otherNamespace}), "an object in another namespace")
			assert.False(t, p.Create(event.CreateEvent{Object: unlabelled}), "an object without the label")
		}
		assert.Equal(t, mine, enqueued(t, watchOf(t, b, node), node), "a node maps to the owned rollouts only")
		for _, ns := range []string{"team-b", "team-c"} {
			pod := &corev1.Pod{}
			pod.Namespace, pod.Name = ns, "kv-n"
			assert.Empty(t, enqueued(t, watchOf(t, b, pod), pod), "a pod of a rollout not owned, in %s, maps to none", ns)
		}
	})
	for _, obj := range []*testapi.TenantRollout{otherNamespace, unlabelled} {
		t.Run("a reconcile of an object it does not own does nothing: "+client.ObjectKeyFromObject(obj).String(), func(t *testing.T) {
			c := newTestClient(t, node, obj)
			mgr, events := testManager(t, c, nil)
			ctrl, err := NewRolloutController(mgr, opts)
			require.NoError(t, err)
			res, err := ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			require.NoError(t, err)
			assert.Zero(t, res)
			got := &testapi.TenantRollout{}
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), got))
			assert.Equal(t, obj.ResourceVersion, got.ResourceVersion, "no status write")
			var pods corev1.PodList
			require.NoError(t, c.List(ctx, &pods))
			assert.Empty(t, pods.Items, "no installer")
			assert.Empty(t, events.recorded(), "no event")
		})
	}
	t.Run("a reconcile of an object it owns rolls it out", func(t *testing.T) {
		c := newTestClient(t, node, owned)
		mgr, _ := testManager(t, c, nil)
		ctrl, err := NewRolloutController(mgr, opts)
		require.NoError(t, err)
		_, err = ctrl.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(owned)})
		require.NoError(t, err)
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "installer-1-n"}, &corev1.Pod{}))
	})
}

func TestSelectionOfAnEmptySelectorOwnsEverything(t *testing.T) {
	s, problems := checkSelection(nil, nil, nil, labels.NewSelector())
	assert.Empty(t, problems)
	assert.True(t, s.owns(tenantRollout("team-a", "kv", "kv", 1)))
}
