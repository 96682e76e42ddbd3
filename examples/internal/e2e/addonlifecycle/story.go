package addonlifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/converge-dev/converge/addon"
)

// The in-memory story's add-on, named as in TKEStack's mesh manager.
const (
	namespace = "tke"
	name      = "mesh-manager"
)

// story is the lifecycle the run shows, one step each time the add-on is
// Running: bump to v2, bump to the broken v3, delete.
type story struct{ stage int }

// advance changes obj as its user would once the add-on runs: a new
// spec.version (the in-memory apiserver leaves metadata.generation to the
// story), then the deletion (the deletion timestamp the apiserver sets
// while a finalizer holds the object).
func (s *story) advance(st addon.Status, obj *unstructured.Unstructured, now time.Time) (string, bool) {
	if st.Phase != addon.PhaseRunning {
		return "", false
	}
	s.stage++
	bump := func(version string) {
		_ = unstructured.SetNestedField(obj.Object, version, "spec", "version")
		obj.SetGeneration(obj.GetGeneration() + 1)
	}
	switch s.stage {
	case 1:
		bump("v2")
		return "spec: version v1 -> v2", true
	case 2:
		bump("v3")
		return "spec: version v2 -> v3 (an image that never starts)", true
	case 3:
		deleted := metav1.NewTime(now)
		obj.SetDeletionTimestamp(&deleted)
		return "object deleted (finalizer held until the add-on is uninstalled)", true
	}
	return "", false
}

// runStory plays the in-memory story: one Addon, reconciled by reconcile
// whenever the engine asked to look again, with the fake clock stepped to
// that moment and the simulated deployment controller run in between.
func runStory(ctx context.Context, c *Cluster, reconcile Reconcile, out io.Writer) error {
	if err := setUp(ctx, c.Kube, namespace); err != nil {
		return err
	}
	addons := c.Dynamic.Resource(AddonResource).Namespace(namespace)
	obj := newAddon(namespace, name, "v1")
	obj.SetGeneration(1)
	if _, err := addons.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return err
	}
	sim := &deploymentSimulator{client: c.Kube}
	clk := c.fakeClock
	start := clk.Now()
	at := func() time.Duration { return clk.Since(start).Round(time.Second) }
	fmt.Fprintf(out, "%8s  %-19s %s\n", "time", "reason", "transition")
	s := &story{}
	var status addon.Status
	for step := 0; ; step++ {
		if step == 1000 {
			return fmt.Errorf("story did not finish; status %+v", status)
		}
		if err := sim.Sync(ctx); err != nil {
			return err
		}
		obj, err := addons.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		res, err := reconcile(ctx, obj)
		if err != nil {
			return err
		}
		for _, e := range res.Events {
			fmt.Fprintf(out, "%8s  %-19s %s\n", at(), e.Reason, e.Message)
		}
		if obj, err = addons.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		if status, err = statusOf(obj); err != nil {
			return err
		}
		if res.Deleted {
			if hasFinalizer(obj) {
				return errors.New("the finalizer is still there after the uninstall")
			}
			// No finalizer holds the object: the apiserver removes it.
			if err := addons.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			break
		}
		if !hasFinalizer(obj) {
			return fmt.Errorf("the add-on is %s without the finalizer", status.Phase)
		}
		if msg, ok := s.advance(status, obj, clk.Now()); ok {
			fmt.Fprintf(out, "%8s  %-19s %s\n", at(), "--", msg)
			if _, err := addons.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
				return err
			}
			continue
		}
		if step == 0 {
			if err := checkNoSecretInArgs(ctx, c.Kube); err != nil {
				return err
			}
		}
		if res.RequeueAfter == 0 {
			return fmt.Errorf("add-on idle in %s (%s): %s", status.Phase, status.Reason, status.Message)
		}
		clk.Step(res.RequeueAfter)
	}
	return verify(ctx, c.Kube, status, out)
}

// failFirstDeploymentCreate makes the in-memory API server refuse the first
// Deployment, as an admission webhook that is not ready yet would.
func failFirstDeploymentCreate(c *fake.Clientset) {
	failed := false
	c.PrependReactor("create", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failed {
			return false, nil, nil
		}
		failed = true
		return true, nil, apierrors.NewServiceUnavailable("admission webhook \"mesh.tkestack.io\" is not ready")
	})
}

// setUp creates namespace ns and the database Secret the add-ons' pods read.
func setUp(ctx context.Context, client kubernetes.Interface, ns string) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: dbSecretName, Namespace: ns}, StringData: map[string]string{dbPasswordKey: "s3cr3t-from-vault"}}
	_, err = client.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// checkNoSecretInArgs fails when the database password shows up in the
// Deployment's arguments (seed bug 10): it must come from the Secret.
func checkNoSecretInArgs(ctx context.Context, client kubernetes.Interface) error {
	dep, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			if strings.Contains(a, "password") {
				return fmt.Errorf("container %s passes a password in its arguments: %q", c.Name, a)
			}
		}
		for _, e := range c.Env {
			if e.Name == "DB_PASSWORD" && (e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil) {
				return fmt.Errorf("container %s does not read DB_PASSWORD from a Secret", c.Name)
			}
		}
	}
	return nil
}

// verify checks the end of the story: v3 failed and was rolled back to v2,
// and the deletion removed every object.
func verify(ctx context.Context, client kubernetes.Interface, st addon.Status, out io.Writer) error {
	if st.Phase != addon.PhaseDeleted || st.FailedVersion != "v3" || st.LastGoodVersion != "v2" {
		return fmt.Errorf("unexpected end: phase %s, failed version %q, last good version %q", st.Phase, st.FailedVersion, st.LastGoodVersion)
	}
	if _, err := client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("deployment still there after deletion (err %v)", err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Get(ctx, addonRef{namespace, name}.crbName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return fmt.Errorf("cluster role binding still there after deletion (err %v)", err)
	}
	if err := ignoreNotFound(client.CoreV1().Secrets(namespace).Delete(ctx, dbSecretName, metav1.DeleteOptions{})); err != nil {
		return err
	}
	fmt.Fprintf(out, "done: v3 failed and was rolled back to v2, then uninstalled; the finalizer went and the Addon is gone\n")
	return nil
}
