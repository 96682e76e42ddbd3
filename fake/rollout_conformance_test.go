package fake

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge/rollout"
)

// versionless is a broken store that never reports a conflict.
type versionless struct {
	st rollout.Status
	rv int
}

func (v *versionless) GetStatus(context.Context) (rollout.Status, string, error) {
	return *v.st.DeepCopy(), fmt.Sprint(v.rv), nil
}

func (v *versionless) UpdateStatus(_ context.Context, st rollout.Status, _ string) (string, error) {
	v.st = *st.DeepCopy()
	v.rv++
	return fmt.Sprint(v.rv), nil
}

// lossy is a broken store that drops the failure errors on write.
type lossy struct{ RolloutStatusStore }

func (l *lossy) UpdateStatus(ctx context.Context, st rollout.Status, rv string) (string, error) {
	st = *st.DeepCopy()
	for i := range st.NodeStatuses {
		st.NodeStatuses[i].LastFailedErrors = nil
	}
	return l.RolloutStatusStore.UpdateStatus(ctx, st, rv)
}

func TestTestRolloutStatusStore(t *testing.T) {
	ctx := context.Background()
	good := NewRolloutStatusStore(3, 2, "a", "b")
	require.NoError(t, TestRolloutStatusStore(ctx, good))
	assert.Equal(t, int32(3), good.Current().LatestAvailableRevision, "original status written back")
	assert.Len(t, good.Current().NodeStatuses, 2)

	err := TestRolloutStatusStore(ctx, &versionless{})
	assert.ErrorContains(t, err, "want a conflict")

	err = TestRolloutStatusStore(ctx, &lossy{})
	assert.ErrorContains(t, err, "read back")
}
