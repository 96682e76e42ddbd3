package addonlifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/converge-dev/converge/addon"
)

// The mesh manager's database Secret and the image tag that never starts.
const (
	dbSecretName   = "mesh-manager-db"
	dbPasswordKey  = "password"
	brokenImageTag = "does-not-exist"
)

// Labels on every object the driver creates. managedByLabel finds them all;
// instanceLabel and namespaceLabel say which add-on they belong to (the
// ClusterRoleBinding is cluster-scoped and cannot have a namespaced owner).
const (
	managedByLabel = "app.kubernetes.io/managed-by"
	managedBy      = "addon-lifecycle"
	instanceLabel  = "app.kubernetes.io/instance"
	namespaceLabel = "addons.converge.dev/namespace"
	versionLabel   = "app.kubernetes.io/version"
)

// images maps add-on versions to container images. v3 names an image that
// never starts: the upgrade that never becomes healthy.
var images = map[string]string{
	"v1": "registry.k8s.io/pause:3.9",
	"v2": "registry.k8s.io/pause:3.10",
	"v3": "registry.k8s.io/pause:" + brokenImageTag,
}

// meshDriver is the host's addon.Driver: for the add-on named "ns/name" it
// applies a ServiceAccount, a Service and a Deployment named name in ns, and
// a ClusterRoleBinding named "ns:name", with client-go. The database
// password reaches the container through a reference to the namespace's
// dbSecretName Secret, never through its arguments. One meshDriver serves
// any number of add-ons concurrently: when the request carries the Addon
// object (addon.Request.Host), the namespaced objects get it as their
// owner, so a real cluster's garbage collector removes them should the
// add-on's finalizer be forced away.
type meshDriver struct {
	client kubernetes.Interface
	dbHost string
}

var _ addon.Driver = (*meshDriver)(nil)

// NewDriver returns the add-on's addon.Driver, which installs its objects
// with client.
func NewDriver(client kubernetes.Interface) addon.Driver {
	return &meshDriver{client: client, dbHost: "mysql.tke.svc"}
}

// addonRef is an add-on's namespace and name, parsed from addon.Spec.Name.
type addonRef struct{ namespace, name string }

func parseRef(key string) (addonRef, error) {
	ns, n, ok := strings.Cut(key, "/")
	if !ok || ns == "" || n == "" {
		return addonRef{}, fmt.Errorf("add-on name %q is not namespace/name", key)
	}
	if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
		return addonRef{}, fmt.Errorf("add-on name %q cannot name a Service: %s", n, strings.Join(errs, "; "))
	}
	return addonRef{namespace: ns, name: n}, nil
}

func (r addonRef) crbName() string { return r.namespace + ":" + r.name }

// selector selects the add-on's pods.
func (r addonRef) selector() map[string]string {
	return map[string]string{managedByLabel: managedBy, instanceLabel: r.name}
}

func (r addonRef) labels() map[string]string {
	l := r.selector()
	l[namespaceLabel] = r.namespace
	return l
}

func (d *meshDriver) meta(r addonRef, host any) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: r.name, Namespace: r.namespace, Labels: r.labels()}
	if u, ok := host.(*unstructured.Unstructured); ok {
		m.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(u, AddonResource.GroupVersion().WithKind(addonKind))}
	}
	return m
}

func image(version string) (string, error) {
	img, ok := images[version]
	if !ok {
		return "", fmt.Errorf("no image for version %q", version)
	}
	return img, nil
}

// Install applies the add-on's objects at req.To. The objects keep no
// revisions of their own: the revision is "".
func (d *meshDriver) Install(ctx context.Context, req addon.Request) (string, error) {
	return "", d.install(ctx, req)
}

func (d *meshDriver) install(ctx context.Context, req addon.Request) error {
	r, err := parseRef(req.Spec.Name)
	if err != nil {
		return err
	}
	img, err := image(req.To)
	if err != nil {
		return err
	}
	core, rbac, apps := d.client.CoreV1(), d.client.RbacV1(), d.client.AppsV1()
	sas := core.ServiceAccounts(r.namespace)
	if err := apply(ctx, &corev1.ServiceAccount{ObjectMeta: d.meta(r, req.Host)}, sas.Get, sas.Create, sas.Update); err != nil {
		return fmt.Errorf("service account: %w", err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.crbName(), Labels: r.labels()},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: r.name, Namespace: r.namespace}},
	}
	crbs := rbac.ClusterRoleBindings()
	if err := apply(ctx, crb, crbs.Get, crbs.Create, crbs.Update); err != nil {
		return fmt.Errorf("cluster role binding: %w", err)
	}
	svcs := core.Services(r.namespace)
	svc := &corev1.Service{ObjectMeta: d.meta(r, req.Host), Spec: corev1.ServiceSpec{
		Selector: r.selector(),
		Ports:    []corev1.ServicePort{{Name: "http", Port: 10072, TargetPort: intstr.FromInt32(10072), Protocol: corev1.ProtocolTCP}},
	}}
	if err := apply(ctx, svc, svcs.Get, svcs.Create, func(ctx context.Context, s *corev1.Service, o metav1.UpdateOptions) (*corev1.Service, error) {
		cur, err := svcs.Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		s.Spec.ClusterIP, s.Spec.ClusterIPs = cur.Spec.ClusterIP, cur.Spec.ClusterIPs
		return svcs.Update(ctx, s, o)
	}); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	deps := apps.Deployments(r.namespace)
	if err := apply(ctx, d.deployment(r, req, img), deps.Get, deps.Create, deps.Update); err != nil {
		return fmt.Errorf("deployment: %w", err)
	}
	return nil
}

func (d *meshDriver) deployment(r addonRef, req addon.Request, img string) *appsv1.Deployment {
	dep := &appsv1.Deployment{
		ObjectMeta: d.meta(r, req.Host),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: r.selector()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: r.labels()},
				Spec: corev1.PodSpec{
					ServiceAccountName: r.name,
					Containers: []corev1.Container{{
						Name:  "mesh-manager",
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
	setVersion(dep, req.To, img)
	return dep
}

// setVersion points the Deployment's container and version labels at version.
func setVersion(dep *appsv1.Deployment, version, img string) {
	dep.Labels[versionLabel] = version
	dep.Spec.Template.Labels[versionLabel] = version
	dep.Spec.Template.Spec.Containers[0].Image = img
}

// Upgrade changes the Deployment's image and version labels, retrying when
// another writer (the deployment controller writing its status) changed it
// between the read and the write.
func (d *meshDriver) Upgrade(ctx context.Context, req addon.Request) (string, error) {
	return "", d.upgrade(ctx, req)
}

func (d *meshDriver) upgrade(ctx context.Context, req addon.Request) error {
	from, to := req.From, req.To
	r, err := parseRef(req.Spec.Name)
	if err != nil {
		return err
	}
	img, err := image(to)
	if err != nil {
		return err
	}
	deps := d.client.AppsV1().Deployments(r.namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := deps.Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dep.Labels == nil {
			dep.Labels = map[string]string{}
		}
		if dep.Spec.Template.Labels == nil {
			dep.Spec.Template.Labels = map[string]string{}
		}
		if len(dep.Spec.Template.Spec.Containers) == 0 {
			return fmt.Errorf("deployment %s/%s has no container", r.namespace, r.name)
		}
		setVersion(dep, to, img)
		_, err = deps.Update(ctx, dep, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("upgrade %s to %s: %w", from, to, err)
	}
	return nil
}

// Uninstall deletes the add-on's objects; those already gone count as deleted.
func (d *meshDriver) Uninstall(ctx context.Context, req addon.Request) error {
	r, err := parseRef(req.Spec.Name)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	return errors.Join(
		ignoreNotFound(d.client.AppsV1().Deployments(r.namespace).Delete(ctx, r.name, opts)),
		ignoreNotFound(d.client.CoreV1().Services(r.namespace).Delete(ctx, r.name, opts)),
		ignoreNotFound(d.client.RbacV1().ClusterRoleBindings().Delete(ctx, r.crbName(), opts)),
		ignoreNotFound(d.client.CoreV1().ServiceAccounts(r.namespace).Delete(ctx, r.name, opts)),
	)
}

// Health reads the Deployment: healthy when its current template is rolled
// out and at least one replica is available. A read error is reported as
// such (the engine keeps polling); a missing Deployment is unhealthy.
func (d *meshDriver) Health(ctx context.Context, req addon.Request) (addon.Health, error) {
	r, err := parseRef(req.Spec.Name)
	if err != nil {
		return addon.HealthUnknown, err
	}
	dep, err := d.client.AppsV1().Deployments(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
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

// apply creates obj, or updates it over the current resource version,
// retrying the read and the write when another writer got in between.
func apply[T object](ctx context.Context, obj T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
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
	})
}
