package payload

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestNextStatus(t *testing.T) {
	v1 := Release{Version: "1.0.0", Image: "r/p:1"}
	v2 := Release{Version: "2.0.0", Image: "r/p:2"}
	failed := &Failure{Reason: "UpdatePayloadFailed", Message: "boom"}
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	now := t0.Add(1500 * time.Millisecond)
	nowSec := metav1.NewTime(t0.Add(time.Second))

	tests := []struct {
		name         string
		baseline     Status
		next         Status
		wantOK       bool
		wantProgress metav1.Time
		wantGen      int64
	}{
		{
			name:     "after a failure, less progress in the same release is dropped",
			baseline: Status{Generation: 2, Done: 50, Total: 100, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Generation: 2, Done: 30, Total: 100, Actual: v1},
			wantOK:   false, wantProgress: earlier, wantGen: 2,
		},
		{
			name:     "fractions compare exactly across totals",
			baseline: Status{Done: 1, Total: 2, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Done: 2, Total: 5, Actual: v1},
			wantOK:   false, wantProgress: earlier,
		},
		{
			name:     "after a failure, more progress passes and counts as progress",
			baseline: Status{Generation: 2, Done: 50, Total: 100, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Generation: 2, Done: 60, Total: 100, Actual: v1},
			wantOK:   true, wantProgress: nowSec, wantGen: 2,
		},
		{
			name:     "equal progress after a failure passes without progress",
			baseline: Status{Generation: 2, Done: 50, Total: 100, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Generation: 2, Done: 50, Total: 100, Actual: v1},
			wantOK:   true, wantProgress: earlier, wantGen: 2,
		},
		{
			name:     "a new release is never dropped and is progress",
			baseline: Status{Done: 50, Total: 100, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Done: 1, Total: 100, Actual: v2},
			wantOK:   true, wantProgress: nowSec,
		},
		{
			name:     "without a previous failure less progress passes",
			baseline: Status{Done: 50, Total: 100, Actual: v1, LastProgress: earlier},
			next:     Status{Done: 30, Total: 100, Actual: v1},
			wantOK:   true, wantProgress: earlier,
		},
		{
			name:     "a failure is never dropped",
			baseline: Status{Done: 50, Total: 100, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Done: 10, Total: 100, Failure: failed, Actual: v1},
			wantOK:   true, wantProgress: earlier,
		},
		{
			name:     "a completed apply is progress",
			baseline: Status{Done: 100, Total: 100, Completed: 1, Actual: v1, LastProgress: earlier},
			next:     Status{Done: 100, Total: 100, Completed: 2, Actual: v1},
			wantOK:   true, wantProgress: nowSec,
		},
		{
			name:     "a zero generation is taken from the baseline",
			baseline: Status{Generation: 7, Actual: v1, LastProgress: earlier},
			next:     Status{Actual: v1},
			wantOK:   true, wantProgress: earlier, wantGen: 7,
		},
		{
			name:     "an empty payload has done nothing",
			baseline: Status{Total: 0, Failure: failed, Actual: v1, LastProgress: earlier},
			next:     Status{Total: 0, Actual: v1},
			wantOK:   true, wantProgress: earlier,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NextStatus(tt.baseline, tt.next, now)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.wantProgress, got.LastProgress)
			assert.Equal(t, tt.wantGen, got.Generation)
			if ok {
				assert.Equal(t, tt.next.Done, got.Done)
			} else {
				assert.Equal(t, tt.baseline, got)
			}
		})
	}
}

func TestReporter(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var mu sync.Mutex
	var published []Status
	baseline := Status{Done: 5, Total: 10, Failure: NewFailure(errors.New("boom")), Actual: Release{Version: "1"}}
	r := NewReporter(baseline, clk, func(s Status) {
		mu.Lock()
		defer mu.Unlock()
		published = append(published, s)
	})
	steps := []struct {
		done int
		want bool
	}{{0, false}, {4, false}, {5, true}, {6, true}, {10, true}}
	for _, s := range steps {
		assert.Equal(t, s.want, r.Report(Status{Done: s.done, Total: 10, Actual: Release{Version: "1"}}), "done=%d", s.done)
	}
	assert.Len(t, published, 3)

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Report(Status{Done: 5 + i%5, Total: 10, Actual: Release{Version: "1"}})
		}()
	}
	wg.Wait()
	assert.Len(t, published, 23)

	assert.True(t, NewReporter(Status{}, nil, nil).Report(Status{Done: 1, Total: 1}), "nil clock and publish are fine")
}
