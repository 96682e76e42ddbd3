package helmconverge

import (
	"bytes"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
)

// CRDPolicy is what the driver does with the CRDs in a chart's crds/
// directory, as Flux's helm-controller's install.crds and upgrade.crds. A
// CRD is never deleted: not when the chart drops it, not on uninstall.
type CRDPolicy string

// The CRD policies.
const (
	// CRDsCreate creates the chart's CRDs that are missing and never
	// changes those that exist (Helm's own rule on install).
	CRDsCreate CRDPolicy = "Create"
	// CRDsCreateReplace creates the chart's CRDs and replaces those that
	// exist (server-side apply, taking over their fields).
	CRDsCreateReplace CRDPolicy = "CreateReplace"
	// CRDsSkip leaves the chart's CRDs alone: the host installs them.
	CRDsSkip CRDPolicy = "Skip"
)

// CRDPolicies are the CRD policies of an install and of an upgrade. The
// zero value is Flux's default: Create on install, Skip on upgrade (Helm's
// own behaviour).
type CRDPolicies struct {
	// Install is the policy of an install; "" means CRDsCreate.
	Install CRDPolicy `json:"install,omitempty"`
	// Upgrade is the policy of an upgrade; "" means CRDsSkip.
	Upgrade CRDPolicy `json:"upgrade,omitempty"`
}

// of returns the policy of an install or of an upgrade, defaults applied.
func (p CRDPolicies) of(install bool) CRDPolicy {
	switch {
	case install && p.Install == "":
		return CRDsCreate
	case install:
		return p.Install
	case p.Upgrade == "":
		return CRDsSkip
	}
	return p.Upgrade
}

func (p CRDPolicies) problems() []string {
	var out []string
	for _, pol := range [...]struct{ step, policy CRDPolicy }{{"install", p.Install}, {"upgrade", p.Upgrade}} {
		switch pol.policy {
		case "", CRDsCreate, CRDsCreateReplace, CRDsSkip:
		default:
			out = append(out, fmt.Sprintf("%s CRD policy %q is not Create, CreateReplace, Skip or empty", pol.step, pol.policy))
		}
	}
	return out
}

// applyCRDs applies the chart's CRDs under the policy of an install or an
// upgrade, once the chart rendered (a release whose render fails creates no
// CRD), waits for them to be established, and makes Helm's REST mapper
// forget what it knew, as Helm's own CRD install does. Helm itself then
// skips them.
func (c *call) applyCRDs(ch Chart, install bool) error {
	policy := ch.CRDs.of(install)
	crds := ch.Chart.CRDObjects()
	if policy == CRDsSkip || len(crds) == 0 {
		return nil
	}
	if err := c.render(ch, install); err != nil {
		return err
	}
	var applied kube.ResourceList
	for _, crd := range crds {
		if crd.File == nil {
			continue
		}
		res, err := c.cfg.KubeClient.Build(bytes.NewBuffer(crd.File.Data), false)
		if err != nil {
			return c.fail("read CRD "+crd.Filename, err)
		}
		if policy == CRDsCreateReplace {
			applied = append(applied, res...)
			continue
		}
		for _, info := range res {
			_, err := c.cfg.KubeClient.Create(kube.ResourceList{info})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return c.fail("create CRD "+info.Name, err)
			}
			applied = append(applied, info)
		}
	}
	if policy == CRDsCreateReplace && len(applied) > 0 {
		if _, err := c.cfg.KubeClient.Update(nil, applied, kube.ClientUpdateOptionServerSideApply(true, true)); err != nil {
			return c.fail("apply the chart's CRDs", err)
		}
	}
	return c.established(applied)
}

// established waits for crds to be established and resets Helm's REST
// mapper, so that the chart's objects of their kinds are found.
func (c *call) established(crds kube.ResourceList) error {
	if len(crds) == 0 {
		return nil
	}
	waiter, err := c.cfg.KubeClient.GetWaiter(kube.StatusWatcherStrategy)
	if w, ok := c.cfg.KubeClient.(kube.InterfaceWaitOptions); ok {
		waiter, err = w.GetWaiterWithOptions(kube.StatusWatcherStrategy, c.waitOptions()...)
	}
	if err != nil {
		return c.fail("wait for the chart's CRDs", err)
	}
	if err := waiter.Wait(crds, c.timeout); err != nil {
		return c.fail("wait for the chart's CRDs", err)
	}
	if g := c.cfg.RESTClientGetter; g != nil {
		if m, err := g.ToRESTMapper(); err == nil {
			if r, ok := m.(meta.ResettableRESTMapper); ok {
				r.Reset()
			}
		}
	}
	return nil
}

// render renders the chart as the install or upgrade will, post-renderers
// included, and applies nothing: Helm's client-only dry run (helm
// template), with the cluster's Kubernetes version and API versions.
func (c *call) render(ch Chart, install bool) error {
	caps, err := c.capabilities()
	if err != nil {
		return c.fail("render "+ch.Chart.Name(), err)
	}
	dry := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(c.cfg.Logger().Handler())))
	dry.DryRunStrategy, dry.ReleaseName, dry.Namespace = action.DryRunClient, c.name, c.namespace
	dry.SkipCRDs, dry.IsUpgrade, dry.PostRenderer = true, !install, ch.postRenderer()
	dry.KubeVersion, dry.APIVersions = &caps.KubeVersion, caps.APIVersions
	if _, err := dry.RunWithContext(c.ctx, ch.Chart, ch.Values); err != nil {
		return c.fail("render "+ch.Chart.Name(), err)
	}
	return nil
}

// capabilities are the cluster's, as Helm reads them for a render.
func (c *call) capabilities() (*common.Capabilities, error) {
	if c.cfg.Capabilities != nil {
		return c.cfg.Capabilities, nil
	}
	if c.cfg.RESTClientGetter == nil {
		return common.DefaultCapabilities.Copy(), nil
	}
	dc, err := c.cfg.RESTClientGetter.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return nil, err
	}
	apis, err := action.GetVersionSet(dc)
	var failed *discovery.ErrGroupDiscoveryFailed
	if err != nil && !errors.As(err, &failed) {
		return nil, err
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = common.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor}
	caps.APIVersions = apis
	return caps, nil
}
