package payload_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/fake"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

// TestWorkerReportsOnlyDeletionsThatHappened: a delete that finds its object gone
// (NotFound) is done, not a deletion: ManifestsDeleted names an object in the pass that
// removed it, and in no other.
func TestWorkerReportsOnlyDeletionsThatHappened(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, "old")
	tests := []struct {
		name     string
		outcomes []fake.PayloadOutcome
		want     [][]string // the ManifestsDeleted messages of each pass
	}{
		{name: "an object gone from the start", outcomes: []fake.PayloadOutcome{{Err: notFound}}, want: [][]string{nil, nil, nil}},
		{name: "an object deleted in the first pass", outcomes: []fake.PayloadOutcome{{Times: 1}, {Err: notFound}},
			want: [][]string{{`Deleted 1 object of 1.0.0: configmap "a/old"`}, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(c *payload.Config) {
				p := samplePayload(v1)
				old := newManifest("0000_20_a_03_old.yaml", "ConfigMap", "a", "old")
				old.Delete = true
				p.Manifests = slices.Insert(p.Manifests, 4, old)
				loader := &fake.PayloadLoader{}
				loader.Add(p)
				c.Loader = loader
				c.Applier.(*fake.PayloadApplier).Push("ConfigMap/a/old", tt.outcomes...)
			})
			h.worker.Update(1, v1)
			var got [][]string
			for range tt.want {
				d := h.next()
				require.Nil(t, d.Status.Failure)
				var deleted []string
				for _, e := range d.Events {
					if e.Reason == "ManifestsDeleted" {
						deleted = append(deleted, e.Message)
					}
				}
				got = append(got, deleted)
				h.clk.Step(d.RequeueAfter)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestWorkerReportsAKindTheServerDoesNotKnowInTheFirstPass: a manifest whose kind has
// no resource on the server (what an empty REST mapper answers) fails the first pass
// at once, naming the kind, without the manifest backoff's attempts; the apply is
// retried after Policy.Backoff, and passes once the kind is known.
func TestWorkerReportsAKindTheServerDoesNotKnowInTheFirstPass(t *testing.T) {
	noMatch := fmt.Errorf("kube: mapping example.com/v1, Kind=Widget: %w",
		&meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Widget"}, SearchedVersions: []string{"v1"}})
	h := newHarness(t, func(c *payload.Config) {
		p := samplePayload(v1)
		p.Manifests = append(p.Manifests, newManifest("0000_30_c_01_widget.yaml", "Widget", "default", "w"))
		loader := &fake.PayloadLoader{}
		loader.Add(p)
		c.Loader = loader
		c.Policy.ManifestAttempts = 3 // the manifest backoff would wait 10s, then 13s
		c.Applier.(*fake.PayloadApplier).Push("Widget/default/w", fake.PayloadOutcome{Err: noMatch, Times: 2})
	})
	h.worker.Update(1, v1)
	d := h.next()
	require.NotNil(t, d.Status.Failure, "the first pass fails")
	assert.Equal(t, "UpdatePayloadResourceTypeMissing", d.Status.Failure.Reason)
	assert.Contains(t, d.Status.Failure.Message, `no matches for kind "Widget" in version "example.com/v1"`)
	assert.Contains(t, d.Status.Failure.Message, "the server does not recognize this resource, check extension API servers")
	assert.Equal(t, 1, h.applier.Count("Widget/default/w"), "no attempt waits for the manifest backoff")
	assert.Equal(t, 2*time.Minute, d.RequeueAfter, "the apply is retried after Policy.Backoff")

	h.clk.Step(d.RequeueAfter)
	d = h.next()
	assert.Equal(t, "UpdatePayloadResourceTypeMissing", d.Status.Failure.Reason, "still unknown")
	h.clk.Step(d.RequeueAfter)
	d = h.next()
	assert.Nil(t, d.Status.Failure, "applied once the kind is known")
	assert.Equal(t, payload.StateReconciling, d.Status.State)
	assert.Equal(t, 3, h.applier.Count("Widget/default/w"))
}

// versioned is a payload of release r whose objects are named after r's version, so
// that a host call says which release it is for.
func versioned(r payload.Release) *payload.Payload {
	p := samplePayload(r)
	for i := range p.Manifests {
		m := &p.Manifests[i]
		m.Object.SetName(m.Object.GetName() + "-" + r.Version)
	}
	return p
}

// TestWorkerStartsNoCallOfAReplacedReleaseOnceUpdateReturns: whichever host call of a
// release is in flight when Update replaces the release, and however it returns (an
// applier that ignores its context and succeeds), no host call for that release starts
// once Update has returned; the new release is applied.
func TestWorkerStartsNoCallOfAReplacedReleaseOnceUpdateReturns(t *testing.T) {
	tests := []struct {
		name string
		// from is the status the worker starts from: zero initializes, a completed
		// release updates (with preconditions).
		from payload.Status
		// blocked is the call that blocks, as the recorder names it.
		blocked string
	}{
		{name: "a load", from: reconciled(v0), blocked: "load 1.0.0"},
		{name: "a precondition check", from: reconciled(v0), blocked: "check 1.0.0"},
		{name: "an apply, while initializing", blocked: "apply ConfigMap/a/one-1.0.0"},
		{name: "an apply, while updating", from: reconciled(v0), blocked: "apply ConfigMap/a/one-1.0.0"},
		{name: "a readiness check", from: reconciled(v0), blocked: "ready ConfigMap/a/one-1.0.0"},
		{name: "a delete", from: reconciled(v0), blocked: "delete ConfigMap/a/old-1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu       sync.Mutex
					calls    []string // every call that started, and whether Update had returned
					updated  atomic.Bool
					release  = make(chan struct{})
					blocking = make(chan struct{}, 1)
				)
				call := func(name string) {
					mu.Lock()
					calls = append(calls, fmt.Sprintf("%s (after Update: %t)", name, updated.Load()))
					mu.Unlock()
					if name == tt.blocked && !updated.Load() {
						blocking <- struct{}{}
						<-release // ignores its context
					}
				}
				ref := func(m *manifest.Manifest) string { return m.Ref() }
				cfg := payload.Config{
					Loader: payload.LoaderFunc(func(_ context.Context, r payload.Release) (*payload.Payload, error) {
						call("load " + r.Version)
						p := versioned(r)
						old := newManifest("0000_10_a_02_old.yaml", "ConfigMap", "a", "old-"+r.Version)
						old.Delete = true
						p.Manifests = slices.Insert(p.Manifests, 2, old)
						return p, nil
					}),
					Preconditions: payload.PreconditionsFunc(func(_ context.Context, _, to payload.Release) error {
						call("check " + to.Version)
						return nil
					}),
					Applier: payload.ApplierFunc(func(_ context.Context, m *manifest.Manifest, _ payload.State) error {
						call("apply " + ref(m))
						return nil
					}),
					Deleter: payload.DeleterFunc(func(_ context.Context, m *manifest.Manifest) error {
						call("delete " + ref(m))
						return nil
					}),
					Readiness: payload.ReadinessFunc(func(_ context.Context, m *manifest.Manifest) error {
						call("ready " + ref(m))
						return nil
					}),
					Clock:  clocktesting.NewFakeClock(t0),
					Policy: payload.Policy{Workers: 1, InitializingWorkers: 1},
					Status: tt.from,
				}
				w, err := payload.NewWorker(cfg)
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
				done := make(chan error, 1)
				go func() { done <- w.Start(ctx) }()
				w.Update(1, v1)
				<-blocking
				w.Update(2, v2)
				updated.Store(true)
				close(release)
				synctest.Wait()
				cancel()
				require.NoError(t, <-done)

				mu.Lock()
				defer mu.Unlock()
				var late []string
				for _, c := range calls {
					if strings.Contains(c, "1.0.0") && strings.HasSuffix(c, "(after Update: true)") {
						late = append(late, c)
					}
				}
				assert.Empty(t, late, "calls of the replaced release: %q", calls)
				assert.Contains(t, calls, "apply ConfigMap/a/one-2.0.0 (after Update: true)", "the new release is applied")
			})
		})
	}
}

// v0 is a release a cluster completed before v1.
var v0 = payload.Release{Version: "0.9.0", Image: "example.com/payload:0"}

// reconciled is the status of a worker that completed r.
func reconciled(r payload.Release) payload.Status {
	return payload.Status{Release: r, State: payload.StateReconciling, Done: 6, Total: 6, Completed: 1,
		NextApplyTime: dueAt(time.Hour), History: []payload.UpdateHistory{{State: payload.UpdateCompleted, Version: r.Version, Image: r.Image}}}
}

// progressWrites records the Done of every status written.
type progressWrites struct {
	mu     sync.Mutex
	writes []payload.Status
}

func (p *progressWrites) WriteStatus(_ context.Context, s payload.Status) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = append(p.writes, s)
	return nil
}

// done returns the Done written last, 0 before any write.
func (p *progressWrites) done() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.writes) == 0 {
		return 0
	}
	return p.writes[len(p.writes)-1].Done
}

// last returns the status written last.
func (p *progressWrites) last() payload.Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.writes[len(p.writes)-1]
}

// decreases returns the writes whose Done is below the Done written before them for
// the same release, and below floor for the first of them.
func (p *progressWrites) decreases(floor int32) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	high := floor
	for i, s := range p.writes {
		if i > 0 && !s.Release.Same(p.writes[i-1].Release) {
			high = 0
		}
		if s.Done < high {
			out = append(out, fmt.Sprintf("write %d: %d after %d", i, s.Done, high))
		}
		high = max(high, s.Done)
	}
	return out
}

// TestWorkerPersistedProgressNeverDecreases: with 16 workers applying 400 components
// at once and every change written, the Done each write persists never goes below the
// Done written before it within the release; and a worker restarted from the last
// status written before a crash (the status it had in memory lost) never writes less.
func TestWorkerPersistedProgressNeverDecreases(t *testing.T) {
	p := &payload.Payload{Release: v1}
	for i := range 400 {
		p.Manifests = append(p.Manifests, newManifest(fmt.Sprintf("0000_10_c%03d_00_cm.yaml", i), "ConfigMap", "ns", fmt.Sprintf("c%03d", i)))
	}
	loader := &fake.PayloadLoader{}
	loader.Add(p)
	run := func(t *testing.T, from payload.Status, stopAt int32) (*progressWrites, payload.Status) {
		store := &progressWrites{}
		var applied atomic.Int32
		stopped := make(chan struct{})
		var once sync.Once
		applier := payload.ApplierFunc(func(ctx context.Context, _ *manifest.Manifest, _ payload.State) error {
			if stopAt > 0 && applied.Add(1) >= stopAt {
				once.Do(func() { close(stopped) })
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		results := make(chan converge.Result, 100)
		w, err := payload.NewWorker(payload.Config{Loader: loader, Applier: applier, StatusWriter: store, Status: from,
			NotifyInterval: time.Nanosecond, Policy: payload.Policy{InitializingWorkers: 16, Interval: metav1.Duration{Duration: time.Hour}},
			OnResult: func(r converge.Result) { results <- r }})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
		done := make(chan error, 1)
		go func() { done <- w.Start(ctx) }()
		w.Update(1, v1)
		var crashed payload.Status
		if stopAt > 0 {
			<-stopped
			deadlock := time.Now().Add(time.Minute) // a deadlock detector, not a timing
			for store.done() < stopAt/2 {
				require.True(t, time.Now().Before(deadlock), "no progress written")
				runtime.Gosched()
			}
			crashed = store.last() // what a crash leaves: the last write, not the status in memory
		} else {
			for r := range results {
				if r.RequeueAfter > 0 {
					break
				}
			}
		}
		cancel()
		require.NoError(t, <-done)
		return store, crashed
	}
	first, crashed := run(t, payload.Status{}, 200)
	assert.Empty(t, first.decreases(0), "the first worker")
	require.Equal(t, payload.StateInitializing, crashed.State)
	second, _ := run(t, crashed, 0)
	assert.Empty(t, second.decreases(crashed.Done), "the worker restarted from %d done", crashed.Done)
	assert.Equal(t, int32(400), second.last().Done)
}
