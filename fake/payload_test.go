package fake

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload"
	"github.com/converge-dev/converge/payload/manifest"
)

func configMap(name string) *manifest.Manifest {
	obj := &unstructured.Unstructured{}
	obj.SetName(name)
	obj.SetNamespace("ns")
	return &manifest.Manifest{File: name + ".yaml", GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Object: obj}
}

func TestPayloadApplierScripts(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name   string
		script func(a *PayloadApplier, ref string)
		calls  int
		want   []error
	}{
		{name: "unscripted calls succeed", script: func(*PayloadApplier, string) {}, calls: 2, want: []error{nil, nil}},
		{
			name:   "fail twice then succeed",
			script: func(a *PayloadApplier, ref string) { a.Push(ref, PayloadOutcome{Err: boom, Times: 2}) },
			calls:  4,
			want:   []error{boom, boom, nil, nil},
		},
		{
			name:   "fail forever",
			script: func(a *PayloadApplier, ref string) { a.Push(ref, PayloadOutcome{Err: boom}) },
			calls:  3,
			want:   []error{boom, boom, boom},
		},
		{
			name: "queued outcomes play in order",
			script: func(a *PayloadApplier, ref string) {
				a.Push(ref, PayloadOutcome{Times: 1}, PayloadOutcome{Err: boom, Times: 1})
			},
			calls: 3,
			want:  []error{nil, boom, nil},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &PayloadApplier{}
			m := configMap("a")
			tt.script(a, m.Ref())
			var got []error
			for range tt.calls {
				got = append(got, a.Apply(context.Background(), m, payload.StateUpdating))
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.calls, a.Count(m.Ref()))
			for _, c := range a.Recorded() {
				assert.Equal(t, PayloadApply{Ref: "ConfigMap/ns/a", File: "a.yaml", State: payload.StateUpdating}, c)
			}
		})
	}
}

func TestPayloadApplierBlockAndPanic(t *testing.T) {
	a := &PayloadApplier{}
	m := configMap("a")
	a.Push(m.Ref(), PayloadOutcome{Block: true})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	a.OnApply = func(PayloadApply) { close(started) }
	done := make(chan error)
	go func() { done <- a.Apply(ctx, m, payload.StateReconciling) }()
	<-started
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	p := &PayloadApplier{}
	p.Push(m.Ref(), PayloadOutcome{Panic: "kaboom", Times: 1})
	assert.PanicsWithValue(t, "kaboom", func() { _ = p.Apply(context.Background(), m, payload.StateUpdating) })
	assert.NoError(t, p.Apply(context.Background(), m, payload.StateUpdating), "a panic is scripted once")
	assert.Equal(t, 0, p.running, "a panicking call is no longer counted as running")
}

func TestPayloadApplierConcurrency(t *testing.T) {
	a := &PayloadApplier{}
	const n = 3
	var arrived sync.WaitGroup
	arrived.Add(n)
	release := make(chan struct{})
	a.OnApply = func(PayloadApply) {
		arrived.Done()
		<-release
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = a.Apply(context.Background(), configMap(string(rune('a'+i))), payload.StateInitializing)
		}()
	}
	arrived.Wait()
	close(release)
	wg.Wait()
	assert.Equal(t, n, a.Concurrency())
	assert.Len(t, a.Recorded(), n)
}

func TestPayloadLoader(t *testing.T) {
	r1 := payload.Release{Version: "1.0.0", Image: "example/payload:1"}
	l := &PayloadLoader{}
	l.Add(&payload.Payload{Release: r1})
	boom := errors.New("registry down")
	l.FailNext(r1, boom)

	_, err := l.Load(context.Background(), r1)
	require.ErrorIs(t, err, boom)
	p, err := l.Load(context.Background(), r1)
	require.NoError(t, err)
	assert.Equal(t, r1, p.Release)
	_, err = l.Load(context.Background(), payload.Release{Version: "2.0.0"})
	require.ErrorContains(t, err, "no payload for 2.0.0")
	assert.Equal(t, []payload.Release{r1, r1, {Version: "2.0.0"}}, l.Recorded())
}

func TestPayloadApplierDeletes(t *testing.T) {
	a := &PayloadApplier{}
	m := configMap("old")
	a.Push(m.Ref(), PayloadOutcome{Err: errors.New("busy"), Times: 1})
	require.Error(t, a.Delete(context.Background(), m))
	require.NoError(t, a.Delete(context.Background(), m))
	assert.Equal(t, []PayloadApply{{Ref: "ConfigMap/ns/old", File: "old.yaml", Delete: true}, {Ref: "ConfigMap/ns/old", File: "old.yaml", Delete: true}}, a.Recorded())
}

func TestPayloadReadiness(t *testing.T) {
	r := &PayloadReadiness{}
	m := configMap("job")
	r.NotReadyFor(m.Ref(), 2)
	assert.ErrorContains(t, r.Ready(context.Background(), m), "not ready")
	assert.Error(t, r.Ready(context.Background(), m))
	assert.NoError(t, r.Ready(context.Background(), m))
	assert.Equal(t, []string{"ConfigMap/ns/job", "ConfigMap/ns/job", "ConfigMap/ns/job"}, r.Recorded())
}

func TestPayloadStatusStore(t *testing.T) {
	s := &PayloadStatusStore{Errs: []error{converge.ErrConflict}}
	status := payload.Status{Done: 3, Total: 5}
	require.ErrorIs(t, s.WriteStatus(context.Background(), status), converge.ErrConflict)
	require.NoError(t, s.WriteStatus(context.Background(), status))
	assert.Equal(t, status, s.Current())
	assert.Equal(t, 1, s.Writes)
}
