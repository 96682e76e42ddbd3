package helmconverge

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"

	"github.com/converge-dev/converge/addon"
)

// Inspect reports what the release runs: the add-on version of its newest
// deployed revision, and that revision; nothing when no revision is
// deployed (no release, an uninstalled one, one whose only revision failed
// or was left pending). A revision keeps a digest of its version: Inspect
// names the version among those the request names (req.From, req.To,
// req.Spec.Version) or its revision's description; a revision whose version
// is none of them, or that converge did not write, is reported as
// "revision N (…)", a version the engine knows for a mismatch.
func (d *Driver) Inspect(ctx context.Context, req addon.Request) (inst addon.Installed, err error) {
	defer guard("Inspect", &err)
	c, err := d.begin(ctx, req)
	if err != nil {
		return addon.Installed{}, err
	}
	hist, err := c.history()
	if err != nil {
		return addon.Installed{}, err
	}
	for _, r := range hist {
		if r.Info.Status == rcommon.StatusDeployed {
			return addon.Installed{Version: versionOf(r, req), Revision: strconv.Itoa(r.Version)}, nil
		}
	}
	return addon.Installed{}, nil
}

// versionOf names the add-on version revision r carries (see Inspect).
func versionOf(r *release.Release, req addon.Request) string {
	digest, ok := r.Labels[versionLabel]
	if !ok {
		return fmt.Sprintf("revision %d (not written by converge)", r.Version)
	}
	for _, v := range [...]string{req.From, req.To, req.Spec.Version, describedVersion(r.Info.Description)} {
		if v != "" && versionDigest(v) == digest {
			return v
		}
	}
	return fmt.Sprintf("revision %d (another version)", r.Version)
}

// describedVersion is the version a revision's description names, as
// description and the rollback write it ("" when it names none).
func describedVersion(desc string) string {
	for _, prefix := range [...]string{"converge: install of ", "converge: upgrade of "} {
		if v, ok := strings.CutPrefix(desc, prefix); ok {
			return v
		}
	}
	if v, ok := strings.CutPrefix(desc, "converge: rollback to "); ok {
		if i := strings.LastIndex(v, " (revision "); i >= 0 {
			return v[:i]
		}
	}
	return ""
}
