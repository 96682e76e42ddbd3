package kube

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/internal/input"
)

// WithFinalizer runs reconcile (a Machine's Reconcile) on the add-on obj
// behind the store's Finalizer, the finalizer dance a client-go host would
// write by hand:
//
//   - before the engine's first action it adds the finalizer, so a deletion
//     waits for the uninstall; an object being deleted that never had it has
//     nothing installed, and is left alone (an empty Result);
//   - it hands reconcile the engine's view of obj (Object); a status that
//     does not decode is bad input (converge.ErrInvalid);
//   - once the Result says Deleted it removes the finalizer from the object
//     read afresh; an object already gone (NotFound) is done.
//
// The Result is returned beside an error too, with the events of what the
// engine persisted. A store not made by NewAddonObjects or
// NewAddonObjectsFor, one without a Finalizer, a nil obj or a nil reconcile
// is converge.ErrInvalid.
func (s *AddonObjects) WithFinalizer(ctx context.Context, obj *unstructured.Unstructured,
	reconcile func(context.Context, addon.Object) (addon.Result, error)) (addon.Result, error) {
	if err := s.check("WithFinalizer"); err != nil {
		return addon.Result{}, err
	}
	switch {
	case s.cfg.Finalizer == "":
		return addon.Result{}, input.Invalidf("kube", "AddonObjects.WithFinalizer call", "AddonObjectsConfig.Finalizer is required")
	case obj == nil:
		return addon.Result{}, input.Invalidf("kube", "AddonObjects.WithFinalizer call", "nil object")
	case reconcile == nil:
		return addon.Result{}, input.Invalidf("kube", "AddonObjects.WithFinalizer call", "nil reconcile")
	}
	if !slices.Contains(obj.GetFinalizers(), s.cfg.Finalizer) {
		if obj.GetDeletionTimestamp() != nil {
			return addon.Result{}, nil
		}
		held := obj.DeepCopy()
		held.SetFinalizers(append(held.GetFinalizers(), s.cfg.Finalizer))
		var err error
		if obj, err = s.client.Update(ctx, held); err != nil {
			return addon.Result{}, err
		}
	}
	current, err := s.Object(obj)
	if err != nil {
		return addon.Result{}, fmt.Errorf("%w: %w", converge.ErrInvalid, err)
	}
	res, err := reconcile(ctx, current)
	if err != nil || !res.Deleted {
		return res, err
	}
	return res, s.release(ctx, obj)
}

// release removes the store's finalizer from obj read afresh; an object
// already gone is released.
func (s *AddonObjects) release(ctx context.Context, obj *unstructured.Unstructured) error {
	latest, err := s.client.Get(ctx, obj.GetNamespace(), obj.GetName())
	if err == nil && slices.Contains(latest.GetFinalizers(), s.cfg.Finalizer) {
		latest.SetFinalizers(slices.DeleteFunc(latest.GetFinalizers(), func(f string) bool { return f == s.cfg.Finalizer }))
		_, err = s.client.Update(ctx, latest)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
