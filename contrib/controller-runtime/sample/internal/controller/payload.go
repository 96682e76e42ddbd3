package controller

import (
	"context"
	"fmt"
	"io/fs"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/kube"
	"github.com/converge-dev/converge/payload"
)

// FieldManager is the sample's field manager for server-side apply.
const FieldManager = "converge-sample"

// +kubebuilder:rbac:groups=sample.converge.dev,resources=payloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=payloads/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete

// SetupPayloadWorker runs one payload worker for the Payload at key, as the
// cluster-version operator runs one for its ClusterVersion: the worker runs
// on the leader only (crconverge.LeaderElected), applies the manifests of
// the release the Payload names, read from releases/<release>/, with
// server-side apply (crconverge.NewApplier, which also waits for each
// object's readiness, read from the API server rather than the cache),
// writes its status to the Payload's status subresource, and records its
// events about the Payload; a reconciler hands the worker each new release.
// The sample's RBAC lets it apply ConfigMaps; an operator grants what its
// payloads hold.
func SetupPayloadWorker(ctx context.Context, mgr ctrl.Manager, key types.NamespacedName, releases fs.FS) error {
	store, err := crconverge.NewObjectStatusStore[payload.Status](mgr.GetClient(), v1alpha1.GroupVersion.WithKind("Payload"), key)
	if err != nil {
		return err
	}
	applier, err := crconverge.NewApplier(mgr.GetClient(), FieldManager, true)
	if err != nil {
		return err
	}
	// The worker carries on from the persisted status; none yet is the zero status.
	p := &v1alpha1.Payload{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := client.IgnoreNotFound(mgr.GetAPIReader().Get(ctx, key, p)); err != nil {
		return fmt.Errorf("sample: reading Payload %s: %w", key, err)
	}
	rec := mgr.GetEventRecorder("payload-worker")
	w, err := payload.NewWorker(payload.Config{
		Applier: applier, Deleter: applier, Readiness: applier,
		Loader:       releaseLoader{releases: releases},
		Status:       p.Status,
		StatusWriter: kube.LatestStatusWriter[payload.Status]{Store: store},
		OnResult:     func(r converge.Result) { kube.RecordEvents(rec, p, "Apply", r.Events) },
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(crconverge.LeaderElected(w.Start)); err != nil {
		return err
	}
	return setupPayloadReconciler(mgr, key, w)
}

// setupPayloadReconciler registers the reconciler that hands w the releases
// of the Payload at key.
func setupPayloadReconciler(mgr ctrl.Manager, key types.NamespacedName, w *payload.Worker) error {
	r := &PayloadReconciler{Client: mgr.GetClient(), Worker: w}
	isKey := predicate.NewPredicateFuncs(func(o client.Object) bool { return client.ObjectKeyFromObject(o) == key })
	return ctrl.NewControllerManagedBy(mgr).Named("payload").
		For(&v1alpha1.Payload{}, builder.WithPredicates(isKey)).Complete(r)
}

// PayloadReconciler hands the payload worker the release its Payload names.
type PayloadReconciler struct {
	// Client reads Payloads from the manager's cache.
	Client client.Client
	// Worker applies the releases.
	Worker *payload.Worker
}

// Reconcile gives the worker the Payload's generation and release; the
// worker applies it in the background and writes the status itself.
func (r *PayloadReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &v1alpha1.Payload{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.Worker.Update(p.Generation, payload.Release{Version: p.Spec.Release})
	return reconcile.Result{}, nil
}

// releaseLoader loads the manifests of a release from the directory named
// after its version.
type releaseLoader struct {
	releases fs.FS
}

func (l releaseLoader) Load(_ context.Context, desired payload.Release) (*payload.Payload, error) {
	dir, err := fs.Sub(l.releases, desired.Version)
	if err != nil {
		return nil, fmt.Errorf("sample: release %q: %w", desired.Version, err)
	}
	manifests, err := payload.Load(dir, payload.LoadOptions{})
	if err != nil {
		return nil, err
	}
	return &payload.Payload{Release: desired, Manifests: manifests}, nil
}
