package helmconverge

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/converge-dev/converge/addon"
	ckube "github.com/converge-dev/converge/kube"
)

// Health reports the release healthy when its last revision is deployed,
// carries the installed version (req.From) and every one of its objects
// exists and is ready (its status says so: Deployments rolled out, Jobs
// complete, CRDs established, anything with a Ready condition Ready). A
// release that is missing, failed, uninstalled or carries another version,
// and a missing or not yet ready object, is unhealthy; a revision left
// pending and an object that cannot be read are health unknown (the error
// says why; ErrReleasePending for the first).
func (d *Driver) Health(ctx context.Context, req addon.Request) (h addon.Health, err error) {
	defer func() {
		if err != nil {
			h = addon.HealthUnknown
		}
	}()
	defer guard("Health", &err)
	c, err := d.begin(ctx, req)
	if err != nil {
		return addon.HealthUnknown, err
	}
	rel, err := c.deployed(req.From)
	if err != nil || rel == nil {
		return healthOf(err)
	}
	objs, err := c.objects(rel)
	if err != nil {
		return addon.HealthUnknown, err
	}
	for _, info := range objs {
		live, err := c.read(info)
		if apierrors.IsNotFound(err) {
			return addon.HealthUnhealthy, nil
		}
		if err != nil {
			return addon.HealthUnknown, c.fail("read "+infoName(info), err)
		}
		if err := ckube.ObjectReady(live); err != nil {
			if errors.Is(err, ckube.ErrNotReady) || errors.Is(err, ckube.ErrObjectFailed) {
				return addon.HealthUnhealthy, nil
			}
			return addon.HealthUnknown, c.fail("judge "+infoName(info), err)
		}
	}
	return addon.HealthHealthy, nil
}

// errUnhealthy marks what deployed found wrong with the release itself.
var errUnhealthy = errors.New("helm: release unhealthy")

func healthOf(err error) (addon.Health, error) {
	if err == nil || errors.Is(err, errUnhealthy) {
		return addon.HealthUnhealthy, nil
	}
	return addon.HealthUnknown, err
}

// deployed returns the release's last revision if it is deployed and
// carries version (when the revision names one); nil and nil when there is
// no release, an error matching errUnhealthy when it is not deployed or
// carries another version, ErrReleasePending when it was left pending.
func (c *call) deployed(version string) (*release.Release, error) {
	rel, err := c.last()
	if err != nil || rel == nil {
		return nil, err
	}
	switch st := rel.Info.Status; {
	case st.IsPending():
		return nil, fmt.Errorf("helm: release %s revision %d is %s: %w", c, rel.Version, st, ErrReleasePending)
	case st != rcommon.StatusDeployed:
		return nil, fmt.Errorf("helm: release %s revision %d is %s: %w", c, rel.Version, st, errUnhealthy)
	}
	if got, ok := rel.Labels[versionLabel]; ok && version != "" && got != versionDigest(version) {
		return nil, fmt.Errorf("helm: release %s revision %d carries another version than %s: %w", c, rel.Version, version, errUnhealthy)
	}
	return rel, nil
}

// objects returns the objects of a revision's manifest (not its hooks),
// each with the client that reads it.
func (c *call) objects(rel *release.Release) (kube.ResourceList, error) {
	if rel.Manifest == "" {
		return nil, nil
	}
	objs, err := c.cfg.KubeClient.Build(bytes.NewBufferString(rel.Manifest), false)
	if err != nil {
		return nil, c.fail(fmt.Sprintf("read the manifest of revision %d", rel.Version), err)
	}
	return objs, nil
}

// read reads an object from the cluster.
func (c *call) read(info *resource.Info) (*unstructured.Unstructured, error) {
	if info.Client == nil || info.Mapping == nil {
		return nil, fmt.Errorf("helm: %s has no client", infoName(info))
	}
	obj, err := resource.NewHelper(info.Client, info.Mapping).Get(info.Namespace, info.Name)
	if err != nil {
		return nil, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("helm: %s read as %T", infoName(info), obj)
	}
	return u, nil
}

func infoName(info *resource.Info) string {
	kind := ""
	if info.Mapping != nil {
		kind = info.Mapping.GroupVersionKind.Kind + " "
	}
	if info.Namespace == "" {
		return kind + info.Name
	}
	return kind + info.Namespace + "/" + info.Name
}
