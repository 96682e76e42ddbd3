package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge/addon"
	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/kube"
)

// AddonFinalizer keeps an Addon until the engine has uninstalled it.
const AddonFinalizer = "sample.converge.dev/addon"

// AddonReconciler drives every Addon through the add-on engine: one Machine
// per reconcile, built from the Addon's own policy (a Machine keeps no state
// between calls), with the status on the Addon's status subresource.
//
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons/status,verbs=get;update
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
type AddonReconciler struct {
	// Client reads Addons from the manager's cache and writes them; the
	// engine's store reads them afresh through it, as unstructured objects,
	// which the manager's client does not cache.
	Client client.Client
	// Recorder records the engine's events about each Addon.
	Recorder events.EventRecorder
	// Driver installs, upgrades, checks and uninstalls the add-ons.
	Driver addon.Driver
	// Identity names this process in the engine's claims.
	Identity string
}

// SetupAddonReconciler registers an AddonReconciler for driver with mgr; an
// Addon is reconciled when it changes and when an object it owns does (the
// ConfigMapDriver's ConfigMap).
func SetupAddonReconciler(mgr ctrl.Manager, driver addon.Driver) error {
	r := &AddonReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("addon-controller"),
		Driver:   driver,
		Identity: "sample-operator",
	}
	return ctrl.NewControllerManagedBy(mgr).For(&v1alpha1.Addon{}).Owns(&corev1.ConfigMap{}).Named("addon").Complete(r)
}

// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons/status,verbs=get;update
// +kubebuilder:rbac:groups=sample.converge.dev,resources=addons/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile advances one Addon by one step of its lifecycle. An invalid
// policy is a terminal error: it waits for the user to change the Addon.
func (r *AddonReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	a := &v1alpha1.Addon{}
	if err := r.Client.Get(ctx, req.NamespacedName, a); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if a.DeletionTimestamp.IsZero() && !controllerutil.ContainsFinalizer(a, AddonFinalizer) {
		if err := r.patchFinalizer(ctx, a, controllerutil.AddFinalizer); err != nil {
			return crconverge.Result(0, err)
		}
	}
	store, err := crconverge.NewAddonObjects(r.Client, v1alpha1.GroupVersion.WithKind("Addon"), kube.AddonObjectsConfig{})
	if err != nil {
		return reconcile.Result{}, err
	}
	m, err := addon.NewMachine(addon.Config{Driver: r.Driver, Store: store, Identity: r.Identity, Policy: a.Spec.Policy})
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	obj, err := store.FromObject(a)
	if err != nil {
		return reconcile.Result{}, err
	}
	res, err := m.Reconcile(ctx, obj)
	kube.RecordEvents(r.Recorder, a, "Reconcile", res.Events)
	if err == nil && res.Deleted && controllerutil.ContainsFinalizer(a, AddonFinalizer) {
		err = r.patchFinalizer(ctx, a, controllerutil.RemoveFinalizer)
	}
	return crconverge.Result(res.RequeueAfter, err)
}

// patchFinalizer adds or removes the finalizer with a merge patch, which
// does not race with the engine's status writes.
func (r *AddonReconciler) patchFinalizer(ctx context.Context, a *v1alpha1.Addon, change func(client.Object, string) bool) error {
	patch := client.MergeFrom(a.DeepCopy())
	change(a, AddonFinalizer)
	return r.Client.Patch(ctx, a, patch)
}

// ConfigMapDriver is the sample's add-on: a ConfigMap named after the Addon,
// in its namespace and owned by it, whose data holds the installed version.
// A real operator applies charts or manifests here.
type ConfigMapDriver struct {
	// Client reads and writes the ConfigMaps.
	Client client.Client
}

var _ addon.Driver = ConfigMapDriver{}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;delete

// Install creates the ConfigMap with req.To. A ConfigMap has no revisions
// of its own: the revision is "".
func (d ConfigMapDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	return "", d.apply(ctx, req)
}

// Upgrade writes req.To into the ConfigMap.
func (d ConfigMapDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	return "", d.apply(ctx, req)
}

// Uninstall deletes the ConfigMap.
func (d ConfigMapDriver) Uninstall(ctx context.Context, req addon.Request) error {
	_, cm, err := d.configMap(req)
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(d.Client.Delete(ctx, cm))
}

// Health reports the add-on healthy when the ConfigMap holds the version the
// engine last applied.
func (d ConfigMapDriver) Health(ctx context.Context, req addon.Request) (addon.Health, error) {
	_, cm, err := d.configMap(req)
	if err != nil {
		return addon.HealthUnknown, err
	}
	if err := d.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
		if apierrors.IsNotFound(err) {
			return addon.HealthUnhealthy, nil
		}
		return addon.HealthUnknown, err
	}
	if want := req.To; want != "" && cm.Data["version"] != want {
		return addon.HealthUnhealthy, nil
	}
	return addon.HealthHealthy, nil
}

func (d ConfigMapDriver) apply(ctx context.Context, req addon.Request) error {
	host, cm, err := d.configMap(req)
	if err != nil {
		return err
	}
	_, err = controllerutil.CreateOrUpdate(ctx, d.Client, cm, func() error {
		cm.Data = map[string]string{"version": req.To}
		return controllerutil.SetControllerReference(host, cm, d.Client.Scheme())
	})
	return err
}

// configMap returns the Addon of req (crconverge.AddonObjects hands it over
// as unstructured) and the key of its ConfigMap.
func (d ConfigMapDriver) configMap(req addon.Request) (client.Object, *corev1.ConfigMap, error) {
	host, ok := req.Host.(client.Object)
	if !ok || host == nil {
		return nil, nil, fmt.Errorf("sample: the add-on request carries no object (%T)", req.Host)
	}
	return host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: host.GetNamespace(), Name: "addon-" + host.GetName()}}, nil
}
