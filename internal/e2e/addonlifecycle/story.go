// Package addonlifecycle is the machinery of examples/addon-lifecycle: the
// add-on's driver, the Addon controller on kube.AddonObjects and
// kube.RecordLegacyEvents, the simulated deployment controller, and Run.
package addonlifecycle

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge/addon"
	convergefake "github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/kube"
)

// The in-memory story's add-on, named as in TKEStack's mesh manager.
const (
	namespace = "tke"
	name      = "mesh-manager"
)

// Run is the whole command: the in-memory story, or with a kubeconfig the
// controller on a real cluster.
//
// Without a kubeconfig it plays one add-on on an in-memory cluster (client-go's
// fake clientset, a simulated deployment controller and a fake clock) in
// well under a second: a failed install retried with backoff, an upgrade,
// an upgrade that never becomes healthy and is rolled back, and a deletion.
//
// With a kubeconfig it runs a controller on a real cluster: it installs the
// Addon custom resource definition (addons.converge.dev), reconciles every
// Addon through a work queue with ClusterOptions.Workers workers, creates
// ClusterOptions.Addons Addons at v1, waits until all run, bumps them to v2,
// waits again, deletes them and checks that none of their objects is left.
// On a cluster without kube-controller-manager (such as the integration
// tests' bare kube-apiserver) it also simulates the deployment controller.
func Run(ctx context.Context, kubeconfig string, opts ClusterOptions, out io.Writer) error {
	if kubeconfig == "" {
		return runStory(ctx, out)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := newClients(cfg)
	if err != nil {
		return err
	}
	defer c.closeIdle()
	return runCluster(ctx, c, opts, out)
}

// story is the lifecycle the run shows, one step each time the add-on is
// Running: bump to v2, bump to the broken v3, delete.
type story struct {
	spec  addon.Spec
	stage int
}

func (s *story) advance(st addon.Status) (string, bool) {
	if st.Phase != addon.PhaseRunning {
		return "", false
	}
	s.stage++
	switch s.stage {
	case 1:
		s.spec.Version, s.spec.Generation = "v2", 2
		return "spec: version v1 -> v2", true
	case 2:
		s.spec.Version, s.spec.Generation = "v3", 3
		return "spec: version v2 -> v3 (an image that never starts)", true
	case 3:
		s.spec.Deleting = true
		return "object deleted (finalizer held until the add-on is uninstalled)", true
	}
	return "", false
}

// runStory plays the in-memory story.
func runStory(ctx context.Context, out io.Writer) error {
	client := fake.NewClientset()
	failFirstDeploymentCreate(client)
	sim := &deploymentSimulator{client: client}
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	if err := setUp(ctx, client, namespace); err != nil {
		return err
	}

	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(namespace)})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "addon-lifecycle"})
	ref := &corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: namespace, Name: name}

	store := &convergefake.AddonStore{}
	machine, err := addon.NewMachine(addon.Config{
		Driver:   &meshDriver{client: client, dbHost: "mysql.tke.svc"},
		Store:    store,
		Identity: "addon-lifecycle",
		Clock:    clk,
		Jitter:   func() float64 { return 0.5 },
	})
	if err != nil {
		return err
	}

	start := clk.Now()
	s := &story{spec: addon.Spec{Name: namespace + "/" + name, Generation: 1, Version: "v1"}}
	obj := store.Put(addon.Object{Spec: s.spec})
	fmt.Fprintf(out, "%8s  %-19s %s\n", "time", "reason", "transition")
	for step := 0; ; step++ {
		if step == 1000 {
			return fmt.Errorf("story did not finish; status %+v", obj.Status)
		}
		if err := sim.Sync(ctx); err != nil {
			return err
		}
		res, err := machine.Reconcile(ctx, obj)
		if err != nil {
			return err
		}
		if obj, err = store.Get(ctx, s.spec.Name); err != nil {
			return err
		}
		status := obj.Status
		kube.RecordLegacyEvents(recorder, ref, res.Events)
		for _, e := range res.Events {
			fmt.Fprintf(out, "%8s  %-19s %s\n", clk.Since(start).Round(time.Second), e.Reason, e.Message)
		}
		if res.Deleted {
			break
		}
		if msg, ok := s.advance(status); ok {
			fmt.Fprintf(out, "%8s  %-19s %s\n", clk.Since(start).Round(time.Second), "--", msg)
			obj, _ = store.Update(s.spec.Name, func(spec *addon.Spec) { *spec = s.spec })
			continue
		}
		if step == 0 {
			if err := checkNoSecretInArgs(ctx, client); err != nil {
				return err
			}
		}
		if res.RequeueAfter == 0 {
			return fmt.Errorf("add-on idle in %s (%s): %s", status.Phase, status.Reason, status.Message)
		}
		clk.Step(res.RequeueAfter)
	}
	return verify(ctx, client, obj.Status, out)
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
	fmt.Fprintf(out, "done: v3 failed and was rolled back to v2, then uninstalled; the finalizer can go\n")
	return nil
}
