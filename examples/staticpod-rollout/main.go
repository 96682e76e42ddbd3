// Command staticpod-rollout rolls a per-node component (a static pod) from
// revision 1 to 2 to 3 with the rollout engine, a few nodes at a time.
//
// The engine adopts client-go through package kube: kube.RolloutPods creates
// the installer pods (app=installer, revision, node labels; deleted with no
// grace period) and reads the operand's mirror pods <operand>-<node> and the
// nodes from informer caches, and kube.ConfigMapStatusStore keeps the
// rollout status as JSON in the ConfigMap <operand>-rollout-status, whose
// resourceVersion gives the engine its optimistic concurrency; the events
// each sync returns go to a client-go EventRecorder through
// kube.RecordLegacyEvents. The wiring and the simulated cluster live in
// internal/e2e/staticpodrollout.
//
// With no flags it runs on an in-memory cluster (client-go's fake clientset)
// where a small simulated kubelet moves real corev1.Pod objects through their
// phases, with one scripted installer failure that is retried after a backoff;
// it prints a line per sync (a progress line every 10% of the nodes beyond
// 50 nodes), a final table of nodes and conditions, and exits 0 once every
// node runs revision 3. With -kubeconfig it drives the same engine against a
// real cluster's pods in -namespace; adding -simulate-kubelet plays the same
// scenario on a real apiserver that has no kubelet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/internal/e2e/staticpodrollout"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the flags beyond the engine's configuration.
type options struct {
	simulate bool
	verbose  bool
}

// errUsage marks a flag error whose message and usage are printed.
var errUsage = errors.New("usage printed")

// parseFlags parses the flags. For -h it prints the usage to stderr and
// returns flag.ErrHelp; for an unknown flag it prints the error and the usage
// and returns an error wrapping errUsage; any other error is one line to
// print.
func parseFlags(args []string, stderr io.Writer) (staticpodrollout.Config, options, error) {
	var c staticpodrollout.Config
	var o options
	fs := flag.NewFlagSet("staticpod-rollout", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&c.Nodes, "nodes", 3, "number of nodes of the in-memory cluster")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "run against the cluster of this kubeconfig instead of in memory")
	fs.StringVar(&c.Namespace, "namespace", "converge-rollout", "namespace of the installer and operand pods")
	fs.StringVar(&c.Operand, "operand", "operand", "operand name: its mirror pods are <operand>-<node>")
	fs.StringVar(&c.Image, "installer-image", "busybox:1.36", "installer pod image (-kubeconfig only)")
	fs.StringVar(&c.NodeSelector, "node-selector", "node-role.kubernetes.io/control-plane", "label selector of the nodes to roll out to")
	fs.IntVar(&c.Revision, "revision", 1, "revision to roll out to (-kubeconfig only; in memory it is 1 -> 2 -> 3)")
	fs.IntVar(&c.MaxUnavailable, "max-unavailable", 0, "how many nodes may be in transition or not ready at once (0: one in 100 nodes, at least 1)")
	fs.BoolVar(&o.simulate, "simulate-kubelet", false, "with -kubeconfig: create -nodes nodes and play the in-memory scenario on that apiserver")
	fs.IntVar(&c.MaxSyncs, "max-syncs", 0, "give up after this many syncs per revision (0: 50 per wave of -max-unavailable nodes, plus 100)")
	fs.DurationVar(&c.Timeout, "timeout", 0, "give up after this long (-kubeconfig only; 0: 10m plus 1s per node)")
	fs.BoolVar(&o.verbose, "v", false, "log what the engine does")
	if err := fs.Parse(args); err != nil {
		help := errors.Is(err, flag.ErrHelp)
		if m := invalidValue.FindStringSubmatch(err.Error()); m != nil {
			return c, o, fmt.Errorf("%s: invalid value %s: %s", m[2], m[1], m[3])
		}
		if !help && !strings.HasPrefix(err.Error(), "flag provided but not defined") {
			return c, o, err
		}
		fs.SetOutput(stderr)
		if !help {
			fmt.Fprintln(stderr, err)
			err = fmt.Errorf("%w: %w", errUsage, err)
		}
		fs.Usage()
		return c, o, err
	}
	switch {
	case fs.NArg() > 0:
		return c, o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.Nodes < 1:
		return c, o, fmt.Errorf("-nodes: %d is not at least 1", c.Nodes)
	case c.Revision < 1:
		return c, o, fmt.Errorf("-revision: %d is not at least 1", c.Revision)
	case c.MaxUnavailable < 0:
		return c, o, fmt.Errorf("-max-unavailable: %d is negative", c.MaxUnavailable)
	case c.MaxSyncs < 0:
		return c, o, fmt.Errorf("-max-syncs: %d is negative", c.MaxSyncs)
	case c.Timeout < 0:
		return c, o, fmt.Errorf("-timeout: %v is negative", c.Timeout)
	case o.simulate && c.Kubeconfig == "":
		return c, o, errors.New("-simulate-kubelet: needs -kubeconfig")
	}
	if _, err := labels.Parse(c.NodeSelector); err != nil {
		return c, o, fmt.Errorf("-node-selector: %w", err)
	}
	return c, o, nil
}

// invalidValue matches the flag package's error for a value that does not parse.
var invalidValue = regexp.MustCompile(`^invalid value (".*") for flag (-\S+): (.*)$`)

// run runs the program and returns its exit status: 2 for bad flags, 1 for
// a failed rollout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, opts, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case err != nil:
		fmt.Fprintln(stderr, "staticpod-rollout:", err)
		return 2
	}
	if opts.verbose {
		ctx = klog.NewContext(ctx, klog.Background())
	} else {
		ctx = klog.NewContext(ctx, klog.Logger{})
	}
	if err := rollout(ctx, cfg, opts, stdout); err != nil {
		fmt.Fprintln(stderr, "staticpod-rollout:", err)
		return 1
	}
	return 0
}

// rollout runs in memory, on a real apiserver with a simulated kubelet, or on a real cluster.
func rollout(ctx context.Context, cfg staticpodrollout.Config, opts options, out io.Writer) error {
	if cfg.Kubeconfig == "" {
		return staticpodrollout.Simulate(ctx, cfg, staticpodrollout.NewMemoryClient(), out, nil)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return err
	}
	if opts.simulate {
		rc.QPS = staticpodrollout.SimulateQPS(cfg.Nodes)
		rc.Burst = int(2 * rc.QPS)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	if opts.simulate {
		return staticpodrollout.Simulate(ctx, cfg, client, out, nil)
	}
	return staticpodrollout.RunCluster(ctx, cfg, client, out)
}
