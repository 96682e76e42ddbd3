// Command sample is the sample operator: a controller-runtime manager that
// drives Addon resources through converge's add-on engine, Rollout resources
// through its rollout engine and, with -payload, applies the releases one
// Payload names through its payload engine.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	crconverge "github.com/converge-dev/converge/contrib/controller-runtime"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/internal/controller"
)

// Leader election keeps a Lease and records events about it; the
// controllers record their engines' events.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func main() {
	err := run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stderr, nil)
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		if err != errUsage { // errUsage alone: the flag package has printed it
			fmt.Fprintln(os.Stderr, err)
		}
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// errUsage is wrapped by run's error for bad command-line arguments; main
// then exits with status 2, as the flag package does. run returns errUsage
// itself when the flag package has already written the error and the usage
// to stderr, so that main does not print it twice.
var errUsage = errors.New("sample: bad arguments")

// run parses args (written to stderr on error), builds the manager on cfg
// (nil: from -kubeconfig, $KUBECONFIG or the cluster) with the add-on and
// rollout controllers and, with -payload, the payload worker, and runs it
// until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer, cfg *rest.Config) error {
	var (
		leaderElect bool
		leaderNS    string
		metricsAddr string
		payloadKey  string
		releasesDir string
		rolloutNS   string
		operand     string
		installer   string
	)
	fs := flag.NewFlagSet("sample", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config.RegisterFlags(fs)
	fs.BoolVar(&leaderElect, "leader-elect", false, "elect a leader among the replicas with a Lease")
	fs.StringVar(&leaderNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's own, in a cluster)")
	fs.StringVar(&metricsAddr, "metrics-bind-address", "0", "address of the metrics endpoint (0: none)")
	fs.StringVar(&payloadKey, "payload", "", "namespace/name of the Payload whose releases to apply (none: no payload worker)")
	fs.StringVar(&releasesDir, "releases", "releases", "directory with one sub-directory of manifests per release, for -payload")
	fs.StringVar(&rolloutNS, "rollout-namespace", "kube-system", "namespace of the installer and operand pods of the Rollouts")
	fs.StringVar(&operand, "operand", "operand", "name prefix of the operand pods (<operand>-<node>)")
	fs.StringVar(&installer, "installer-image", "installer", "image of the installer pods")
	opts := zap.Options{}
	opts.BindFlags(fs)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return err
	} else if err != nil {
		return errUsage
	}
	var payload types.NamespacedName
	if payloadKey != "" {
		ns, name, ok := strings.Cut(payloadKey, "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("-payload %q is not namespace/name: %w", payloadKey, errUsage)
		}
		payload = types.NamespacedName{Namespace: ns, Name: name}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %w", fs.Args(), errUsage)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))

	if cfg == nil {
		var err error
		if cfg, err = config.GetConfig(); err != nil {
			return fmt.Errorf("sample: loading the kubeconfig: %w", err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("sample: registering the built-in types: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("sample: registering the sample's types: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		LeaderElection:          leaderElect,
		LeaderElectionID:        "sample.converge.dev",
		LeaderElectionNamespace: leaderNS,
	})
	if err != nil {
		return fmt.Errorf("sample: creating the manager: %w", err)
	}
	if _, err := crconverge.NewAddonController(mgr, controller.AddonOptions(controller.ConfigMapDriver{Client: mgr.GetClient()})); err != nil {
		return fmt.Errorf("sample: setting up the add-on controller: %w", err)
	}
	if _, err := crconverge.NewRolloutController(mgr, controller.RolloutOptions(rolloutNS, operand, installer)); err != nil {
		return fmt.Errorf("sample: setting up the rollout controller: %w", err)
	}
	if payloadKey != "" {
		if _, err := crconverge.NewPayloadController(mgr, controller.PayloadOptions(payload, os.DirFS(releasesDir))); err != nil {
			return fmt.Errorf("sample: setting up the payload controller: %w", err)
		}
	}
	return mgr.Start(ctx)
}
