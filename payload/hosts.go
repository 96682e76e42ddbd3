package payload

import (
	"context"

	"github.com/converge-dev/converge/payload/manifest"
)

// Payload is a loaded payload: its release and its manifests in apply order.
type Payload struct {
	// Release is the release the payload carries; an empty Version is taken from the
	// desired release.
	Release Release
	// Manifests are applied in this order (manifest.Load returns them in
	// manifest.CompareFiles order).
	Manifests []manifest.Manifest
}

// Loader retrieves and loads the payload of a desired release.
type Loader interface {
	Load(ctx context.Context, desired Release) (*Payload, error)
}

// LoaderFunc adapts a function to Loader.
type LoaderFunc func(ctx context.Context, desired Release) (*Payload, error)

// Load calls f.
func (f LoaderFunc) Load(ctx context.Context, desired Release) (*Payload, error) {
	return f(ctx, desired)
}

// Applier applies one manifest to the cluster in the given state. It returns an
// *UpdateError to stop the worker from trying the manifest again in this apply. An
// applier must not act once ctx has ended: that is how a replaced release stops at
// once.
type Applier interface {
	Apply(ctx context.Context, m *manifest.Manifest, state State) error
}

// ApplierFunc adapts a function to Applier.
type ApplierFunc func(ctx context.Context, m *manifest.Manifest, state State) error

// Apply calls f.
func (f ApplierFunc) Apply(ctx context.Context, m *manifest.Manifest, state State) error {
	return f(ctx, m, state)
}

// Deleter removes the object of a manifest marked for deletion (manifest.Manifest.Delete). It
// returns nil when it deleted the object, and the apiserver's NotFound
// (apierrors.IsNotFound) when the object was already gone: the worker counts that as
// done but not as a deletion, so that its events name only the objects it removed.
type Deleter interface {
	Delete(ctx context.Context, m *manifest.Manifest) error
}

// DeleterFunc adapts a function to Deleter.
type DeleterFunc func(ctx context.Context, m *manifest.Manifest) error

// Delete calls f.
func (f DeleterFunc) Delete(ctx context.Context, m *manifest.Manifest) error { return f(ctx, m) }

// Readiness tells whether the object of an applied manifest is ready: a Job has
// completed, a Deployment has rolled out, an operator reports the new version. It
// returns nil when ready and an error saying what it waits on otherwise; an
// *UpdateError stops the wait at once with that error.
type Readiness interface {
	Ready(ctx context.Context, m *manifest.Manifest) error
}

// ReadinessFunc adapts a function to Readiness.
type ReadinessFunc func(ctx context.Context, m *manifest.Manifest) error

// Ready calls f.
func (f ReadinessFunc) Ready(ctx context.Context, m *manifest.Manifest) error { return f(ctx, m) }

// Preconditions can block an update from one release to another, as the
// cluster-version operator's Upgradeable=False does: a non-nil error blocks it until
// the check passes or the desired release is forced (Release.Force).
type Preconditions interface {
	Check(ctx context.Context, from, to Release) error
}

// PreconditionsFunc adapts a function to Preconditions.
type PreconditionsFunc func(ctx context.Context, from, to Release) error

// Check calls f.
func (f PreconditionsFunc) Check(ctx context.Context, from, to Release) error {
	return f(ctx, from, to)
}

// StatusWriter persists the worker's status, e.g. in the status of the host's custom
// resource. A conflict (converge.ErrConflict, or the apiserver's 409) makes the worker write its
// latest status again at once, up to 3 times in a row; another error, or a fourth
// conflict, after the notify interval.
type StatusWriter interface {
	WriteStatus(ctx context.Context, s Status) error
}

// StatusWriterFunc adapts a function to StatusWriter.
type StatusWriterFunc func(ctx context.Context, s Status) error

// WriteStatus calls f.
func (f StatusWriterFunc) WriteStatus(ctx context.Context, s Status) error { return f(ctx, s) }

var (
	_ Loader        = LoaderFunc(nil)
	_ Applier       = ApplierFunc(nil)
	_ Deleter       = DeleterFunc(nil)
	_ Readiness     = ReadinessFunc(nil)
	_ Preconditions = PreconditionsFunc(nil)
	_ StatusWriter  = StatusWriterFunc(nil)
)
