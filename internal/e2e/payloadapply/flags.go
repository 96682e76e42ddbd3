package payloadapply

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Options are the command line of the example.
type Options struct {
	Kubeconfig string
	Release    string
	Interval   time.Duration
	Namespace  string
	// SimulateJobs completes the payload's Jobs, for a cluster without a job controller.
	SimulateJobs bool
	// LeaderElect runs the work only while holding the Lease; Identity names this
	// instance in the Lease and in the field manager.
	LeaderElect                               bool
	Identity                                  string
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Plan prints the dry-run plan in Format instead of applying.
	Plan   bool
	Format string
}

// FieldManager is the field manager of the objects and the status the instance writes.
func (o Options) FieldManager() string {
	if o.LeaderElect {
		return "payload-apply/" + o.Identity
	}
	return "payload-apply"
}

// ErrUsage is a command line that cannot run: the program exits with status 2.
var ErrUsage = errors.New("usage")

// ParseFlags parses the example's command line. -h prints the usage to stderr and
// returns flag.ErrHelp; an unknown flag prints the usage too; a bad value prints one
// line "payload-apply: -flag: what is wrong". Both return an error wrapping ErrUsage.
func ParseFlags(args []string, stderr io.Writer) (Options, error) {
	o := Options{}
	fs := flag.NewFlagSet("payload-apply", flag.ContinueOnError)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "apply to the cluster of this kubeconfig file instead of an in-memory one")
	fs.StringVar(&o.Release, "release", "1.0.0", "version of the release; every object is annotated with it, so a new version updates every object")
	fs.DurationVar(&o.Interval, "interval", 0, "time between two reconciles (default 30s on a cluster, 3m in memory)")
	fs.BoolVar(&o.SimulateJobs, "simulate-job-controller", false, "mark the payload's Job Complete, for an apiserver without kube-controller-manager (needs -kubeconfig)")
	fs.StringVar(&o.Namespace, "namespace", "default", "namespace of the status ConfigMap and of the leader-election Lease")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "apply only while holding the Lease payload-apply (needs -kubeconfig); the field manager becomes payload-apply/<identity>")
	fs.StringVar(&o.Identity, "identity", "", "name of this instance in the Lease (default <host name>_<process id>)")
	fs.DurationVar(&o.LeaseDuration, "lease-duration", 15*time.Second, "how long a follower waits before it takes a Lease that is not renewed")
	fs.DurationVar(&o.RenewDeadline, "renew-deadline", 10*time.Second, "how long the leader tries to renew the Lease before it stops acting")
	fs.DurationVar(&o.RetryPeriod, "retry-period", 2*time.Second, "time between two tries to acquire or renew the Lease")
	fs.BoolVar(&o.Plan, "plan", false, "print the dry-run plan and exit")
	fs.StringVar(&o.Format, "format", "text", "plan format: text, mermaid or dot")
	fs.SetOutput(io.Discard)
	usage := func() {
		fs.SetOutput(stderr)
		fmt.Fprintln(stderr, "Usage of payload-apply:")
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return o, err
	case err != nil && strings.HasPrefix(err.Error(), "flag provided but not defined"):
		fmt.Fprintln(stderr, "payload-apply:", err)
		usage()
		return o, fmt.Errorf("%w: %w", ErrUsage, err)
	case err != nil:
		return o, badFlag(stderr, flagError(err.Error()))
	case fs.NArg() > 0:
		return o, badFlag(stderr, fmt.Sprintf("%s: takes no arguments", fs.Arg(0)))
	}
	if o.Identity == "" {
		o.Identity = DefaultIdentity()
	}
	if msg := o.check(); msg != "" {
		return o, badFlag(stderr, msg)
	}
	return o, nil
}

// check returns what is wrong with o as "-flag: what", "" when nothing is.
func (o Options) check() string {
	switch {
	case o.Release == "":
		return "-release: must not be empty"
	case o.Interval < 0:
		return fmt.Sprintf("-interval: must not be negative, got %s", o.Interval)
	case o.Format != "text" && o.Format != "mermaid" && o.Format != "dot":
		return fmt.Sprintf("-format: unknown plan format %q (want text, mermaid or dot)", o.Format)
	case o.Kubeconfig == "" && o.LeaderElect:
		return "-leader-elect: needs -kubeconfig"
	case o.Kubeconfig == "" && o.SimulateJobs:
		return "-simulate-job-controller: needs -kubeconfig (the in-memory cluster simulates it already)"
	case o.LeaseDuration <= o.RenewDeadline:
		return fmt.Sprintf("-lease-duration: must be longer than -renew-deadline (%s), got %s", o.RenewDeadline, o.LeaseDuration)
	case o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod:
		return fmt.Sprintf("-retry-period: must be positive and shorter than -renew-deadline (%s), got %s", o.RenewDeadline, o.RetryPeriod)
	}
	return ""
}

// flagError rewrites the flag package's "invalid value "x" for flag -f: why" as
// "-f: invalid value "x": why".
func flagError(msg string) string {
	for _, sep := range []string{" for flag -", " for -"} {
		if before, after, ok := strings.Cut(msg, sep); ok {
			name, why, _ := strings.Cut(after, ": ")
			return fmt.Sprintf("-%s: %s: %s", name, before, why)
		}
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: "); ok {
		return name + ": needs a value"
	}
	return msg
}

func badFlag(stderr io.Writer, msg string) error {
	fmt.Fprintln(stderr, "payload-apply:", msg)
	return fmt.Errorf("%w: %s", ErrUsage, msg)
}
