package kube

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/fake"
)

const uninstallFinalizer = "example.com/uninstall"

// finalizerRig is AddonObjects with a Finalizer on the fake dynamic client,
// and a reconcile that records the add-on it was handed.
type finalizerRig struct {
	client  *dynamicfake.FakeDynamicClient
	objects *AddonObjects
	handed  []addon.Object
}

func newFinalizerRig(t *testing.T, obj *unstructured.Unstructured) *finalizerRig {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{addonsResource: "AddonList"})
	fake.EnforceResourceVersions(client)
	_, err := client.Resource(addonsResource).Namespace(obj.GetNamespace()).Create(context.Background(), obj, metav1.CreateOptions{})
	require.NoError(t, err)
	objects, err := NewAddonObjects(AddonObjectsConfig{Client: client, Resource: addonsResource, Finalizer: uninstallFinalizer})
	require.NoError(t, err)
	return &finalizerRig{client: client, objects: objects}
}

func (x *finalizerRig) get(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	obj, err := x.client.Resource(addonsResource).Namespace("tke").Get(context.Background(), "mesh", metav1.GetOptions{})
	require.NoError(t, err)
	return obj
}

// reconcile is a Machine's Reconcile that returns res and err.
func (x *finalizerRig) reconcile(res addon.Result, err error) func(context.Context, addon.Object) (addon.Result, error) {
	return func(_ context.Context, o addon.Object) (addon.Result, error) {
		x.handed = append(x.handed, o)
		return res, err
	}
}

func TestWithFinalizerHoldsAnAddonUntilItIsUninstalled(t *testing.T) {
	deleting := func(finalizers ...string) func(*unstructured.Unstructured) {
		return func(o *unstructured.Unstructured) {
			now := metav1.NewTime(t0)
			o.SetDeletionTimestamp(&now)
			o.SetFinalizers(finalizers)
		}
	}
	errDriver := errors.New("uninstall: connection refused")
	tests := []struct {
		name    string
		obj     func(*unstructured.Unstructured)
		res     addon.Result
		err     error
		handed  bool     // reconcile ran
		keeps   []string // the finalizers stored after the call
		wantErr error
	}{
		{name: "a new add-on gets the finalizer before the engine acts", obj: func(*unstructured.Unstructured) {},
			res: addon.Result{}, handed: true, keeps: []string{uninstallFinalizer}},
		{name: "other finalizers stay beside it", obj: func(o *unstructured.Unstructured) { o.SetFinalizers([]string{"other.io/keep"}) },
			handed: true, keeps: []string{"other.io/keep", uninstallFinalizer}},
		{name: "an add-on deleted before it had the finalizer has nothing installed and is left alone", obj: deleting(),
			handed: false, keeps: nil},
		{name: "the finalizer stays while the uninstall has not succeeded", obj: deleting(uninstallFinalizer),
			res: addon.Result{}, handed: true, keeps: []string{uninstallFinalizer}},
		{name: "the finalizer goes once the engine says Deleted", obj: deleting(uninstallFinalizer, "other.io/keep"),
			res: addon.Result{Deleted: true}, handed: true, keeps: []string{"other.io/keep"}},
		{name: "a failed reconcile keeps the finalizer", obj: deleting(uninstallFinalizer),
			res: addon.Result{Deleted: true}, err: errDriver, handed: true, keeps: []string{uninstallFinalizer}, wantErr: errDriver},
		{name: "a status that does not decode is bad input", obj: func(o *unstructured.Unstructured) { o.Object["status"] = map[string]any{"phase": int64(3)} },
			handed: false, keeps: []string{uninstallFinalizer}, wantErr: converge.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := addonObject("v1", nil)
			tt.obj(obj)
			x := newFinalizerRig(t, obj)
			res, err := x.objects.WithFinalizer(context.Background(), x.get(t), x.reconcile(tt.res, tt.err))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.handed, len(x.handed) == 1, "reconcile ran")
			if tt.handed {
				assert.Equal(t, tt.res, res)
				assert.Contains(t, x.handed[0].Host.(*unstructured.Unstructured).GetFinalizers(), uninstallFinalizer, "the engine acts on the object that holds the finalizer")
			} else {
				assert.Equal(t, addon.Result{}, res)
			}
			assert.Equal(t, tt.keeps, x.get(t).GetFinalizers())
		})
	}
}

// An add-on gone before its finalizer could be removed is done; a
// conflict adding the finalizer is the API server's, and nothing runs.
func TestWithFinalizerMeetsTheAPIServer(t *testing.T) {
	t.Run("an add-on already gone is done", func(t *testing.T) {
		x := newFinalizerRig(t, addonObject("v1", nil))
		obj := x.get(t)
		gone := func(ctx context.Context, o addon.Object) (addon.Result, error) {
			require.NoError(t, x.client.Tracker().Delete(addonsResource, "tke", "mesh"))
			return addon.Result{Deleted: true}, nil
		}
		res, err := x.objects.WithFinalizer(context.Background(), obj, gone)
		require.NoError(t, err)
		assert.True(t, res.Deleted)
	})
	t.Run("a stale copy's finalizer write conflicts and nothing runs", func(t *testing.T) {
		x := newFinalizerRig(t, addonObject("v1", nil))
		stale := x.get(t)
		fresh := x.get(t)
		fresh.SetLabels(map[string]string{"moved": "on"})
		_, err := x.client.Resource(addonsResource).Namespace("tke").Update(context.Background(), fresh, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = x.objects.WithFinalizer(context.Background(), stale, x.reconcile(addon.Result{}, nil))
		assert.True(t, apierrors.IsConflict(err), "%v", err)
		assert.Empty(t, x.handed)
	})
}

// WithFinalizer answers its own nil or zero value, a store without a
// Finalizer, a nil object and a nil reconcile with converge.ErrInvalid,
// never a panic; NewAddonObjects refuses a Finalizer that is no qualified
// name.
func TestWithFinalizerRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	x := newFinalizerRig(t, addonObject("v1", nil))
	_, without := newAddons(t)
	noop := x.reconcile(addon.Result{}, nil)
	for _, tt := range []struct {
		name      string
		s         *AddonObjects
		obj       *unstructured.Unstructured
		reconcile func(context.Context, addon.Object) (addon.Result, error)
	}{
		{name: "a nil store", obj: addonObject("v1", nil), reconcile: noop},
		{name: "a zero store", s: &AddonObjects{}, obj: addonObject("v1", nil), reconcile: noop},
		{name: "a store without a finalizer", s: without, obj: addonObject("v1", nil), reconcile: noop},
		{name: "a nil object", s: x.objects, reconcile: noop},
		{name: "a nil reconcile", s: x.objects, obj: addonObject("v1", nil)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.s.WithFinalizer(ctx, tt.obj, tt.reconcile)
			assert.ErrorIs(t, err, converge.ErrInvalid)
		})
	}
	assert.Empty(t, x.handed)
	_, err := NewAddonObjects(AddonObjectsConfig{Client: x.client, Resource: addonsResource, Finalizer: "keep me"})
	assert.ErrorIs(t, err, converge.ErrInvalid)
}
