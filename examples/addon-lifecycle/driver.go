package main

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/addon"
)

// The mesh manager's objects, named as in TKEStack's controller.
const (
	namespace      = "tke"
	name           = "mesh-manager"
	crbName        = "mesh-manager-role-binding"
	dbSecretName   = "mesh-manager-db"
	dbPasswordKey  = "password"
	brokenImageTag = "does-not-exist"
)

// images maps add-on versions to container images. v3 names an image that
// never starts: the upgrade that never becomes healthy.
var images = map[string]string{
	"v1": "registry.k8s.io/pause:3.9",
	"v2": "registry.k8s.io/pause:3.10",
	"v3": "registry.k8s.io/pause:" + brokenImageTag,
}

// meshDriver is the host's addon.Driver: it applies the mesh manager's
// ServiceAccount, ClusterRoleBinding, Service and Deployment with client-go.
// The database password reaches the container through a Secret reference,
// never through its arguments.
type meshDriver struct {
	client kubernetes.Interface
	dbHost string
}

var _ addon.Driver = (*meshDriver)(nil)

func (d *meshDriver) image(version string) (string, error) {
	img, ok := images[version]
	if !ok {
		return "", fmt.Errorf("no image for version %q", version)
	}
	return img, nil
}

func (d *meshDriver) Install(ctx context.Context, spec addon.Spec) error {
	img, err := d.image(spec.Version)
	if err != nil {
		return err
	}
	core, rbac, apps := d.client.CoreV1(), d.client.RbacV1(), d.client.AppsV1()
	sa := &corev1.ServiceAccount{ObjectMeta: meta(name)}
	if err := apply(ctx, sa, core.ServiceAccounts(namespace).Get, core.ServiceAccounts(namespace).Create, core.ServiceAccounts(namespace).Update); err != nil {
		return fmt.Errorf("service account: %w", err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: crbName, Labels: labels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}},
	}
	if err := apply(ctx, crb, rbac.ClusterRoleBindings().Get, rbac.ClusterRoleBindings().Create, rbac.ClusterRoleBindings().Update); err != nil {
		return fmt.Errorf("cluster role binding: %w", err)
	}
	svc := &corev1.Service{ObjectMeta: meta(name), Spec: corev1.ServiceSpec{
		Selector: labels(),
		Ports:    []corev1.ServicePort{{Name: "http", Port: 10072, TargetPort: intstr.FromInt32(10072), Protocol: corev1.ProtocolTCP}},
	}}
	if err := apply(ctx, svc, core.Services(namespace).Get, core.Services(namespace).Create, func(ctx context.Context, s *corev1.Service, o metav1.UpdateOptions) (*corev1.Service, error) {
		cur, err := core.Services(namespace).Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		s.Spec.ClusterIP, s.Spec.ClusterIPs = cur.Spec.ClusterIP, cur.Spec.ClusterIPs
		return core.Services(namespace).Update(ctx, s, o)
	}); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	dep := d.deployment(img)
	if err := apply(ctx, dep, apps.Deployments(namespace).Get, apps.Deployments(namespace).Create, apps.Deployments(namespace).Update); err != nil {
		return fmt.Errorf("deployment: %w", err)
	}
	return nil
}

func (d *meshDriver) deployment(img string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: meta(name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: name,
					Containers: []corev1.Container{{
						Name:  name,
						Image: img,
						Args:  []string{"--insecure-port=10072", "--db-host=" + d.dbHost, "--db-user=mesh"},
						Env: []corev1.EnvVar{{
							Name: "DB_PASSWORD",
							ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: dbSecretName}, Key: dbPasswordKey,
							}},
						}},
					}},
				},
			},
		},
	}
}

func (d *meshDriver) Upgrade(ctx context.Context, _ addon.Spec, from, to string) error {
	img, err := d.image(to)
	if err != nil {
		return err
	}
	deps := d.client.AppsV1().Deployments(namespace)
	dep, err := deps.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("upgrade %s to %s: %w", from, to, err)
	}
	dep.Spec.Template.Spec.Containers[0].Image = img
	_, err = deps.Update(ctx, dep, metav1.UpdateOptions{})
	return err
}

func (d *meshDriver) Uninstall(ctx context.Context, _ addon.Spec) error {
	opts := metav1.DeleteOptions{}
	return errors.Join(
		ignoreNotFound(d.client.AppsV1().Deployments(namespace).Delete(ctx, name, opts)),
		ignoreNotFound(d.client.CoreV1().Services(namespace).Delete(ctx, name, opts)),
		ignoreNotFound(d.client.RbacV1().ClusterRoleBindings().Delete(ctx, crbName, opts)),
		ignoreNotFound(d.client.CoreV1().ServiceAccounts(namespace).Delete(ctx, name, opts)),
	)
}

// Health reads the Deployment: healthy when its current template is rolled
// out and at least one replica is available. A read error is reported as
// such (the engine keeps polling); a missing Deployment is unhealthy.
func (d *meshDriver) Health(ctx context.Context, _ addon.Spec) (addon.Health, error) {
	dep, err := d.client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return addon.HealthUnhealthy, nil
	case err != nil:
		return addon.HealthUnknown, err
	}
	want := ptr.Deref(dep.Spec.Replicas, 1)
	if dep.Status.ObservedGeneration < dep.Generation || dep.Status.UpdatedReplicas < want || dep.Status.AvailableReplicas < 1 {
		return addon.HealthUnhealthy, nil
	}
	return addon.HealthHealthy, nil
}

func meta(n string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: n, Namespace: namespace, Labels: labels()}
}

func labels() map[string]string { return map[string]string{"app": name} }

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// object is what apply needs of a typed object.
type object interface {
	GetName() string
	SetResourceVersion(string)
	GetResourceVersion() string
}

// apply creates obj, or updates it over the current resource version.
func apply[T object](ctx context.Context, obj T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
) error {
	cur, err := get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = create(ctx, obj, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	_, err = update(ctx, obj, metav1.UpdateOptions{})
	return err
}
