package addon

import "context"

// Driver is what the host implements to act on its add-ons. Each call must be
// idempotent (an action whose outcome a crash lost runs again) and must
// stop and return when ctx ends. Request carries the host's object
// (Object.Host), so one Driver serves every add-on.
//
// Every mutating call carries the fencing token of its claim
// (Request.Fence), larger than the token of every claim before it. A claim
// only keeps two Machines from acting at once while their clocks agree and
// neither pauses: a replica that stalls past its claim's expiry (a long GC
// pause, a frozen VM, a partition) and then resumes still runs its call,
// after another Machine took the add-on over. So a Driver must not write
// under a token older than the newest it has seen: it records the token
// with what it writes and refuses a call whose token is older
// (helmconverge labels every Helm revision with it). Its refusal is an
// error like any other; the engine discards the outcome of a claim it no
// longer holds anyway.
//
// Install and Upgrade return the driver's revision: its own name for what the
// call applied, such as a Helm release revision ("" for a driver that has
// none). The engine records it with the attempt (Attempt.Revision) and, on
// success, as the installed version's revision; a rollback to a verified
// version hands that version's revision back in Request.Revision. A revision
// longer than MaxRevisionLength bytes is not recorded.
type Driver interface {
	// Install applies req.To onto a cluster where nothing is installed.
	Install(ctx context.Context, req Request) (revision string, err error)
	// Upgrade applies req.To onto the installed req.From (the same version
	// for a re-apply; the last good one, at req.Revision, when req.Rollback).
	Upgrade(ctx context.Context, req Request) (revision string, err error)
	// Uninstall removes the add-on; removing what is already gone succeeds.
	Uninstall(ctx context.Context, req Request) error
	// Health reports the add-on's health; an error means it could not be read.
	Health(ctx context.Context, req Request) (Health, error)
}

// DriftDetector is implemented by a Driver that can tell whether the
// cluster drifted from what the add-on applied (Policy.Drift).
type DriftDetector interface {
	// Drift reports drift of req.From (the installed version) with a short
	// description of what differs.
	Drift(ctx context.Context, req Request) (drifted bool, detail string, err error)
}

// Inspector is implemented by a Driver that can tell what version the
// cluster runs (helmconverge reads it from the release). The engine asks it
// whenever its status may not know: on the look that takes over an expired
// claim, in the same Reconcile, before anything else runs (the attempt is
// then found applied and recorded as succeeded, or lost; see
// Status.LostAttempts); after an outcome that arrived under a claim no
// longer held; and beside each health read while a mismatch stands. A
// version other than Status.InstalledVersion is a mismatch
// (Status.Mismatch), which the status reports, and which Policy.Drift
// Correct corrects in Running by restoring the installed version. Without
// an Inspector the engine trusts its status.
type Inspector interface {
	// Inspect reports what the cluster runs. req.From is the installed
	// version and req.To, after a takeover, the version the lost attempt
	// applied: a driver that keeps only digests of versions names one of
	// them, or req.Spec.Version.
	Inspect(ctx context.Context, req Request) (Installed, error)
}

// Tester is implemented by a Driver that can test the add-on (Policy.Test).
type Tester interface {
	// Test runs the tests of req.To, the version just installed or upgraded.
	Test(ctx context.Context, req Request) error
}

// Store reads and writes add-ons with optimistic concurrency.
type Store interface {
	// Get reads the add-on named name afresh (after a conflict: not from a
	// cache that may still be stale).
	Get(ctx context.Context, name string) (Object, error)
	// UpdateStatus writes status if the add-on is still at
	// obj.ResourceVersion and returns the add-on as written (with its new
	// ResourceVersion). A lost race returns the apiserver's 409 Conflict
	// unchanged or an error marked with converge.Conflict.
	UpdateStatus(ctx context.Context, obj Object, status Status) (Object, error)
}
