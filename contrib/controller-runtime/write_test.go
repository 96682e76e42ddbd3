package crconverge

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// scriptedStore is a StatusStore whose calls return what a test scripts.
type scriptedStore struct {
	getErr, updateErr error
	rv                string
	// written is the status and version of the last UpdateStatus.
	written   engineStatus
	writtenAt string
}

func (s *scriptedStore) GetStatus(context.Context) (engineStatus, string, error) {
	return engineStatus{Revision: 1}, s.rv, s.getErr
}

func (s *scriptedStore) UpdateStatus(_ context.Context, st engineStatus, rv string) (string, error) {
	s.written, s.writtenAt = st, rv
	return rv + "+1", s.updateErr
}

func TestWriteLatest(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("raced"))
	readFailed := errors.New("connection refused")
	tests := []struct {
		name          string
		store         *scriptedStore
		wantErr       error
		wantWrittenAt string
	}{
		{name: "writes at the version it just read", store: &scriptedStore{rv: "7"}, wantWrittenAt: "7"},
		{name: "a write that lost a race returns the 409", store: &scriptedStore{rv: "7", updateErr: conflict}, wantErr: conflict, wantWrittenAt: "7"},
		{name: "a failed read writes nothing", store: &scriptedStore{getErr: readFailed}, wantErr: readFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteLatest[engineStatus](tt.store)(context.Background(), engineStatus{Revision: 2})
			assert.Equal(t, tt.wantErr, err)
			assert.Equal(t, tt.wantWrittenAt, tt.store.writtenAt)
			if tt.wantWrittenAt != "" {
				assert.Equal(t, engineStatus{Revision: 2}, tt.store.written, "the whole status is written, not merged with what was read")
			}
		})
	}
}

func TestWriteLatestOnAStore(t *testing.T) {
	ctx := context.Background()
	c := newFakeClient(t, newWidget("ns", "w"))
	s, err := NewObjectStatusStore[engineStatus](c, widgetGVK, client.ObjectKey{Namespace: "ns", Name: "w"})
	require.NoError(t, err)
	write := WriteLatest[engineStatus](s)
	require.NoError(t, write(ctx, engineStatus{Revision: 1}))
	require.NoError(t, write(ctx, engineStatus{Revision: 2}), "each write reads the version afresh")
	got, _, err := s.GetStatus(ctx)
	require.NoError(t, err)
	assert.Equal(t, engineStatus{Revision: 2}, got)
}
