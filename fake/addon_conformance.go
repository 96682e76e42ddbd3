package fake

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/addon"
	"github.com/converge-dev/converge/internal/input"
)

// TestAddonStore checks that s behaves as addon.Machine needs, in the manner
// of testing/fstest.TestFS: Get of name returns the add-on at a resource
// version; a status written at that version reads back as written (JSON
// round trips included) at a new version with the spec unchanged, and the
// write returns the add-on as stored; a write at the stale version fails with
// a conflict (converge.IsConflict: the API server's 409 or an error wrapping
// converge.ErrConflict) and changes nothing. It finally writes the original
// status back. The same check runs against this package's fake and a host's
// real adapter; run it on a scratch add-on. A nil or typed-nil store, or a
// nil context, is an error matching converge.ErrInvalid.
func TestAddonStore(ctx context.Context, s addon.Store, name string) error {
	if ctx == nil || input.IsNil(s) {
		return input.Invalidf("fake", "TestAddonStore arguments", "it needs a context and a store")
	}
	orig, err := s.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	at := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	want := *orig.Status.DeepCopy()
	want.Phase, want.InstalledVersion, want.LastGoodVersion = addon.PhaseRunning, "conformance-v1", "conformance-v1"
	want.UpgradeFailures, want.LastAttemptTime = 2, &at
	want.History = append(want.History, addon.Attempt{Action: addon.ActionUpgrade, Version: "conformance-v1", Outcome: addon.OutcomeSucceeded, Started: at, Finished: at})
	want.Conditions = append(want.Conditions, metav1.Condition{Type: "Conformance", Status: metav1.ConditionTrue, Reason: "Checked", LastTransitionTime: at})

	written, err := s.UpdateStatus(ctx, orig, want)
	if err != nil {
		return fmt.Errorf("writing at the current version %q: %w", orig.ResourceVersion, err)
	}
	if written.ResourceVersion == orig.ResourceVersion {
		return fmt.Errorf("a write kept the version %q", orig.ResourceVersion)
	}
	if !equality.Semantic.DeepEqual(written.Status, want) {
		return fmt.Errorf("the write returned status %+v, wrote %+v", written.Status, want)
	}
	got, err := s.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("reading back: %w", err)
	}
	if got.ResourceVersion != written.ResourceVersion {
		return fmt.Errorf("read version %q, the write returned %q", got.ResourceVersion, written.ResourceVersion)
	}
	if !equality.Semantic.DeepEqual(got.Status, want) {
		return fmt.Errorf("read back %+v, wrote %+v", got.Status, want)
	}
	if got.Spec != orig.Spec {
		return fmt.Errorf("a status write changed the spec from %+v to %+v", orig.Spec, got.Spec)
	}

	stale := *want.DeepCopy()
	stale.Phase = addon.PhaseFailed
	if _, err := s.UpdateStatus(ctx, orig, stale); !converge.IsConflict(err) {
		return fmt.Errorf("a write at the stale version %q returned %v, want a conflict", orig.ResourceVersion, err)
	}
	if got, err = s.Get(ctx, name); err != nil {
		return fmt.Errorf("reading after the conflict: %w", err)
	}
	if !equality.Semantic.DeepEqual(got.Status, want) {
		return fmt.Errorf("a conflicting write changed the status to %+v", got.Status)
	}
	if _, err := s.UpdateStatus(ctx, got, orig.Status); err != nil {
		return fmt.Errorf("writing the original status back: %w", err)
	}
	return nil
}
