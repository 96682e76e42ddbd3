package fake

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// payloadStatusVersions is a payload status kept at a version, with the
// optimistic concurrency of an API server.
type payloadStatusVersions struct {
	mu      sync.Mutex
	status  payload.Status
	version int
}

func (v *payloadStatusVersions) get() (payload.Status, int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return *v.status.DeepCopy(), v.version
}

// put writes s if the status is still at version.
func (v *payloadStatusVersions) put(s payload.Status, version int) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.version != version {
		return fmt.Errorf("at version %d, not %d: %w", v.version, version, converge.ErrConflict)
	}
	v.status, v.version = *s.DeepCopy(), v.version+1
	return nil
}

func (v *payloadStatusVersions) read(context.Context) (payload.Status, error) {
	s, _ := v.get()
	return s, nil
}

// latestWriter writes over whatever version is current, as
// kube.LatestStatusWriter does.
type latestWriter struct{ v *payloadStatusVersions }

func (w latestWriter) WriteStatus(_ context.Context, s payload.Status) error {
	_, version := w.v.get()
	return w.v.put(s, version)
}

// stickyWriter is a broken writer that writes over the version it last wrote,
// so that a foreign write leaves it conflicting forever.
type stickyWriter struct {
	v       *payloadStatusVersions
	version *int
}

func (w stickyWriter) WriteStatus(_ context.Context, s payload.Status) error {
	if err := w.v.put(s, *w.version); err != nil {
		return err
	}
	*w.version++
	return nil
}

// mergingWriter is a broken writer that keeps a failure the new status
// no longer has, as a merge patch of the changed fields would.
type mergingWriter struct{ latestWriter }

func (w mergingWriter) WriteStatus(ctx context.Context, s payload.Status) error {
	cur, _ := w.v.get()
	if s.Failure == nil {
		s.Failure = cur.Failure
	}
	return w.latestWriter.WriteStatus(ctx, s)
}

// raceLoser is a writer that loses the race for the first status the
// conformance check races, reporting it as err.
type raceLoser struct {
	latestWriter
	err  error
	once *sync.Once
}

func (w raceLoser) WriteStatus(ctx context.Context, s payload.Status) error {
	var lost bool
	if strings.HasPrefix(s.Release.Version, raceVersionPrefix) {
		w.once.Do(func() { lost = true })
	}
	if lost {
		return w.err
	}
	return w.latestWriter.WriteStatus(ctx, s)
}

func TestTestPayloadStatusWriter(t *testing.T) {
	ctx := context.Background()
	orig := payload.Status{Release: payload.Release{Version: "0.1.0"}, State: payload.StateReconciling}
	newVersions := func() *payloadStatusVersions { return &payloadStatusVersions{status: orig} }
	tests := []struct {
		name    string
		writer  func(v *payloadStatusVersions) payload.StatusWriter
		wantErr string
	}{
		{name: "a writer over the latest version keeps the contract",
			writer: func(v *payloadStatusVersions) payload.StatusWriter { return latestWriter{v} }},
		{name: "a write that loses a race with a conflict keeps the contract",
			writer: func(v *payloadStatusVersions) payload.StatusWriter {
				return raceLoser{latestWriter: latestWriter{v}, err: fmt.Errorf("lost: %w", converge.ErrConflict), once: &sync.Once{}}
			}},
		{name: "a write that loses a race with another error fails",
			writer: func(v *payloadStatusVersions) payload.StatusWriter {
				return raceLoser{latestWriter: latestWriter{v}, err: errors.New("connection reset"), once: &sync.Once{}}
			},
			wantErr: "want nil or a conflict"},
		{name: "a writer that remembers a stale version fails after a foreign write",
			writer: func(v *payloadStatusVersions) payload.StatusWriter {
				_, version := v.get()
				return stickyWriter{v: v, version: &version}
			},
			wantErr: "writing a status written after the foreign writer's"},
		{name: "a writer that merges into the stored status fails",
			writer:  func(v *payloadStatusVersions) payload.StatusWriter { return mergingWriter{latestWriter{v}} },
			wantErr: "read a status with fewer fields back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVersions()
			err := TestPayloadStatusWriter(ctx, tt.writer(v), latestWriter{v}, v.read)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			got, _ := v.get()
			assert.Equal(t, orig, got, "the original status is written back")
		})
	}
}

func TestTestPayloadStatusWriterRejectsMissingArguments(t *testing.T) {
	v := &payloadStatusVersions{}
	var typedNil payload.StatusWriterFunc
	tests := []struct {
		name       string
		w, foreign payload.StatusWriter
		read       func(context.Context) (payload.Status, error)
	}{
		{name: "nil writer", foreign: latestWriter{v}, read: v.read},
		{name: "typed-nil writer", w: typedNil, foreign: latestWriter{v}, read: v.read},
		{name: "nil foreign writer", w: latestWriter{v}, read: v.read},
		{name: "nil read", w: latestWriter{v}, foreign: latestWriter{v}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := TestPayloadStatusWriter(context.Background(), tt.w, tt.foreign, tt.read)
			assert.True(t, errors.Is(err, converge.ErrInvalid), "%v", err)
		})
	}
}
