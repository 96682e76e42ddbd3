package crconverge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/converge-dev/converge"
)

// Every client of this package answers a call on a nil pointer or a zero
// value, and a nil object, with converge.ErrInvalid, never a panic.
func TestClientsRejectNilAndZeroValues(t *testing.T) {
	ctx := context.Background()
	configMap := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("ConfigMap")
		u.SetNamespace("ns")
		u.SetName("x")
		return u
	}
	c := newApplyClient(t)
	pods, err := NewPodClient(c)
	assert.NoError(t, err)
	apply, err := NewApplyClient(c)
	assert.NoError(t, err)
	addons, err := NewAddonClient(c, configMap().GroupVersionKind())
	assert.NoError(t, err)
	object, err := NewObjectClient(c, configMap().GroupVersionKind(), client.ObjectKey{Namespace: "ns", Name: "x"})
	assert.NoError(t, err)

	calls := map[string]func() error{
		"nil PodClient.GetPod":     func() error { _, err := (*PodClient)(nil).GetPod(ctx, "ns", "x"); return err },
		"zero PodClient.GetPod":    func() error { _, err := (&PodClient{}).GetPod(ctx, "ns", "x"); return err },
		"zero PodClient.CreatePod": func() error { return (&PodClient{}).CreatePod(ctx, &corev1.Pod{}) },
		"zero PodClient.DeletePod": func() error { return (&PodClient{}).DeletePod(ctx, "ns", "x") },
		"zero PodClient.ListNodes": func() error { _, err := (&PodClient{}).ListNodes(ctx, labels.Everything()); return err },
		"PodClient.CreatePod(nil)": func() error { return pods.CreatePod(ctx, nil) },
		"nil ApplyClient.Get": func() error {
			_, err := (*ApplyClient)(nil).Get(ctx, configMap().GroupVersionKind(), "ns", "x")
			return err
		},
		"zero ApplyClient.Apply":                func() error { return (&ApplyClient{}).Apply(ctx, configMap(), "m", false) },
		"zero ApplyClient.Delete":               func() error { return (&ApplyClient{}).Delete(ctx, configMap().GroupVersionKind(), "ns", "x") },
		"ApplyClient.Apply(nil)":                func() error { return apply.Apply(ctx, nil, "m", false) },
		"nil AddonClient.Get":                   func() error { _, err := (*AddonClient)(nil).Get(ctx, "ns", "x"); return err },
		"zero AddonClient.Update":               func() error { _, err := (&AddonClient{}).UpdateStatus(ctx, configMap()); return err },
		"AddonClient.Update(nil)":               func() error { _, err := addons.UpdateStatus(ctx, nil); return err },
		"zero AddonClient.Update of the object": func() error { _, err := (&AddonClient{}).Update(ctx, configMap()); return err },
		"AddonClient.Update of a nil object":    func() error { _, err := addons.Update(ctx, nil); return err },
		"nil ObjectClient.Get":                  func() error { _, err := (*ObjectClient)(nil).Get(ctx); return err },
		"zero ObjectClient.Update":              func() error { _, err := (&ObjectClient{}).UpdateStatus(ctx, configMap()); return err },
		"ObjectClient.Update(nil)":              func() error { _, err := object.UpdateStatus(ctx, nil); return err },
		"nil AddonObjects.FromObj":              func() error { _, err := (*AddonObjects)(nil).FromObject(&corev1.ConfigMap{}); return err },
		"zero AddonObjects.FromObj":             func() error { _, err := (&AddonObjects{}).FromObject(&corev1.ConfigMap{}); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			assert.ErrorIs(t, call(), converge.ErrInvalid)
		})
	}
	assert.Empty(t, (&ObjectClient{}).GroupResource(), "a zero ObjectClient names no resource")
}
