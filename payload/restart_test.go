package payload_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestWorkerAfterARestartAppliesOnlyTheHostsRelease: a host that names the release it
// wants in the worker's Config (Desired) has nothing of another release applied,
// whatever the order of Start and Update. Here the operator stopped in an update to
// 2.0.0 and its resource went back to 1.0.0 meanwhile; restarted from the persisted
// status and wired as the README wires it (go Start, then Update), a hundred times,
// the worker applies 1.0.0 only.
func TestWorkerAfterARestartAppliesOnlyTheHostsRelease(t *testing.T) {
	persisted := payload.Status{ObservedGeneration: 3, Release: simReleases[2], State: payload.StateUpdating, Interrupted: true, Done: 2, Total: 11,
		History: []payload.UpdateHistory{{State: payload.UpdatePartial, Version: simReleases[2].Version}, {State: payload.UpdateCompleted, Version: simReleases[0].Version}}}
	want := simReleases[0]
	for range 100 {
		loader := &fake.PayloadLoader{}
		for _, r := range simReleases[:3] {
			loader.Add(simPayload(r))
		}
		var mu sync.Mutex
		var stale []string
		record := func(m *manifest.Manifest) error {
			if versionOf(m) != want.Version {
				mu.Lock()
				stale = append(stale, m.Ref())
				mu.Unlock()
			}
			return nil
		}
		applier := payload.ApplierFunc(func(_ context.Context, m *manifest.Manifest, _ payload.State) error { return record(m) })
		deleter := payload.DeleterFunc(func(_ context.Context, m *manifest.Manifest) error { return record(m) })
		results := make(chan payload.Status, 100)
		var w *payload.Worker
		w, err := payload.NewWorker(payload.Config{Loader: loader, Applier: applier, Deleter: deleter, Status: persisted,
			Desired: want, Generation: 4, Policy: payload.Policy{Interval: metav1.Duration{Duration: time.Hour}},
			OnResult: func(converge.Result) { results <- w.Status() }})
		require.NoError(t, err)
		_, ctx := ktesting.NewTestContext(t)
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Start(ctx) }()
		w.Update(4, want)
		for st := range results {
			if st.State == payload.StateReconciling && st.Release == want {
				break
			}
		}
		cancel()
		require.NoError(t, <-done)
		mu.Lock()
		assert.Empty(t, stale, "manifests of a release the host no longer wants were applied")
		mu.Unlock()
	}
}

// TestWorkerFlushTimeoutBoundsTheLastWrite: once its context has ended, Start writes the
// last status and waits for that write no longer than Config.FlushTimeout (10s by
// default), then returns.
func TestWorkerFlushTimeoutBoundsTheLastWrite(t *testing.T) {
	loader := &fake.PayloadLoader{}
	loader.Add(onePayload(v1))
	var mu sync.Mutex
	var last error
	hanging := payload.StatusWriterFunc(func(ctx context.Context, _ payload.Status) error {
		<-ctx.Done() // a store that does not answer
		mu.Lock()
		last = context.Cause(ctx)
		mu.Unlock()
		return ctx.Err()
	})
	w, err := payload.NewWorker(payload.Config{Loader: loader, Applier: &fake.PayloadApplier{}, Desired: v1, Generation: 1,
		StatusWriter: hanging, FlushTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	cancel()
	stopped := time.Now()
	require.NoError(t, <-done)
	assert.Less(t, time.Since(stopped), 5*time.Second, "Start waited longer than FlushTimeout for its last write")
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, errors.Is(last, context.DeadlineExceeded), "the last write ran out of time: %v", last)
}
