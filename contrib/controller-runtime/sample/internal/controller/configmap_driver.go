package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/converge-dev/converge/addon"
)

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

// configMap returns the Addon of req (the controller hands over a copy of
// the *v1alpha1.Addon it reconciles) and the key of its ConfigMap.
func (d ConfigMapDriver) configMap(req addon.Request) (client.Object, *corev1.ConfigMap, error) {
	host, ok := req.Host.(client.Object)
	if !ok || host == nil {
		return nil, nil, fmt.Errorf("sample: the add-on request carries no object (%T)", req.Host)
	}
	return host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: host.GetNamespace(), Name: "addon-" + host.GetName()}}, nil
}
