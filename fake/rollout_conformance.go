package fake

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/rollout"
)

// TestRolloutStatusStore checks that s behaves as rollout.Controller needs,
// in the manner of testing/fstest.TestFS: a write with the version just read
// succeeds and returns a new version; the status reads back as written (JSON
// round trips included); a write with a stale version fails with a conflict
// (the API server's 409 or an error marked with converge.Conflict, see
// converge.IsConflict) and changes nothing. It finally writes the
// original status back. The same check runs against this package's fake and
// a host's real adapter; run it on a scratch store. A nil or typed-nil
// store, or a nil context, is an error matching converge.ErrInvalid.
func TestRolloutStatusStore(ctx context.Context, s rollout.StatusStore) error {
	if ctx == nil || input.IsNil(s) {
		return input.Invalidf("fake", "TestRolloutStatusStore arguments", "it needs a context and a store")
	}
	orig, rv, err := s.GetStatus(ctx)
	if err != nil {
		return fmt.Errorf("reading the status: %w", err)
	}
	failedAt := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	want := *orig.DeepCopy()
	want.LatestAvailableRevision++
	want.NodeStatuses = append(want.NodeStatuses, rollout.NodeStatus{
		NodeName: "conformance-node", CurrentRevision: 1, TargetRevision: want.LatestAvailableRevision,
		LastFailedRevision: want.LatestAvailableRevision, LastFailedTime: &failedAt, LastFailedCount: 2,
		LastFailedReason: rollout.ReasonInstallerPodFailed, LastFailedErrors: []string{"installer: OOMKilled"},
	})
	rv1, err := s.UpdateStatus(ctx, want, rv)
	if err != nil {
		return fmt.Errorf("writing with the current version %q: %w", rv, err)
	}
	if rv1 == rv {
		return fmt.Errorf("a write kept the version %q", rv)
	}
	got, gotRV, err := s.GetStatus(ctx)
	if err != nil {
		return fmt.Errorf("reading back: %w", err)
	}
	if gotRV != rv1 {
		return fmt.Errorf("read version %q, the write returned %q", gotRV, rv1)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		return fmt.Errorf("read back %+v, wrote %+v", got, want)
	}

	stale := *want.DeepCopy()
	stale.LatestAvailableRevision++
	if _, err := s.UpdateStatus(ctx, stale, rv); !converge.IsConflict(err) {
		return fmt.Errorf("a write with the stale version %q returned %v, want a conflict (converge.IsConflict)", rv, err)
	}
	got, _, err = s.GetStatus(ctx)
	if err != nil {
		return fmt.Errorf("reading after the conflict: %w", err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		return fmt.Errorf("a conflicting write changed the status to %+v", got)
	}

	if _, err := s.UpdateStatus(ctx, orig, rv1); err != nil {
		return fmt.Errorf("writing the original status back: %w", err)
	}
	return nil
}
