package payloadapply

import (
	"fmt"
	"time"

	"github.com/converge-dev/converge/internal/cli"
)

// CheckOptions returns a *cli.UsageError naming the example's first flag out
// of range: an empty -release, a negative -interval, an unknown plan
// -format, or leader-election timings client-go refuses.
func CheckOptions(release string, interval time.Duration, format string, e Election) error {
	switch {
	case release == "":
		return cli.Errorf("release", "must not be empty")
	case interval < 0:
		return cli.Errorf("interval", "must not be negative, got %s", interval)
	case format != "text" && format != "mermaid" && format != "dot":
		return cli.Errorf("format", "unknown plan format %q (want text, mermaid or dot)", format)
	case e.Identity == "":
		return cli.Errorf("identity", "must not be empty")
	case e.LeaseDuration <= e.RenewDeadline:
		return cli.Errorf("lease-duration", "must be longer than -renew-deadline (%s), got %s", e.RenewDeadline, e.LeaseDuration)
	case e.RetryPeriod <= 0 || e.RenewDeadline <= e.RetryPeriod:
		return cli.Errorf("retry-period", "must be positive and shorter than -renew-deadline (%s), got %s", e.RenewDeadline, e.RetryPeriod)
	}
	return nil
}

// FieldManager is the field manager of the objects and the status an
// instance writes: payload-apply, or payload-apply/<identity> for an
// instance under leader election, so that each writes as itself.
func FieldManager(leaderElect bool, identity string) string {
	if leaderElect {
		return "payload-apply/" + identity
	}
	return "payload-apply"
}

// String names the cluster in the example's first line.
func (c *Cluster) String() string {
	if c.Fake != nil {
		return fmt.Sprintf("an in-memory cluster (ConfigMap %s is refused twice)", FlakyConfigMap)
	}
	return "the cluster of " + c.kubeconfig
}
