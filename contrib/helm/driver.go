package helmconverge

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge/addon"
)

// DefaultMaxHistory is how many revisions of a release Helm keeps when
// Config.MaxHistory is 0, as the helm command's default.
const DefaultMaxHistory = 10

// Config configures a Driver. Charts and Cluster are required; every other
// zero field takes its documented default.
type Config struct {
	// Charts gives an add-on's chart and values.
	Charts ChartFunc
	// Cluster is where releases live: NewCluster for a real cluster
	// (releases in Secrets), NewMemoryCluster in tests.
	Cluster Cluster
	// Release names an add-on's Helm release and where its records are
	// kept; nil means ReleaseFromName.
	Release ReleaseFunc
	// KeepHistory keeps a release's history on uninstall (helm uninstall
	// --keep-history): Helm marks the release uninstalled instead of
	// deleting its records, and a later install reuses the name.
	KeepHistory bool
	// MaxHistory bounds the revisions Helm keeps per release: 0 means
	// DefaultMaxHistory, -1 no bound. A rollback can only go back to a
	// revision Helm still keeps.
	MaxHistory int
	// Watch lists the kinds of the charts' objects the host watches to
	// reconcile an add-on when one of its objects changes (Helm sets no
	// owner reference: map an object to its release with ReleaseOf). The
	// driver only reports them (Driver.Watches).
	Watch []schema.GroupVersionKind
	// Redact cleans Helm's error and log text; nil means addon.DefaultRedact
	// (use the same function as addon.Config.Redact). The engine redacts
	// what reaches the add-on's status and events; this keeps Helm's own
	// logs clean too.
	Redact func(string) string
}

// Driver is an addon.Driver, addon.Tester and addon.DriftDetector on Helm 4's
// action package: each add-on is one Helm release, each add-on version one
// or more of its revisions.
//
// Install and Upgrade render the host's chart and values (Config.Charts) and
// install or upgrade the release without Helm's --wait: they return as soon
// as the objects are applied and the chart's hooks have run, and the
// engine's Health checks (the release's objects read from the cluster, each
// judged ready by its status) do the waiting under the engine's deadlines.
// Both are idempotent: an install of a release that exists upgrades it, an
// upgrade of a release that is gone installs it. They return the Helm
// revision they made, which the engine records; a rollback (Upgrade with
// req.Rollback) goes back to the revision the engine recorded for its
// target (req.Revision), or, when Helm no longer has it, to the newest
// revision that carried the target version; if none does, it fails with
// ErrRollbackTargetMissing.
//
// A release left pending-install, pending-upgrade or pending-rollback by a
// crashed action never wedges the add-on: Health reports it (an error
// matching ErrReleasePending, so the engine's deadlines move on), and the
// next Install, Upgrade, rollback or Uninstall marks that revision failed
// and carries on, the retry the engine's policy scheduled.
//
// Test runs the chart's test hooks (helm test); Drift dry-runs a server-side
// apply of every object of the deployed revision and reports the objects
// the cluster changed or lost. A drift correction (Policy.Drift Correct) is
// an upgrade to the same version, which re-applies every object.
//
// Every call takes its bound from ctx (the engine's ActionTimeout): hooks
// and tests are waited for until then, and a call whose ctx already ended
// writes nothing. A Driver is safe for concurrent use on different
// add-ons; the engine's claim keeps one action per add-on, and its fencing
// token keeps a late one out: every revision the driver writes carries the
// token of the claim it ran under (the release label converge.dev/fence),
// and an install, upgrade, rollback, uninstall or test whose token is older
// than the latest revision's writes nothing and fails with ErrFenced, the
// pending revision of a newer claim included (an uninstall without
// KeepHistory deletes the records, and their tokens with them). Inspect
// reports the version of the newest deployed revision, for the engine's
// takeovers.
type Driver struct {
	cfg Config
}

var (
	_ addon.Driver        = (*Driver)(nil)
	_ addon.Tester        = (*Driver)(nil)
	_ addon.DriftDetector = (*Driver)(nil)
	_ addon.Inspector     = (*Driver)(nil)
)

// NewDriver validates cfg and returns a Driver. The error matches
// converge.ErrInvalid.
func NewDriver(cfg Config) (*Driver, error) {
	var problems []string
	if isNil(cfg.Charts) {
		problems = append(problems, "nil Charts")
	}
	if isNil(cfg.Cluster) {
		problems = append(problems, "nil Cluster")
	}
	if cfg.MaxHistory < -1 {
		problems = append(problems, fmt.Sprintf("maxHistory %d is below -1", cfg.MaxHistory))
	}
	for _, gvk := range cfg.Watch {
		if gvk.Kind == "" || gvk.Version == "" {
			problems = append(problems, fmt.Sprintf("watch %q has no kind or version", gvk.String()))
		}
	}
	if err := invalid("config", problems...); err != nil {
		return nil, err
	}
	if cfg.Release == nil {
		cfg.Release = ReleaseFromName
	}
	if cfg.Redact == nil {
		cfg.Redact = addon.DefaultRedact
	}
	cfg.Watch = append([]schema.GroupVersionKind(nil), cfg.Watch...)
	return &Driver{cfg: cfg}, nil
}

// Watches returns the kinds the host watches (Config.Watch).
func (d *Driver) Watches() []schema.GroupVersionKind {
	if d == nil {
		return nil
	}
	return append([]schema.GroupVersionKind(nil), d.cfg.Watch...)
}

func (d *Driver) maxHistory() int {
	switch d.cfg.MaxHistory {
	case 0:
		return DefaultMaxHistory
	case -1:
		return 0
	}
	return d.cfg.MaxHistory
}

// Install installs req.To (or upgrades to it a release that exists) and
// returns the Helm revision that carries it.
func (d *Driver) Install(ctx context.Context, req addon.Request) (revision string, err error) {
	defer guard("Install", &err)
	return d.apply(ctx, req)
}

// Upgrade upgrades the release to req.To (installing a release that is
// gone), or rolls it back when req.Rollback, and returns the Helm revision
// that carries req.To.
func (d *Driver) Upgrade(ctx context.Context, req addon.Request) (revision string, err error) {
	defer guard("Upgrade", &err)
	if req.Rollback {
		return d.rollback(ctx, req)
	}
	return d.apply(ctx, req)
}

// apply makes the release carry req.To from the host's chart and values.
func (d *Driver) apply(ctx context.Context, req addon.Request) (string, error) {
	c, err := d.begin(ctx, req)
	if err != nil {
		return "", err
	}
	if req.To == "" {
		return "", invalidf("request", "no version to apply")
	}
	ch, err := d.chart(ctx, req)
	if err != nil {
		return "", err
	}
	last, err := c.unlocked()
	if err != nil {
		return "", err
	}
	install := last == nil || last.Info.Status == rcommon.StatusUninstalled
	if err := c.applyCRDs(ch, install); err != nil {
		return "", err
	}
	labels := map[string]string{versionLabel: versionDigest(req.To)}
	ctx, done := actionContext(ctx)
	defer done()
	var rel any
	if install {
		in := action.NewInstall(c.cfg)
		in.ReleaseName, in.Namespace, in.Replace = c.name, c.namespace, last != nil
		in.WaitStrategy, in.WaitOptions, in.Timeout = kube.HookOnlyStrategy, c.waitOptions(), c.timeout
		in.ForceConflicts, in.SkipCRDs, in.PostRenderer = true, true, ch.postRenderer()
		in.CreateNamespace = ch.CreateNamespace
		in.Labels, in.Description = labels, description("install", req.To)
		rel, err = in.RunWithContext(ctx, ch.Chart, ch.Values)
	} else {
		up := action.NewUpgrade(c.cfg)
		up.Namespace, up.MaxHistory, up.ResetValues = c.namespace, d.maxHistory(), true
		up.WaitStrategy, up.WaitOptions, up.Timeout = kube.HookOnlyStrategy, c.waitOptions(), c.timeout
		up.ServerSideApply, up.ForceConflicts, up.PostRenderer = "true", true, ch.postRenderer()
		up.Labels, up.Description = labels, description("upgrade", req.To)
		rel, err = up.RunWithContext(ctx, c.name, ch.Chart, ch.Values)
	}
	revision := revisionOf(rel)
	if err != nil {
		return revision, c.fail("apply "+req.To, err)
	}
	return revision, nil
}

// actionContext returns the context for one Helm install or upgrade, and
// the function to call once it returned: ctx ending while the action runs
// ends it, nothing ends it afterwards. Helm watches an upgrade's context
// beside the upgrade and marks the release failed when it finds the context
// done, even after the upgrade succeeded and returned; the caller's context
// (addon.Machine's action deadline) ends right after the call.
func actionContext(ctx context.Context) (context.Context, func()) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	return actx, func() { stop() }
}

// rollback rolls the release back to the revision that carried req.To.
func (d *Driver) rollback(ctx context.Context, req addon.Request) (string, error) {
	c, err := d.begin(ctx, req)
	if err != nil {
		return "", err
	}
	last, err := c.unlocked()
	if err != nil {
		return "", err
	}
	if last == nil {
		return "", fmt.Errorf("helm: rollback of %s to %s: %w", c, req.To, ErrReleaseMissing)
	}
	target, err := c.rollbackTarget(req)
	if err != nil {
		return "", err
	}
	rb := action.NewRollback(c.cfg)
	rb.Version, rb.MaxHistory = target, d.maxHistory()
	rb.WaitStrategy, rb.WaitOptions, rb.Timeout = kube.HookOnlyStrategy, c.waitOptions(), c.timeout
	rb.ServerSideApply, rb.ForceConflicts = "true", true
	rb.Description = cutRunes(fmt.Sprintf("converge: rollback to %s (revision %d)", req.To, target), action.MaxDescriptionLength)
	err = rb.Run(c.name)
	now, lastErr := c.last()
	revision := ""
	if lastErr == nil && now != nil && now.Version > last.Version {
		revision = revisionOf(now)
	}
	if err != nil {
		return revision, c.fail(fmt.Sprintf("rollback to %s (revision %d)", req.To, target), err)
	}
	return revision, lastErr
}

// Uninstall uninstalls the release; one already gone (or uninstalled with
// its history kept) succeeds.
func (d *Driver) Uninstall(ctx context.Context, req addon.Request) (err error) {
	defer guard("Uninstall", &err)
	c, err := d.begin(ctx, req)
	if err != nil {
		return err
	}
	last, err := c.unlocked()
	if err != nil || last == nil || last.Info.Status == rcommon.StatusUninstalled {
		return err
	}
	un := action.NewUninstall(c.cfg)
	un.KeepHistory, un.IgnoreNotFound, un.DeletionPropagation = d.cfg.KeepHistory, true, "background"
	un.WaitStrategy, un.WaitOptions, un.Timeout = kube.HookOnlyStrategy, c.waitOptions(), c.timeout
	un.Description = "converge: uninstall"
	if _, err := un.Run(c.name); err != nil {
		return c.fail("uninstall", err)
	}
	return nil
}

// Test runs the chart's test hooks on the release (helm test) and waits
// for them until ctx ends. A chart without tests passes.
func (d *Driver) Test(ctx context.Context, req addon.Request) (err error) {
	defer guard("Test", &err)
	c, err := d.begin(ctx, req)
	if err != nil {
		return err
	}
	last, err := c.last()
	if err == nil {
		err = c.admit(last)
	}
	if err != nil {
		return err
	}
	if last == nil {
		return fmt.Errorf("helm: tests of %s: %w", c, ErrReleaseMissing)
	}
	rt := action.NewReleaseTesting(c.cfg)
	rt.Namespace, rt.Timeout, rt.WaitOptions = c.namespace, c.timeout, c.waitOptions()
	_, shutdown, err := rt.Run(c.name)
	if shutdown != nil {
		err = errors.Join(err, shutdown())
	}
	if err != nil {
		return c.fail("tests of "+req.To, err)
	}
	return nil
}

// chart asks the host for the chart, values and settings of req.To.
func (d *Driver) chart(ctx context.Context, req addon.Request) (Chart, error) {
	ch, err := d.cfg.Charts(ctx, req)
	if err != nil {
		return Chart{}, fmt.Errorf("helm: chart of %s at %s: %w", req.Spec.Name, req.To, err)
	}
	if ch.Chart == nil || ch.Chart.Metadata == nil {
		return Chart{}, invalidf("chart", "the chart function gave no chart for %s at %s", req.Spec.Name, req.To)
	}
	if err := ch.Chart.Validate(); err != nil {
		return Chart{}, invalidf("chart", "%s: %v", ch.Chart.Name(), err)
	}
	if problems := ch.problems(); len(problems) > 0 {
		return Chart{}, invalid("chart "+ch.Chart.Name(), problems...)
	}
	return ch, nil
}

// guard turns a panic below a driver call (in the host's chart function,
// or in Helm on a chart it cannot handle) into the call's error: the driver
// never panics on its input.
func guard(method string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("helm: %s panicked: %v", method, r)
	}
}

// description is a revision's description in helm history.
func description(what, version string) string {
	return cutRunes("converge: "+what+" of "+version, action.MaxDescriptionLength)
}

func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// revisionOf returns the revision of a release Helm returned, or "".
func revisionOf(r any) string {
	rel, ok := r.(*release.Release)
	if !ok || rel == nil || rel.Version <= 0 {
		return ""
	}
	return fmt.Sprint(rel.Version)
}
