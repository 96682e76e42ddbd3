// Command addon-lifecycle runs the addon engine as an Addon controller.
//
// Each Addon object (addons.converge.dev) is reconciled by addon.Machine:
// kube.AddonObjects is its store (the status subresource, written over the
// resource version the engine read) and keeps a finalizer on a deleted
// Addon until the engine has uninstalled it (WithFinalizer), and
// kube.RecordLegacyEvents records the engine's events on the Addon.
//
// With no flags the controller plays one add-on's story on an in-memory
// cluster with a fake clock: a failed install retried with backoff, an
// upgrade, an upgrade that never becomes healthy and is rolled back, and a
// deletion. With -kubeconfig it installs the CRD and takes -addons Addons
// in -namespace through v1, v2 and their deletion. -diagram prints the
// transition table as a Mermaid state diagram.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/examples/internal/e2e/addonlifecycle"
	"github.com/converge-dev/converge/internal/cli"
	"github.com/converge-dev/converge/kube"
)

func main() { cli.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("addon-lifecycle", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "run the controller on this cluster instead of the in-memory story")
	diagram := fs.Bool("diagram", false, "print the default transition table as a Mermaid state diagram and exit")
	var opts addonlifecycle.ClusterOptions
	fs.IntVar(&opts.Addons, "addons", 20, "with -kubeconfig: how many Addons to create")
	fs.IntVar(&opts.Workers, "workers", 4, "with -kubeconfig: how many Addons the controller reconciles at once")
	fs.StringVar(&opts.Namespace, "namespace", "addons", "with -kubeconfig: the namespace of the Addons")
	fs.DurationVar(&opts.Timeout, "timeout", 5*time.Minute, "with -kubeconfig: how long the whole run may take")
	err := cli.Parse(fs, args, stderr)
	if err == nil {
		err = cli.Requires(fs, "kubeconfig", "addons", "workers", "namespace", "timeout")
	}
	if err == nil && *kubeconfig != "" {
		if verr := opts.Validate(); verr != nil {
			err = &cli.UsageError{Line: verr.Error()} // it names each flag out of range
		}
	}
	switch {
	case err != nil:
	case *diagram:
		_, err = fmt.Fprint(stdout, addon.DefaultTable().Mermaid())
	default:
		err = runController(ctx, *kubeconfig, opts, stdout)
	}
	return cli.Exit(stderr, fs.Name(), err)
}

// runController wires the engine to the cluster and lets the cluster play
// its scenario, calling reconcile for each Addon it changes.
func runController(ctx context.Context, kubeconfig string, opts addonlifecycle.ClusterOptions, out io.Writer) error {
	cluster, err := addonlifecycle.Connect(kubeconfig, opts)
	if err != nil {
		return err
	}
	defer cluster.Close()
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cluster.Kube.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "addon-lifecycle"})
	r, err := newReconciler(cluster, recorder)
	if err != nil {
		return err
	}
	return cluster.Play(ctx, r.reconcile, out)
}

// reconciler reconciles one Addon object at a time.
type reconciler struct {
	store    *kube.AddonObjects
	machine  *addon.Machine
	recorder record.EventRecorder
}

func newReconciler(c *addonlifecycle.Cluster, recorder record.EventRecorder) (*reconciler, error) {
	store, err := kube.NewAddonObjects(kube.AddonObjectsConfig{
		Client: c.Dynamic, Resource: addonlifecycle.AddonResource, Spec: addonlifecycle.SpecOf,
		Finalizer: addonlifecycle.Finalizer,
	})
	if err != nil {
		return nil, err
	}
	machine, err := addon.NewMachine(addon.Config{
		Driver: addonlifecycle.NewDriver(c.Kube), Store: store, Owner: "addon-lifecycle",
		Policy: c.Policy, Clock: c.Clock, Jitter: c.Jitter,
	})
	if err != nil {
		return nil, err
	}
	return &reconciler{store: store, machine: machine, recorder: recorder}, nil
}

// reconcile runs the engine behind the finalizer (added before anything is
// installed, dropped once the engine has uninstalled a deleted Addon) and
// records its events.
func (r *reconciler) reconcile(ctx context.Context, obj *unstructured.Unstructured) (addon.Result, error) {
	res, err := r.store.WithFinalizer(ctx, obj, r.machine.Reconcile)
	kube.RecordLegacyEvents(r.recorder, obj, res.Events) // what was persisted, even beside an error
	return res, err
}
