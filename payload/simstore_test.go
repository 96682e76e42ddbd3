package payload_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
)

// persist is what a store keeps of v: its JSON, as an apiserver keeps a status.
func persist[T any](v T) ([]byte, error) { return json.Marshal(v) }

// restore reads back what persist kept.
func restore[T any](b []byte) (T, error) {
	var v T
	if len(b) == 0 {
		return v, nil
	}
	err := json.Unmarshal(b, &v)
	return v, err
}

// secondsForm rewrites the nextApplyTime of a persisted status with seconds only,
// rounded up so that it shortens no wait, as a version that persisted it as a
// metav1.Time wrote it, or as a person patches it.
func secondsForm(b []byte) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	at, ok := doc["nextApplyTime"].(string)
	if !ok {
		return b, nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return nil, err
	}
	if up := t.Truncate(time.Second); up.Before(t) {
		t = up.Add(time.Second)
	}
	doc["nextApplyTime"] = t.UTC().Format(time.RFC3339)
	return json.Marshal(doc)
}

// write persists a status through encoding/json of payload.Status, as an apiserver
// stores it, or fails as a store can: a conflict or an error. A write of a crashed
// worker is lost; while faults last, the process may crash right after a write lands,
// before the action the write records. Persisted progress must never go back within a
// release.
func (s *sim) write(epoch int, st payload.Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch != s.liveEpoch {
		return errors.New("the process is gone")
	}
	if s.writeFaults {
		switch r := s.writes.IntN(100); {
		case r < 10:
			return fmt.Errorf("store: %w", converge.ErrConflict)
		case r < 15:
			return errors.New("store unavailable")
		case r < 17:
			s.liveEpoch, s.crashed = 0, true // after this write, nothing of the process lands
		}
	}
	b, err := persist(st)
	if err != nil {
		s.violations = append(s.violations, fmt.Sprintf("the status does not serialize: %v", err))
		return err
	}
	before, err := restore[payload.Status](s.stored)
	if err != nil {
		s.violations = append(s.violations, fmt.Sprintf("the persisted status does not read back: %v", err))
		return err
	}
	after, err := restore[payload.Status](b)
	if err != nil {
		s.violations = append(s.violations, fmt.Sprintf("a status the worker wrote does not read back: %v\n%s", err, b))
		return err
	}
	if !equality.Semantic.DeepEqual(after, st) {
		s.violations = append(s.violations, fmt.Sprintf("the store does not keep the status written (its serialization drops a field): kept %+v, written %+v", after, st))
	}
	if sameStint(before, after) && after.Done < before.Done {
		s.violations = append(s.violations, fmt.Sprintf("persisted progress went back within %s: %d after %d", after.Release, after.Done, before.Done))
	}
	s.stored = b
	return nil
}

// persisted reads back the status the store holds; a restarted worker carries on
// from it. At times the store holds it as an earlier version wrote it, with seconds.
func (s *sim) persisted(older bool) payload.Status {
	s.mu.Lock()
	b := s.stored
	s.mu.Unlock()
	if older && len(b) > 0 {
		s.injected["a status written with seconds"]++
		var err error
		if b, err = secondsForm(b); err != nil {
			s.fail("rewriting the persisted status with seconds: %v", err)
		}
		s.logf("the store holds the status as an earlier version wrote it: %s", b)
	}
	st, err := restore[payload.Status](b)
	if err != nil {
		s.fail("the persisted status does not read back: %v\n%s", err, b)
	}
	return st
}

// sameStint reports whether two statuses are of one stint of one release: no Update
// came between them (the generation is the same), so that the release was not started
// again.
func sameStint(a, b payload.Status) bool {
	return len(a.History) > 0 && len(b.History) > 0 && a.History[0].StartedTime.Equal(&b.History[0].StartedTime) &&
		simID(a.Release) == simID(b.Release) && a.ObservedGeneration == b.ObservedGeneration
}

// TestSimStoreKeepsWhatJSONKeeps: the simulator's store keeps what encoding/json of
// the persisted type keeps, and nothing more, as an apiserver does: a field the
// serialization drops (tagged "-", or written under a name the reader does not know)
// is lost, so a worker restarted in the simulation misses it as a real one would.
func TestSimStoreKeepsWhatJSONKeeps(t *testing.T) {
	type written struct {
		Kept    string `json:"kept"`
		Skipped string `json:"-"`
		Next    string `json:"next,omitempty"`
	}
	type read struct {
		Kept    string `json:"kept"`
		Skipped string `json:"-"`
		Next    string `json:"nextApplyTime,omitempty"`
	}
	b, err := persist(written{Kept: "k", Skipped: "s", Next: "n"})
	require.NoError(t, err)
	back, err := restore[read](b)
	require.NoError(t, err)
	assert.Equal(t, read{Kept: "k"}, back)

	due := converge.NewMicroTime(t0.Add(1500 * time.Microsecond))
	b, err = persist(payload.Status{Release: simReleases[0], NextApplyTime: &due})
	require.NoError(t, err)
	st, err := restore[payload.Status](b)
	require.NoError(t, err)
	assert.True(t, due.Time.Equal(st.NextApplyTime.Time), "a status keeps its microseconds")
	older, err := secondsForm(b)
	require.NoError(t, err)
	assert.Contains(t, string(older), `"nextApplyTime":"2026-01-02T03:04:06Z"`, "rounded up to the second")
	st, err = restore[payload.Status](older)
	require.NoError(t, err, "a status written with seconds reads back")
	assert.True(t, t0.Add(time.Second).Equal(st.NextApplyTime.Time))
}
