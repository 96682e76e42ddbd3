// Command addon-lifecycle runs the addon engine's whole story.
//
// With no flags it plays one add-on on an in-memory cluster (client-go's
// fake clientset, a simulated deployment controller and a fake clock) in
// well under a second: a failed install retried with backoff, an upgrade,
// an upgrade that never becomes healthy and is rolled back, and a deletion.
//
// With -kubeconfig it runs a controller on a real cluster: it installs the
// Addon custom resource definition (addons.converge.dev), reconciles every
// Addon through a work queue with -workers workers, creates -addons Addons
// in -namespace at v1, waits until all run, bumps them to v2, waits again,
// deletes them and checks that none of their objects is left. On a cluster
// without kube-controller-manager (such as the integration tests' bare
// kube-apiserver) it also simulates the deployment controller.
//
// The controller adopts the engine through package kube: kube.AddonObjects
// is its addon.Store (the Addon's status subresource, written over the
// resource version the engine read) and kube.RecordLegacyEvents records the
// engine's events on each Addon. The driver, the controller and the
// scenarios live in internal/e2e/addonlifecycle.
//
// -diagram prints the default transition table as a Mermaid state diagram.
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
	"syscall"
	"time"

	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/internal/e2e/addonlifecycle"
)

const command = "addon-lifecycle"

// config is what the flags ask for.
type config struct {
	kubeconfig string
	diagram    bool
	cluster    addonlifecycle.ClusterOptions
}

// usageError is a wrong command line (exit status 2): line is what is
// wrong, or empty when the error and the usage are already on stderr.
type usageError struct{ line string }

func (e *usageError) Error() string { return e.line }

func usageErrorf(format string, args ...any) error {
	return &usageError{line: fmt.Sprintf(format, args...)}
}

// badValue is the flag package's message for a value that does not parse.
var badValue = regexp.MustCompile(`^invalid value (".*") for flag -([\w-]+): (.*)$`)

// parseFlags reads args. -h prints the usage on stderr and returns
// flag.ErrHelp; an unknown flag prints its error and the usage; any other
// mistake is a *usageError whose line names its flag.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "run a controller on this cluster instead of the in-memory story")
	fs.IntVar(&cfg.cluster.Addons, "addons", 20, "with -kubeconfig: how many Addons to create")
	fs.IntVar(&cfg.cluster.Workers, "workers", 4, "with -kubeconfig: how many Addons the controller reconciles at once")
	fs.StringVar(&cfg.cluster.Namespace, "namespace", "addons", "with -kubeconfig: the namespace of the Addons")
	fs.DurationVar(&cfg.cluster.Timeout, "timeout", 5*time.Minute, "with -kubeconfig: how long the whole run may take")
	fs.BoolVar(&cfg.diagram, "diagram", false, "print the default transition table as a Mermaid state diagram and exit")
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "Usage of %s:\n", command)
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return cfg, err
	case err != nil && badValue.MatchString(err.Error()):
		m := badValue.FindStringSubmatch(err.Error())
		return cfg, usageErrorf("-%s: invalid value %s: %s", m[2], m[1], m[3])
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		usage()
		return cfg, &usageError{}
	case fs.NArg() > 0:
		return cfg, usageErrorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.kubeconfig == "" {
		var needs error
		fs.Visit(func(f *flag.Flag) {
			if needs == nil && f.Name != "diagram" {
				needs = usageErrorf("-%s: needs -kubeconfig", f.Name)
			}
		})
		return cfg, needs
	}
	if err := cfg.cluster.Validate(); err != nil {
		return cfg, &usageError{line: err.Error()}
	}
	return cfg, nil
}

// run is the command; it returns the exit status: 0, 1 when the run
// failed, 2 for a wrong command line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	var usage *usageError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		if usage.line != "" {
			fmt.Fprintf(stderr, "%s: %s\n", command, usage.line)
		}
		return 2
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		return 2
	}
	if cfg.diagram {
		fmt.Fprint(stdout, addon.DefaultTable().Mermaid())
		return 0
	}
	if err := addonlifecycle.Run(ctx, cfg.kubeconfig, cfg.cluster, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", command, err)
		return 1
	}
	return 0
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
