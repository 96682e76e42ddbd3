package payload

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// runWithClock runs task.Run, stepping clk whenever Run waits, and returns its error and
// the fake times of the apply calls.
func runWithClock(t *testing.T, ctx context.Context, task *Task, results []error) (error, []time.Duration) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	var calls []time.Duration
	applier := ApplierFunc(func(_ context.Context, m *Manifest, state State) error {
		assert.Equal(t, StateUpdating, state)
		assert.Same(t, task.Manifest, m)
		calls = append(calls, clk.Since(t0))
		if len(calls) > len(results) {
			return nil
		}
		return results[len(calls)-1]
	})
	done := make(chan error, 1)
	go func() { done <- task.Run(ctx, clk, applier, StateUpdating) }()
	for {
		select {
		case err := <-done:
			return err, calls
		default:
		}
		if clk.HasWaiters() {
			clk.Step(time.Second)
			continue
		}
		runtime.Gosched() // let Run reach its timer; the clock is fake
	}
}

func deployment(index, total int) *Task {
	task := newTask("0000_50_app_deployment.yaml", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	task.Manifest.Object.SetNamespace("ns")
	task.Manifest.Object.SetName("web")
	task.Index, task.Total = index, total
	return task
}

func TestTaskRun(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	notFound := apierrors.NewNotFound(gr, "web")
	conflict := apierrors.NewConflict(gr, "web", errors.New("changed"))
	boom := errors.New("boom")
	stop := &UpdateError{Reason: "ClusterOperatorDegraded", Message: "stop now", Effect: EffectFailAfterInterval}
	backoff := wait.Backoff{Steps: 3, Duration: time.Second, Factor: 2}

	tests := []struct {
		name       string
		backoff    wait.Backoff
		results    []error
		wantCalls  []time.Duration
		wantReason string
		wantMsg    string
		wantNested error
	}{
		{name: "first try", backoff: backoff, results: nil, wantCalls: []time.Duration{0}},
		{
			name:      "fails twice then succeeds, waiting by the backoff",
			backoff:   backoff,
			results:   []error{boom, boom},
			wantCalls: []time.Duration{0, time.Second, 3 * time.Second},
		},
		{
			name:       "exhausted: the last error becomes an UpdateError",
			backoff:    backoff,
			results:    []error{boom, boom, conflict},
			wantCalls:  []time.Duration{0, time.Second, 3 * time.Second},
			wantReason: "UpdatePayloadResourceConflict",
			wantMsg:    `Could not update deployment "ns/web" (3 of 7): someone else is updating this resource`,
			wantNested: conflict,
		},
		{
			name:       "not found has its own reason",
			backoff:    wait.Backoff{Steps: 1},
			results:    []error{notFound},
			wantCalls:  []time.Duration{0},
			wantReason: "UpdatePayloadResourceNotFound",
			wantMsg:    `Could not update deployment "ns/web" (3 of 7): resource may have been deleted`,
			wantNested: notFound,
		},
		{
			name:       "unknown errors have no cause in the message",
			backoff:    wait.Backoff{Steps: 1},
			results:    []error{boom},
			wantCalls:  []time.Duration{0},
			wantReason: "UpdatePayloadFailed",
			wantMsg:    `Could not update deployment "ns/web" (3 of 7)`,
			wantNested: boom,
		},
		{
			name:       "an UpdateError stops the retries at once",
			backoff:    backoff,
			results:    []error{stop},
			wantCalls:  []time.Duration{0},
			wantReason: "ClusterOperatorDegraded",
			wantMsg:    "stop now",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			task := deployment(3, 7)
			task.Backoff = tt.backoff
			err, calls := runWithClock(t, context.Background(), task, tt.results)
			assert.Equal(t, tt.wantCalls, calls)
			if tt.wantReason == "" {
				require.NoError(t, err)
				return
			}
			var uErr *UpdateError
			require.ErrorAs(t, err, &uErr)
			assert.Equal(t, tt.wantReason, uErr.Reason)
			assert.Equal(t, tt.wantMsg, uErr.Error())
			assert.Same(t, task, uErr.Task)
			if tt.wantNested != nil {
				assert.ErrorIs(t, err, tt.wantNested)
				assert.Equal(t, EffectFail, uErr.Effect)
			}
		})
	}
}

func TestTaskRunConfigurationErrors(t *testing.T) {
	ok := ApplierFunc(func(context.Context, *Manifest, State) error { return nil })
	tests := []struct {
		name    string
		task    *Task
		applier Applier
	}{
		{name: "zero steps", task: deployment(1, 1), applier: ok},
		{name: "no manifest", task: &Task{Backoff: wait.Backoff{Steps: 1}}, applier: ok},
		{name: "nil task", task: nil, applier: ok},
		{name: "nil applier", task: &Task{Manifest: deployment(1, 1).Manifest, Backoff: wait.Backoff{Steps: 1}}, applier: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.task.Run(context.Background(), nil, tt.applier, StateUpdating), ErrInvalid)
		})
	}
}

func TestTaskRunCancelled(t *testing.T) {
	boom := errors.New("boom")
	t.Run("before the first attempt: the context error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		task := deployment(1, 1)
		task.Backoff = wait.Backoff{Steps: 3, Duration: time.Second}
		err, calls := runWithClock(t, ctx, task, nil)
		assert.Empty(t, calls)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("while backing off: the last apply error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clk := clocktesting.NewFakeClock(t0)
		task := deployment(1, 1)
		task.Backoff = wait.Backoff{Steps: 3, Duration: time.Minute}
		applier := ApplierFunc(func(context.Context, *Manifest, State) error { return boom })
		done := make(chan error, 1)
		go func() { done <- task.Run(ctx, clk, applier, StateReconciling) }()
		for !clk.HasWaiters() {
			runtime.Gosched()
		}
		cancel()
		err := <-done
		var uErr *UpdateError
		require.ErrorAs(t, err, &uErr)
		assert.ErrorIs(t, err, boom)
		assert.False(t, IsContextError(err))
	})
}

func TestNewTasks(t *testing.T) {
	manifests := []Manifest{{File: "a"}, {File: "b"}}
	b := wait.Backoff{Steps: 2}
	tasks := NewTasks(manifests, b)
	require.Len(t, tasks, 2)
	assert.Equal(t, 2, tasks[1].Index)
	assert.Equal(t, 2, tasks[1].Total)
	assert.Same(t, &manifests[1], tasks[1].Manifest)
	assert.Equal(t, b, tasks[0].Backoff)
	assert.Equal(t, "task (0 of 0)", (*Task)(nil).String())
}
