package helmconverge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/converge-dev/converge/addon"
)

// versionLabel is the label of every revision the driver makes, in Helm's
// release storage: the digest of the add-on version it carries.
const versionLabel = "converge.dev/version-digest"

// The annotations Helm puts on every object of a release.
const (
	releaseNameAnnotation      = "meta.helm.sh/release-name"
	releaseNamespaceAnnotation = "meta.helm.sh/release-namespace"
)

// Release is an add-on's Helm release.
type Release struct {
	// Namespace is the release's namespace, where its namespaced objects
	// go (Flux's targetNamespace).
	Namespace string
	// Name is the release's name.
	Name string
	// StorageNamespace is where Helm keeps the release's records (Flux's
	// storageNamespace); "" means Namespace, as the helm command keeps
	// them.
	StorageNamespace string
}

// ReleaseFunc names the Helm release of an add-on. Every call asks it,
// those that load no chart too (health, drift, rollback, uninstall,
// inspection): a release is found by its name and storage namespace.
type ReleaseFunc func(req addon.Request) (Release, error)

// ReleaseFromName is the default ReleaseFunc: an add-on named
// "namespace/name" (addon.Spec.Name, as kube.AddonObjects names them) is
// the release name in namespace, its records kept there too.
func ReleaseFromName(req addon.Request) (Release, error) {
	ns, n, ok := strings.Cut(req.Spec.Name, "/")
	if !ok || ns == "" || n == "" || strings.Contains(n, "/") {
		return Release{}, invalidf("request", "add-on name %q is not namespace/name", req.Spec.Name)
	}
	return Release{Namespace: ns, Name: n}, nil
}

// ReleaseOf returns the release an object belongs to, from the annotations
// Helm puts on every object it applies; false for an object Helm did not
// apply. A host watching Config.Watch maps an event to its add-on with it.
func ReleaseOf(obj metav1.Object) (namespace, name string, ok bool) {
	if isNil(obj) {
		return "", "", false
	}
	a := obj.GetAnnotations()
	namespace, name = a[releaseNamespaceAnnotation], a[releaseNameAnnotation]
	return namespace, name, namespace != "" && name != ""
}

// call is one driver call on one release, under the fencing token of the
// engine's claim (0: none).
type call struct {
	ctx             context.Context
	cfg             *action.Configuration
	namespace, name string
	timeout         time.Duration
	fence           int64
}

// defaultTimeout bounds hooks and tests when ctx has no deadline.
const defaultTimeout = 5 * time.Minute

func (d *Driver) begin(ctx context.Context, req addon.Request) (*call, error) {
	if d == nil || isNil(d.cfg.Cluster) || d.cfg.Release == nil {
		return nil, invalidf("driver", "Driver not made by NewDriver")
	}
	if ctx == nil {
		return nil, invalidf("request", "nil context")
	}
	r, err := d.cfg.Release(req)
	if err != nil {
		return nil, err
	}
	if err := chartutil.ValidateReleaseName(r.Name); err != nil {
		return nil, invalidf("request", "release name %q: %v", r.Name, err)
	}
	if r.Namespace == "" {
		return nil, invalidf("request", "release %q has no namespace", r.Name)
	}
	if r.StorageNamespace == "" {
		r.StorageNamespace = r.Namespace
	}
	cfg, err := d.cfg.Cluster.Helm(r.StorageNamespace, r.Namespace, newLogHandler(klog.FromContext(ctx), d.cfg.Redact))
	if err != nil {
		return nil, err
	}
	if cfg == nil || cfg.Releases == nil || isNil(cfg.KubeClient) {
		return nil, invalidf("cluster", "Helm(%q, %q) gave no release storage or kube client", r.StorageNamespace, r.Namespace)
	}
	cfg.Releases = withFence(cfg.Releases, req.Fence)
	c := &call{ctx: ctx, cfg: cfg, namespace: r.Namespace, name: r.Name, timeout: defaultTimeout, fence: req.Fence}
	if dl, ok := ctx.Deadline(); ok {
		c.timeout = max(time.Until(dl), time.Second)
	}
	return c, nil
}

func (c *call) String() string { return c.namespace + "/" + c.name }

func (c *call) waitOptions() []kube.WaitOption {
	return []kube.WaitOption{kube.WithWaitContext(c.ctx)}
}

// fail names what failed on the release, keeping Helm's error in the chain.
func (c *call) fail(what string, err error) error {
	return fmt.Errorf("helm: release %s: %s: %w", c, what, err)
}

// last returns the release's last revision, nil when it has none.
func (c *call) last() (*release.Release, error) {
	r, err := c.cfg.Releases.Last(c.name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("helm: read release %s: %w", c, err)
	}
	rel, ok := r.(*release.Release)
	if !ok || rel == nil || rel.Info == nil {
		return nil, fmt.Errorf("helm: release %s: unreadable revision %T", c, r)
	}
	return rel, nil
}

// unlocked returns the last revision of a release the call may write (see
// admit), first marking it failed if an action cut short left it pending:
// the engine's claim says no action of its own runs now, so the one that
// left it is gone.
func (c *call) unlocked() (*release.Release, error) {
	last, err := c.last()
	if err == nil {
		err = c.admit(last)
	}
	if err != nil || last == nil || !last.Info.Status.IsPending() {
		return last, err
	}
	was := last.Info.Status
	last.SetStatus(rcommon.StatusFailed, fmt.Sprintf("converge: unlocked from stale %s", was))
	if err := c.cfg.Releases.Update(last); err != nil {
		return nil, fmt.Errorf("helm: unlock release %s from %s: %w", c, was, err)
	}
	klog.FromContext(c.ctx).V(1).Info("Unlocked a release left pending", "release", c.String(), "revision", last.Version, "status", string(was))
	return last, nil
}

// history returns the release's revisions, newest first.
func (c *call) history() ([]*release.Release, error) {
	rs, err := c.cfg.Releases.History(c.name)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("helm: history of %s: %w", c, err)
	}
	var out []*release.Release
	for _, r := range rs {
		if rel, ok := r.(*release.Release); ok && rel != nil && rel.Info != nil {
			out = append(out, rel)
		}
	}
	slices.SortFunc(out, func(a, b *release.Release) int { return b.Version - a.Version })
	return out, nil
}

// rollbackTarget is the revision to roll back to: the one the engine
// recorded for req.To, if Helm keeps it and it carried req.To when
// deployed; else the newest such revision. A failed revision is never one.
func (c *call) rollbackTarget(req addon.Request) (int, error) {
	hist, err := c.history()
	if err != nil {
		return 0, err
	}
	digest := versionDigest(req.To)
	carries := func(r *release.Release) bool {
		st := r.Info.Status
		return r.Labels[versionLabel] == digest && (st == rcommon.StatusDeployed || st == rcommon.StatusSuperseded)
	}
	if n, err := strconv.Atoi(req.Revision); err == nil {
		for _, r := range hist {
			if r.Version == n && carries(r) {
				return n, nil
			}
		}
	}
	for _, r := range hist {
		if carries(r) {
			return r.Version, nil
		}
	}
	return 0, fmt.Errorf("helm: rollback of %s to %s (recorded revision %q): %w", c, req.To, req.Revision, ErrRollbackTargetMissing)
}
