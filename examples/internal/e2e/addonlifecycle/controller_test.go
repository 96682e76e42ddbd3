package addonlifecycle

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
)

func TestNewControllerRefusesBadConfig(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonResource: "AddonList"})
	noop := func(context.Context, *unstructured.Unstructured) (addon.Result, error) { return addon.Result{}, nil }
	tests := []struct {
		name string
		cfg  controllerConfig
	}{
		{name: "no workers", cfg: controllerConfig{Dynamic: dyn, Reconcile: noop}},
		{name: "no client", cfg: controllerConfig{Reconcile: noop, Workers: 1}},
		{name: "no reconcile", cfg: controllerConfig{Dynamic: dyn, Workers: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newController(tt.cfg)
			assert.Error(t, err)
		})
	}
}

// TestProcessNextRequeuesByTheOutcome checks what the work queue does with
// each outcome of Reconcile.
func TestProcessNextRequeuesByTheOutcome(t *testing.T) {
	conflict := apierrors.NewConflict(AddonResource.GroupResource(), "mesh", nil)
	tests := []struct {
		name                string
		res                 addon.Result
		err                 error
		requeues            int           // rate-limited requeues of the key
		after               time.Duration // when the key is back, 0 for never
		conflicts, failures int64
	}{
		{name: "done", res: addon.Result{}},
		{name: "look again later", res: addon.Result{Result: converge.Result{RequeueAfter: time.Minute}}, after: time.Minute},
		{name: "apiserver conflict", err: conflict, requeues: 1, after: 5 * time.Millisecond, conflicts: 1},
		{name: "engine conflict", err: converge.ErrConflict, requeues: 1, after: 5 * time.Millisecond, conflicts: 1},
		{name: "gone meanwhile", err: apierrors.NewNotFound(AddonResource.GroupResource(), "mesh")},
		{name: "bad input waits for a change", err: converge.ErrInvalid, failures: 1},
		{name: "other failure", err: errors.New("apiserver down"), requeues: 1, after: 5 * time.Millisecond, failures: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := newAddon("ns", "mesh", "v1")
			dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonResource: "AddonList"}, obj)
			clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			var got *unstructured.Unstructured
			c, err := newController(controllerConfig{Dynamic: dyn, Workers: 1, Clock: clk,
				Reconcile: func(_ context.Context, obj *unstructured.Unstructured) (addon.Result, error) {
					got = obj
					return tt.res, tt.err
				}})
			require.NoError(t, err)
			defer c.queue.ShutDown()
			require.NoError(t, c.informer.GetIndexer().Add(obj))

			c.queue.Add("ns/mesh")
			require.True(t, c.processNext(context.Background()))
			require.NotNil(t, got)
			assert.Equal(t, "mesh", got.GetName())
			assert.NotSame(t, obj, got, "a copy of the cached object")
			assert.Equal(t, tt.requeues, c.queue.NumRequeues("ns/mesh"))
			conflicts, failures := c.Stats()
			assert.Equal(t, tt.conflicts, conflicts)
			assert.Equal(t, tt.failures, failures)
			assert.Zero(t, c.queue.Len(), "nothing back at once")
			if tt.after > 0 {
				clk.Step(tt.after)
				assert.Eventually(t, func() bool { return c.queue.Len() == 1 }, 10*time.Second, time.Millisecond, "back after %s", tt.after)
			}
		})
	}
}

func TestProcessNextSkipsAKeyNoLongerCached(t *testing.T) {
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonResource: "AddonList"})
	called := false
	c, err := newController(controllerConfig{Dynamic: dyn, Workers: 1,
		Reconcile: func(context.Context, *unstructured.Unstructured) (addon.Result, error) {
			called = true
			return addon.Result{}, nil
		}})
	require.NoError(t, err)
	defer c.queue.ShutDown()
	c.queue.Add("ns/gone")
	require.True(t, c.processNext(context.Background()))
	assert.False(t, called)
	assert.Zero(t, c.queue.Len())
}
