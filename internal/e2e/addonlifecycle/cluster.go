package addonlifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
)

// clusterPolicy is the policy on a real cluster: short polls, so that a
// fleet of add-ons goes through its lifecycle in seconds.
var clusterPolicy = addon.Policy{
	CheckInterval:   metav1.Duration{Duration: time.Second},
	CheckTimeout:    metav1.Duration{Duration: 2 * time.Minute},
	RunningInterval: metav1.Duration{Duration: time.Minute},
	Backoff:         addon.Backoff{Initial: metav1.Duration{Duration: 2 * time.Second}},
}

// fleetLabel marks the Addon objects the -kubeconfig run creates.
const fleetLabel = "addons.converge.dev/fleet"

// ClusterOptions configures the run on a cluster; Validate names each
// field by the example's flag.
type ClusterOptions struct {
	// Addons is how many Addon objects to create; Workers how many the
	// controller reconciles at once; Namespace where they live.
	Addons, Workers int
	Namespace       string
	// Timeout bounds the whole run.
	Timeout time.Duration
}

// Validate reports every option out of range, on one line.
func (o ClusterOptions) Validate() error {
	var problems []string
	if o.Addons < 0 {
		problems = append(problems, fmt.Sprintf("-addons: %d is negative", o.Addons))
	}
	if o.Workers < 1 {
		problems = append(problems, fmt.Sprintf("-workers: %d is less than 1", o.Workers))
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		problems = append(problems, fmt.Sprintf("-namespace: %q: %s", o.Namespace, strings.Join(errs, "; ")))
	}
	if o.Timeout <= 0 {
		problems = append(problems, fmt.Sprintf("-timeout: %s is not positive", o.Timeout))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, ", "))
	}
	return nil
}

// clients reach one cluster over one HTTP client, whose idle connections
// closeIdle drops once everything using it has stopped.
type clients struct {
	kube    kubernetes.Interface
	dynamic dynamic.Interface
	http    *http.Client
}

func newClients(cfg *rest.Config) (*clients, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 100, 200
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, dynamic: dyn, http: hc}, nil
}

func (c *clients) closeIdle() { utilnet.CloseIdleConnectionsFor(c.http.Transport) }

// running is the controller, and the simulated deployment controller if
// the cluster has none, running in the background.
type running struct {
	controller *controller
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	errs       [2]error
	events     record.EventBroadcaster
}

// startControllers starts the Addon controller with workers workers and, if
// simulate, the simulated deployment controller.
func startControllers(ctx context.Context, c *clients, workers int, simulate bool) (*running, error) {
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.kube.CoreV1().Events("")})
	ctrl, err := newController(controllerConfig{
		Kube: c.kube, Dynamic: c.dynamic, Workers: workers, Policy: clusterPolicy,
		Recorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "addon-lifecycle"}),
	})
	if err != nil {
		events.Shutdown()
		return nil, err
	}
	var deps *deploymentStatusController
	if simulate {
		if deps, err = newDeploymentStatusController(c.kube); err != nil {
			ctrl.queue.ShutDown()
			events.Shutdown()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &running{controller: ctrl, cancel: cancel, events: events}
	r.wg.Go(func() { r.errs[0] = ctrl.Run(ctx) })
	if deps != nil {
		r.wg.Go(func() { r.errs[1] = deps.Run(ctx, 2) })
	}
	return r, nil
}

// stop stops the controllers and waits for them.
func (r *running) stop() error {
	r.cancel()
	r.wg.Wait()
	r.events.Shutdown()
	return errors.Join(r.errs[:]...)
}

// hasDeploymentController reports whether kube-controller-manager runs: it
// holds its leader-election Lease in kube-system.
func hasDeploymentController(ctx context.Context, client kubernetes.Interface) (bool, error) {
	_, err := client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, "kube-controller-manager", metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// runCluster is the -kubeconfig run: it installs the Addon CRD, runs the
// controller, creates opts.Addons Addons at v1, waits until all run, bumps
// them to v2, waits again, deletes them and checks that nothing of theirs
// is left.
func runCluster(ctx context.Context, c *clients, opts ClusterOptions, out io.Writer) (err error) {
	if err := opts.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := installCRD(ctx, c.dynamic); err != nil {
		return err
	}
	if err := setUp(ctx, c.kube, opts.Namespace); err != nil {
		return err
	}
	hasController, err := hasDeploymentController(ctx, c.kube)
	if err != nil {
		return err
	}
	if !hasController {
		fmt.Fprintln(out, "no kube-controller-manager Lease: simulating the deployment controller")
	}
	r, err := startControllers(ctx, c, opts.Workers, !hasController)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, r.stop())
		conflicts, failures := r.controller.Stats()
		fmt.Fprintf(out, "controller stopped: %d conflicts requeued, %d other failed reconciles\n", conflicts, failures)
	}()

	start := time.Now()
	stage := func(what string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		fmt.Fprintf(out, "%8s  %s\n", time.Since(start).Round(100*time.Millisecond), what)
		return nil
	}
	addons := c.dynamic.Resource(addonGVR).Namespace(opts.Namespace)
	names := fleetNames(opts.Addons)
	if err := stage(fmt.Sprintf("created %d Addons at v1", len(names)), createAddons(ctx, addons, names, "v1")); err != nil {
		return err
	}
	if err := stage("all Running at v1", waitAddons(ctx, addons, len(names), runningAt("v1"))); err != nil {
		return err
	}
	if err := stage("spec.version bumped to v2", setVersions(ctx, addons, names, "v2")); err != nil {
		return err
	}
	if err := stage("all Running at v2", waitAddons(ctx, addons, len(names), runningAt("v2"))); err != nil {
		return err
	}
	if err := stage("deleted", deleteAddons(ctx, addons, names)); err != nil {
		return err
	}
	if err := stage("all gone", waitAddons(ctx, addons, 0, func(*unstructured.Unstructured) error { return nil })); err != nil {
		return err
	}
	if err := stage("nothing left behind", leftovers(ctx, c.kube, opts.Namespace)); err != nil {
		return err
	}
	return ignoreNotFound(c.kube.CoreV1().Secrets(opts.Namespace).Delete(ctx, dbSecretName, metav1.DeleteOptions{}))
}

func fleetNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("mesh-%03d", i)
	}
	return names
}

func newAddon(ns, name, version string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"version": version}}}
	u.SetAPIVersion(addonGVR.GroupVersion().String())
	u.SetKind(addonKind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(map[string]string{fleetLabel: managedBy})
	return u
}

func createAddons(ctx context.Context, addons dynamic.ResourceInterface, names []string, version string) error {
	for _, n := range names {
		obj := newAddon("", n, version)
		if _, err := addons.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// setVersions sets spec.version of the named Addons, retrying conflicts
// with the controller's writes.
func setVersions(ctx context.Context, addons dynamic.ResourceInterface, names []string, version string) error {
	for _, n := range names {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			obj, err := addons.Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := unstructured.SetNestedField(obj.Object, version, "spec", "version"); err != nil {
				return err
			}
			_, err = addons.Update(ctx, obj, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func deleteAddons(ctx context.Context, addons dynamic.ResourceInterface, names []string) error {
	for _, n := range names {
		if err := ignoreNotFound(addons.Delete(ctx, n, metav1.DeleteOptions{})); err != nil {
			return err
		}
	}
	return nil
}

// runningAt checks that an Addon runs version, healthy, with its status
// up to date with its spec.
func runningAt(version string) func(*unstructured.Unstructured) error {
	return func(obj *unstructured.Unstructured) error {
		st, err := statusOf(obj)
		switch {
		case err != nil:
			return err
		case st.Phase != addon.PhaseRunning || st.InstalledVersion != version:
			return fmt.Errorf("%s in %s at %q, want Running at %s", obj.GetName(), st.Phase, st.InstalledVersion, version)
		case st.ObservedGeneration != obj.GetGeneration():
			return fmt.Errorf("%s: observed generation %d of %d", obj.GetName(), st.ObservedGeneration, obj.GetGeneration())
		case !conditions.IsTrue(st.Conditions, conditions.TypeReady):
			return fmt.Errorf("%s not Ready", obj.GetName())
		}
		return nil
	}
}

// waitAddons polls until the fleet has n Addons and check passes for each;
// when ctx ends it reports the first that did not pass.
func waitAddons(ctx context.Context, addons dynamic.ResourceInterface, n int, check func(*unstructured.Unstructured) error) error {
	selector := labels.SelectorFromSet(labels.Set{fleetLabel: managedBy}).String()
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := addons.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			last = err
			return false, nil
		}
		if len(list.Items) != n {
			last = fmt.Errorf("%d Addons, want %d", len(list.Items), n)
			return false, nil
		}
		for i := range list.Items {
			if last = check(&list.Items[i]); last != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// leftovers reports the objects the driver created for add-ons in ns that
// still exist.
func leftovers(ctx context.Context, client kubernetes.Interface, ns string) error {
	opts := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{managedByLabel: managedBy, namespaceLabel: ns}).String()}
	var left []string
	sas, err := client.CoreV1().ServiceAccounts(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range sas.Items {
		left = append(left, "ServiceAccount "+o.Name)
	}
	svcs, err := client.CoreV1().Services(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range svcs.Items {
		left = append(left, "Service "+o.Name)
	}
	deps, err := client.AppsV1().Deployments(ns).List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range deps.Items {
		left = append(left, "Deployment "+o.Name)
	}
	crbs, err := client.RbacV1().ClusterRoleBindings().List(ctx, opts)
	if err != nil {
		return err
	}
	for _, o := range crbs.Items {
		left = append(left, "ClusterRoleBinding "+o.Name)
	}
	if len(left) > 0 {
		return fmt.Errorf("%d objects left behind: %v", len(left), left)
	}
	return nil
}
