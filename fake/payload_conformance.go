package fake

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/conditions"
	"github.com/converge-dev/converge/internal/input"
	"github.com/converge-dev/converge/payload"
)

// raceVersionPrefix starts the versions of the statuses TestPayloadStatusWriter
// writes concurrently with the foreign writer.
const raceVersionPrefix = "conformance-race-"

// raceRounds is how many times TestPayloadStatusWriter races the writer
// against the foreign writer.
const raceRounds = 4

// TestPayloadStatusWriter checks that w behaves as payload.Worker needs, in
// the manner of testing/fstest.TestFS. The worker is the only writer of its
// status and always hands over the whole of it, so: a written status reads
// back whole through read (JSON round trips included; times are whole
// seconds, as the worker truncates them, but for NextApplyTime, which keeps
// its microseconds; the largest status the worker
// writes, Policy.MaxHistory's default of 10 releases and messages at the
// Condition API's bound, fits); a status with fewer fields replaces the one
// before, nothing of it merged in; the latest write wins; a write after
// foreign, another writer of the same status, has written still lands
// (nothing stale is remembered); and a write that races foreign either lands
// or fails with a conflict (converge.ErrConflict wrapped, or the API server's
// 409), which the worker answers by writing again at once, never with
// another error, and leaves a whole status of one of the writes that
// returned nil. It finally writes the status read at the start back. The same
// check runs against a host's real writer; run it on a scratch status.
func TestPayloadStatusWriter(ctx context.Context, w, foreign payload.StatusWriter, read func(context.Context) (payload.Status, error)) error {
	if ctx == nil || input.IsNil(w) || input.IsNil(foreign) || read == nil {
		return input.Invalidf("fake", "TestPayloadStatusWriter arguments", "it needs a context, a writer, a foreign writer and a read function")
	}
	orig, err := read(ctx)
	if err != nil {
		return fmt.Errorf("reading the status: %w", err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("UTC+2", 2*60*60))
	steps := []struct {
		what   string
		writer payload.StatusWriter
		status payload.Status
	}{
		{"the largest status", w, largestPayloadStatus(at)},
		{"a status with fewer fields", w, smallPayloadStatus("conformance-2.0.0", at.Add(time.Hour))},
		{"the latest of two writes", w, smallPayloadStatus("conformance-3.0.0", at.Add(2*time.Hour))},
		{"the foreign writer's status", foreign, smallPayloadStatus("conformance-foreign", at.Add(3*time.Hour))},
		{"a status written after the foreign writer's", w, smallPayloadStatus("conformance-4.0.0", at.Add(4*time.Hour))},
	}
	for _, s := range steps {
		if err := s.writer.WriteStatus(ctx, s.status); err != nil {
			return fmt.Errorf("writing %s: %w", s.what, err)
		}
		got, err := read(ctx)
		if err != nil {
			return fmt.Errorf("reading %s back: %w", s.what, err)
		}
		if !equality.Semantic.DeepEqual(got, s.status) {
			return fmt.Errorf("read %s back as %+v, wrote %+v", s.what, got, s.status)
		}
	}
	last := steps[len(steps)-1].status
	for round := range raceRounds {
		if last, err = racePayloadStatusWriters(ctx, round, w, foreign, read, last); err != nil {
			return err
		}
	}
	if err := w.WriteStatus(ctx, orig); err != nil {
		return fmt.Errorf("writing the original status back: %w", err)
	}
	return nil
}

// racePayloadStatusWriters writes a status through w and another through
// foreign at once, and returns the status read afterwards.
func racePayloadStatusWriters(ctx context.Context, round int, w, foreign payload.StatusWriter, read func(context.Context) (payload.Status, error), before payload.Status) (payload.Status, error) {
	at := time.Date(2026, 2, 1, 0, round, 0, 0, time.UTC)
	writers := []payload.StatusWriter{w, foreign}
	statuses := []payload.Status{
		smallPayloadStatus(fmt.Sprintf("%sw-%d", raceVersionPrefix, round), at),
		smallPayloadStatus(fmt.Sprintf("%sforeign-%d", raceVersionPrefix, round), at.Add(time.Second)),
	}
	errs := make([]error, len(writers))
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = writers[i].WriteStatus(ctx, statuses[i])
		}()
	}
	wg.Wait()
	var landed []payload.Status
	for i, err := range errs {
		switch {
		case err == nil:
			landed = append(landed, statuses[i])
		case !converge.IsConflict(err):
			return payload.Status{}, fmt.Errorf("a write racing another writer returned %v, want nil or a conflict (converge.ErrConflict or the API server's 409)", err)
		}
	}
	if len(landed) == 0 {
		landed = []payload.Status{before}
	}
	got, err := read(ctx)
	if err != nil {
		return payload.Status{}, fmt.Errorf("reading after racing writes: %w", err)
	}
	for _, s := range landed {
		if equality.Semantic.DeepEqual(got, s) {
			return got, nil
		}
	}
	return payload.Status{}, fmt.Errorf("after racing writes read %+v, want whole one of the statuses that landed %+v", got, landed)
}

// largestPayloadStatus is a status with every field set, the most history the
// worker keeps by default and messages at the Condition API's bound.
func largestPayloadStatus(at time.Time) payload.Status {
	t := func(d time.Duration) *metav1.Time { mt := metav1.NewTime(at.Add(d)); return &mt }
	long := strings.Repeat("m", conditions.MaxMessageLength)
	next := converge.NewMicroTime(at.Add(time.Minute + 1500*time.Microsecond))
	s := payload.Status{
		ObservedGeneration: 1<<53 + 1,
		Release:            payload.Release{Version: "conformance-1.0.0", Image: "registry.example/release@sha256:0123"},
		State:              payload.StateUpdating, Done: 512, Total: 862, Completed: 1, Failures: 3, Interrupted: true,
		Failure:          &payload.Failure{Reason: "MultipleErrors", Message: long, Effect: payload.EffectFailAfterInterval},
		LastProgressTime: t(0), NextApplyTime: &next,
		Conditions: []metav1.Condition{
			{Type: conditions.TypeAvailable, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "Done applying conformance-0.9.0", LastTransitionTime: *t(-time.Hour), ObservedGeneration: 1},
			{Type: conditions.TypeProgressing, Status: metav1.ConditionTrue, Reason: "MultipleErrors", Message: long, LastTransitionTime: *t(0)},
			{Type: conditions.TypeFailing, Status: metav1.ConditionTrue, Reason: "MultipleErrors", Message: long, LastTransitionTime: *t(0)},
		},
	}
	for i := range 10 {
		h := payload.UpdateHistory{State: payload.UpdateCompleted, StartedTime: *t(-time.Duration(i+1) * time.Hour),
			CompletionTime: t(-time.Duration(i) * time.Hour), Version: fmt.Sprintf("conformance-0.%d.0", 9-i)}
		if i == 0 {
			h.State, h.CompletionTime, h.Version = payload.UpdatePartial, nil, "conformance-1.0.0"
		}
		s.History = append(s.History, h)
	}
	return s
}

// smallPayloadStatus is a reconciling status of version with one release in
// its history and no failure.
func smallPayloadStatus(version string, at time.Time) payload.Status {
	mt := metav1.NewTime(at)
	return payload.Status{
		ObservedGeneration: 2, Release: payload.Release{Version: version}, State: payload.StateReconciling,
		Done: 3, Total: 3, Completed: 1, LastProgressTime: &mt,
		History:    []payload.UpdateHistory{{State: payload.UpdateCompleted, StartedTime: mt, CompletionTime: &mt, Version: version}},
		Conditions: []metav1.Condition{{Type: conditions.TypeAvailable, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: "Done applying " + version, LastTransitionTime: mt}},
	}
}
