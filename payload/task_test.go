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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/converge-dev/converge"
	"github.com/converge-dev/converge/payload/graph"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// draw is a jitter draw that would show in every wait a backoff with jitter computes.
func draw() float64 { return 0.9 }

// attempts is a policy of n attempts one, two, four… seconds apart: ManifestBackoff's
// default is no jitter, whatever the draw.
func attempts(n int32) Policy {
	return Policy{ManifestAttempts: n, ManifestBackoff: converge.Backoff{
		Initial: metav1.Duration{Duration: time.Second}, Max: metav1.Duration{Duration: time.Hour}, FactorPercent: 200,
	}}.withDefaults()
}

// runWithClock runs retry, stepping clk whenever it waits, and returns its error
// and the fake times of the attempts.
func runWithClock(t *testing.T, ctx context.Context, task *graph.Task, p Policy, results []error) (error, []time.Duration) {
	t.Helper()
	clk := clocktesting.NewFakeClock(t0)
	var calls []time.Duration
	attempt := func() error {
		calls = append(calls, clk.Since(t0))
		if len(calls) > len(results) {
			return nil
		}
		return results[len(calls)-1]
	}
	done := make(chan error, 1)
	go func() { done <- (pacing{clock: clk, policy: p, jitter: draw}).retry(ctx, task, "update", attempt) }()
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

func deployment(index, total int) *graph.Task {
	task := newTask("0000_50_app_deployment.yaml", schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	manifestOf(task).Object.SetNamespace("ns")
	manifestOf(task).Object.SetName("web")
	task.Index, task.Total = index, total
	return task
}

func TestTaskRun(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	notFound := apierrors.NewNotFound(gr, "web")
	conflict := apierrors.NewConflict(gr, "web", errors.New("changed"))
	boom := errors.New("boom")
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "apps", Kind: "Deployment"}, SearchedVersions: []string{"v1"}}
	stop := &UpdateError{Reason: "ClusterOperatorDegraded", Message: "stop now", Effect: EffectFailAfterInterval}
	backoff := attempts(3)

	tests := []struct {
		name       string
		backoff    Policy
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
			wantMsg:    `Could not update deployment "ns/web" (3 of 7): someone else is updating this resource: Operation cannot be fulfilled on deployments.apps "web": changed`,
			wantNested: conflict,
		},
		{
			name:       "an object deleted under the apply: the cluster-version operator's words, then the error",
			backoff:    attempts(1),
			results:    []error{notFound},
			wantCalls:  []time.Duration{0},
			wantReason: "UpdatePayloadResourceNotFound",
			wantMsg:    `Could not update deployment "ns/web" (3 of 7): resource may have been deleted: deployments.apps "web" not found`,
			wantNested: notFound,
		},
		{
			name:       "a kind the server does not know fails at once and names the kind",
			backoff:    backoff,
			results:    []error{noMatch},
			wantCalls:  []time.Duration{0},
			wantReason: "UpdatePayloadResourceTypeMissing",
			wantMsg: `Could not update deployment "ns/web" (3 of 7): the server does not recognize this resource, check extension API servers: ` +
				`no matches for kind "Deployment" in version "apps/v1"`,
			wantNested: noMatch,
		},
		{
			name:       "failures say why: the message carries the cause",
			backoff:    attempts(1),
			results:    []error{boom},
			wantCalls:  []time.Duration{0},
			wantReason: "UpdatePayloadFailed",
			wantMsg:    `Could not update deployment "ns/web" (3 of 7): boom`,
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
			err, calls := runWithClock(t, context.Background(), task, tt.backoff, tt.results)
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

func TestTaskRunCancelled(t *testing.T) {
	boom := errors.New("boom")
	t.Run("before the first attempt: the context error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err, calls := runWithClock(t, ctx, deployment(1, 1), attempts(3), nil)
		assert.Empty(t, calls)
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("while backing off: the last apply error", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clk := clocktesting.NewFakeClock(t0)
		task := deployment(1, 1)
		done := make(chan error, 1)
		go func() {
			done <- (pacing{clock: clk, policy: attempts(3), jitter: draw}).retry(ctx, task, "update", func() error { return boom })
		}()
		for !clk.HasWaiters() {
			runtime.Gosched()
		}
		cancel()
		err := <-done
		var uErr *UpdateError
		require.ErrorAs(t, err, &uErr)
		assert.ErrorIs(t, err, boom)
		assert.False(t, isContextError(err))
	})
}
