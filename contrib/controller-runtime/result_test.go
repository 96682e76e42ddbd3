package crconverge

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/converge-dev/converge"
)

func TestResult(t *testing.T) {
	conflict409 := apierrors.NewConflict(schema.GroupResource{Resource: "widgets"}, "w", errors.New("stale"))
	boom := errors.New("apply failed")
	tests := []struct {
		name         string
		requeueAfter time.Duration
		err          error
		want         reconcile.Result
		wantErr      error
	}{
		{name: "done: no requeue", want: reconcile.Result{}},
		{name: "waiting: requeue after the engine's delay", requeueAfter: time.Minute, want: reconcile.Result{RequeueAfter: time.Minute}},
		{name: "a negative delay never requeues", requeueAfter: -time.Second, want: reconcile.Result{}},
		{name: "an error is returned alone, for the rate limiter", requeueAfter: time.Minute, err: boom, wantErr: boom},
		{name: "the API server's 409 requeues soon without an error", err: conflict409, want: reconcile.Result{RequeueAfter: ConflictRequeueAfter}},
		{name: "a wrapped 409 is a conflict too", err: fmt.Errorf("addon: writing status: %w", conflict409), want: reconcile.Result{RequeueAfter: ConflictRequeueAfter}},
		{name: "a conflict marked with converge.Conflict", err: fmt.Errorf("rollout: writing: %w", converge.Conflict(boom)), want: reconcile.Result{RequeueAfter: ConflictRequeueAfter}},
		{name: "converge.ErrConflict wrapped", err: fmt.Errorf("payload: writing status: %w", converge.ErrConflict), want: reconcile.Result{RequeueAfter: ConflictRequeueAfter}},
		{name: "a conflict requeues no later than the engine asked", requeueAfter: 200 * time.Millisecond, err: conflict409, want: reconcile.Result{RequeueAfter: 200 * time.Millisecond}},
		{name: "a conflict requeues no later than ConflictRequeueAfter", requeueAfter: time.Hour, err: conflict409, want: reconcile.Result{RequeueAfter: ConflictRequeueAfter}},
		{name: "a terminal error stays terminal", err: reconcile.TerminalError(boom), wantErr: reconcile.TerminalError(boom)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Result(tt.requeueAfter, tt.err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantErr, err)
		})
	}
}
