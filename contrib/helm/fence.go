package helmconverge

import (
	"fmt"
	"maps"
	"strconv"

	hrelease "helm.sh/helm/v4/pkg/release"
	release "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
)

// fenceLabel is the label of every revision the driver makes, in Helm's
// release storage: the fencing token (addon.Request.Fence) of the claim it
// was written under.
const fenceLabel = "converge.dev/fence"

// fencedDriver is Helm's release storage driver for one call: every
// revision Helm creates through it carries the call's fencing token.
type fencedDriver struct {
	driver.Driver
	fence int64
}

// Create stamps the revision with the call's token, on a copy of its labels
// (a rollback shares them with the revision it rolls back to).
func (f fencedDriver) Create(key string, rls hrelease.Releaser) error {
	if rel, ok := rls.(*release.Release); ok && rel != nil {
		labels := maps.Clone(rel.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[fenceLabel] = strconv.FormatInt(f.fence, 10)
		rel.Labels = labels
	}
	return f.Driver.Create(key, rls)
}

// withFence returns release storage that writes through s and labels each
// revision it creates with fence; s itself when the call has no token.
func withFence(s *storage.Storage, fence int64) *storage.Storage {
	if fence <= 0 {
		return s
	}
	out := storage.Init(fencedDriver{Driver: s.Driver, fence: fence})
	out.MaxHistory = s.MaxHistory
	out.SetLogger(s.Logger().Handler())
	return out
}

// admit refuses a write to the release for a call that must not make one:
// its context ended (the engine's action deadline, or its process shutting
// down), or it is fenced out, the latest revision having been written under
// a newer claim's token (a replica that paused past its claim and resumed).
// A call without a token (Fence 0) is not fenced.
func (c *call) admit(last *release.Release) error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("helm: release %s: not written: %w", c, err)
	}
	if last == nil || c.fence <= 0 {
		return nil
	}
	if newest, err := strconv.ParseInt(last.Labels[fenceLabel], 10, 64); err == nil && newest > c.fence {
		return fmt.Errorf("helm: release %s: revision %d was written under fencing token %d, newer than this call's %d: %w",
			c, last.Version, newest, c.fence, ErrFenced)
	}
	return nil
}
