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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/testenv/standin"
)

// clusterPolicy is the policy on a real cluster: short polls, so that a
// fleet of add-ons goes through its lifecycle in seconds.
var clusterPolicy = addon.Policy{
	CheckInterval:   metav1.Duration{Duration: time.Second},
	CheckTimeout:    metav1.Duration{Duration: 2 * time.Minute},
	RunningInterval: metav1.Duration{Duration: time.Minute},
	Backoff:         converge.Backoff{Initial: metav1.Duration{Duration: 2 * time.Second}},
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

// Cluster is where the example's controller runs: an in-memory cluster
// (client-go's fake clientset and dynamic client, a fake clock) or the
// cluster of a kubeconfig. Play plays its scenario on it.
type Cluster struct {
	// Kube and Dynamic reach the cluster.
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Clock, Policy and Jitter configure the engine: in memory a fake
	// clock that the story steps, the default policy and a fixed jitter;
	// on a cluster the real clock, short polls and random jitter (nil).
	Clock  clock.WithTicker
	Policy addon.Policy
	Jitter func() float64

	opts      ClusterOptions
	http      *http.Client
	fakeClock *clocktesting.FakeClock
}

// InMemory is the in-memory cluster, whose API server refuses the first
// Deployment, as an admission webhook that is not ready yet would.
func InMemory() *Cluster {
	kube := fake.NewClientset()
	failFirstDeploymentCreate(kube)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	return &Cluster{
		Kube:      kube,
		Dynamic:   dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{AddonResource: addonKind + "List"}),
		Clock:     clk,
		Jitter:    func() float64 { return 0.5 },
		fakeClock: clk,
	}
}

// Connect reaches the cluster of kubeconfig, where Play runs the fleet
// opts asks for, or with "" returns InMemory(); Close releases its
// connections.
func Connect(kubeconfig string, opts ClusterOptions) (*Cluster, error) {
	if kubeconfig == "" {
		return InMemory(), nil
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return connect(cfg, opts)
}

func connect(cfg *rest.Config, opts ClusterOptions) (*Cluster, error) {
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
	return &Cluster{Kube: kube, Dynamic: dyn, Clock: clock.RealClock{}, Policy: clusterPolicy, opts: opts, http: hc}, nil
}

// Close drops the idle connections to a real cluster, once everything
// using them has stopped.
func (c *Cluster) Close() {
	if c.http != nil {
		utilnet.CloseIdleConnectionsFor(c.http.Transport)
	}
}

// Play plays the scenario, with reconcile as the controller's reconcile of
// one Addon.
//
// In memory it plays one add-on's story in well under a second: a failed
// install retried with backoff, an upgrade, an upgrade that never becomes
// healthy and is rolled back, and a deletion that the finalizer holds until
// the add-on is uninstalled.
//
// On a cluster it installs the Addon custom resource definition
// (addons.converge.dev), reconciles every Addon through a work queue with
// ClusterOptions.Workers workers, creates ClusterOptions.Addons Addons at
// v1, waits until all run, bumps them to v2, waits again, deletes them and
// checks that none of their objects is left. On a cluster without
// kube-controller-manager (such as the integration tests' bare
// kube-apiserver) it also simulates the deployment controller.
func (c *Cluster) Play(ctx context.Context, reconcile Reconcile, out io.Writer) error {
	if c.fakeClock != nil {
		return runStory(ctx, c, reconcile, out)
	}
	return runCluster(ctx, c, reconcile, out)
}

// running is the controller, and the simulated deployment controller if
// the cluster has none, running in the background.
type running struct {
	controller *controller
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	errs       [2]error
}

// startControllers starts the Addon controller with workers workers and, if
// simulate, the simulated deployment controller.
func startControllers(ctx context.Context, c *Cluster, reconcile Reconcile, workers int, simulate bool) (*running, error) {
	ctrl, err := newController(controllerConfig{Dynamic: c.Dynamic, Reconcile: reconcile, Workers: workers})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &running{controller: ctrl, cancel: cancel}
	r.wg.Go(func() { r.errs[0] = ctrl.Run(ctx) })
	if simulate {
		deps := standin.Deployments{Client: c.Kube, Stuck: broken,
			Selector: labels.SelectorFromSet(labels.Set{managedByLabel: managedBy}).String()}
		r.wg.Go(func() { r.errs[1] = deps.Run(ctx) })
	}
	return r, nil
}

// stop stops the controllers and waits for them.
func (r *running) stop() error {
	r.cancel()
	r.wg.Wait()
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
func runCluster(ctx context.Context, c *Cluster, reconcile Reconcile, out io.Writer) (err error) {
	opts := c.opts
	if err := opts.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := installCRD(ctx, c.Dynamic); err != nil {
		return err
	}
	if err := setUp(ctx, c.Kube, opts.Namespace); err != nil {
		return err
	}
	hasController, err := hasDeploymentController(ctx, c.Kube)
	if err != nil {
		return err
	}
	if !hasController {
		fmt.Fprintln(out, "no kube-controller-manager Lease: simulating the deployment controller")
	}
	addons := c.Dynamic.Resource(AddonResource).Namespace(opts.Namespace)
	phases, err := watchPhases(ctx, addons)
	if err != nil {
		return err
	}
	defer phases.stop()
	r, err := startControllers(ctx, c, reconcile, opts.Workers, !hasController)
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
	names := fleetNames(opts.Addons)
	ns := opts.Namespace
	stages := []struct {
		what string
		do   func() error
	}{
		{fmt.Sprintf("created %d Addons at v1", len(names)), func() error { return createAddons(ctx, addons, names, "v1") }},
		{"all Running at v1", func() error { return waitAddons(ctx, addons, len(names), runningAt("v1")) }},
		{"their objects at v1", func() error { return checkInstalled(ctx, c, ns, names, "v1") }},
		{"spec.version bumped to v2", func() error { return setVersions(ctx, addons, names, "v2") }},
		{"all Running at v2", func() error { return waitAddons(ctx, addons, len(names), runningAt("v2")) }},
		{"their objects at v2", func() error { return checkInstalled(ctx, c, ns, names, "v2") }},
		{"the decided events recorded on each", func() error {
			return poll(ctx, func() error {
				return eventsRecorded(ctx, c.Kube, ns, names, "Created", "InstallSucceeded", "Healthy", "VersionChanged", "UpgradeSucceeded")
			})
		}},
		{"deleted", func() error { return deleteAddons(ctx, addons, names) }},
		{"all gone", func() error { return waitAddons(ctx, addons, 0, func(*unstructured.Unstructured) error { return nil }) }},
		{"nothing left behind", func() error { return leftovers(ctx, c.Kube, ns) }},
		{"every Addon went through each phase in order", func() error { return phases.check(ctx, names) }},
	}
	for _, s := range stages {
		if err := stage(s.what, s.do()); err != nil {
			return err
		}
	}
	return ignoreNotFound(c.Kube.CoreV1().Secrets(ns).Delete(ctx, dbSecretName, metav1.DeleteOptions{}))
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
	u.SetAPIVersion(AddonResource.GroupVersion().String())
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
		case !hasFinalizer(obj):
			return fmt.Errorf("%s has no finalizer: %v", obj.GetName(), obj.GetFinalizers())
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
	return poll(ctx, func() error {
		list, err := addons.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d Addons, want %d", len(list.Items), n)
		}
		for i := range list.Items {
			if err := check(&list.Items[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// poll runs check every 250ms until it passes; when ctx ends first it
// reports check's last error.
func poll(ctx context.Context, check func() error) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(context.Context) (bool, error) {
		last = check()
		return last == nil, nil
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
