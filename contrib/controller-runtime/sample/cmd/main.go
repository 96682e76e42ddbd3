// Command sample is the sample operator: a controller-runtime manager that
// drives Addon resources through converge's add-on engine, Rollout resources
// through its rollout engine and, with -payload, applies the releases one
// Payload names through its payload engine.
package main

import (
	"flag"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/converge-dev/converge/contrib/controller-runtime/sample/api/v1alpha1"
	"github.com/converge-dev/converge/contrib/controller-runtime/sample/internal/controller"
)

// Leader election keeps a Lease and records events about it.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

func main() {
	var (
		leaderElect bool
		leaderNS    string
		payloadKey  string
		releasesDir string
		rollouts    controller.RolloutReconciler
	)
	flag.BoolVar(&leaderElect, "leader-elect", false, "elect a leader among the replicas with a Lease")
	flag.StringVar(&leaderNS, "leader-election-namespace", "", "namespace of the leader election Lease (default: the pod's own, in a cluster)")
	flag.StringVar(&payloadKey, "payload", "", "namespace/name of the Payload whose releases to apply (none: no payload worker)")
	flag.StringVar(&releasesDir, "releases", "releases", "directory with one sub-directory of manifests per release, for -payload")
	flag.StringVar(&rollouts.Namespace, "rollout-namespace", "kube-system", "namespace of the installer and operand pods of the Rollouts")
	flag.StringVar(&rollouts.Operand, "operand", "operand", "name prefix of the operand pods (<operand>-<node>)")
	flag.StringVar(&rollouts.InstallerImage, "installer-image", "installer", "image of the installer pods")
	opts := zap.Options{}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("sample")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		log.Error(err, "registering the built-in types")
		os.Exit(1)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		log.Error(err, "registering the sample's types")
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "sample.converge.dev",
		LeaderElectionNamespace: leaderNS,
	})
	if err != nil {
		log.Error(err, "creating the manager")
		os.Exit(1)
	}
	if err := controller.SetupAddonReconciler(mgr, controller.ConfigMapDriver{Client: mgr.GetClient()}); err != nil {
		log.Error(err, "setting up the add-on controller")
		os.Exit(1)
	}
	rollouts.Client, rollouts.Recorder = mgr.GetClient(), mgr.GetEventRecorder("rollout-controller")
	if err := controller.SetupRolloutReconciler(mgr, &rollouts); err != nil {
		log.Error(err, "setting up the rollout controller")
		os.Exit(1)
	}
	ctx := ctrl.SetupSignalHandler()
	if payloadKey != "" {
		ns, name, ok := strings.Cut(payloadKey, "/")
		if !ok {
			log.Error(nil, "-payload is not namespace/name", "payload", payloadKey)
			os.Exit(2)
		}
		key := types.NamespacedName{Namespace: ns, Name: name}
		if err := controller.SetupPayloadWorker(ctx, mgr, key, os.DirFS(releasesDir)); err != nil {
			log.Error(err, "setting up the payload worker")
			os.Exit(1)
		}
	}
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "running the manager")
		os.Exit(1)
	}
}
