package rollout

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffDelay(t *testing.T) {
	tests := []struct {
		name     string
		b        Backoff
		failures int32
		want     time.Duration
	}{
		{name: "no failure", failures: 0, want: 0},
		{name: "negative count", failures: -3, want: 0},
		{name: "default first", failures: 1, want: 10 * time.Second},
		{name: "default second", failures: 2, want: 15 * time.Second},
		{name: "default third", failures: 3, want: 22500 * time.Millisecond},
		{name: "default capped", failures: 20, want: 10 * time.Minute},
		{name: "huge count capped", failures: math.MaxInt32, want: 10 * time.Minute},
		{name: "custom", b: Backoff{Base: time.Second, Factor: 2, Cap: 5 * time.Second}, failures: 3, want: 4 * time.Second},
		{name: "custom capped", b: Backoff{Base: time.Second, Factor: 2, Cap: 5 * time.Second}, failures: 4, want: 5 * time.Second},
		{name: "factor one is constant", b: Backoff{Base: time.Second, Factor: 1}, failures: 50, want: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.Delay(tt.failures))
		})
	}
}

func TestBackoffRetryAt(t *testing.T) {
	tests := []struct {
		name string
		n    NodeStatus
		want time.Time
	}{
		{name: "no failure", n: node("a", 1, 2), want: time.Time{}},
		{name: "operand failed, target cleared", n: failed(node("a", 1, 0), 2, 1, FailureOperandFailed, t0), want: t0.Add(10 * time.Second)},
		{name: "not in transition, past the failed revision", n: failed(node("a", 2, 0), 2, 1, FailureOperandFailed, t0), want: time.Time{}},
		{name: "failure of another revision", n: failed(node("a", 1, 3), 2, 1, FailureInstallerFailed, t0), want: time.Time{}},
		{name: "first failure", n: failed(node("a", 1, 2), 2, 1, FailureInstallerFailed, t0), want: t0.Add(10 * time.Second)},
		{name: "second failure", n: failed(node("a", 1, 2), 2, 2, FailureInstallerFailed, t0), want: t0.Add(15 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Backoff{}.RetryAt(tt.n))
		})
	}
}

func TestBackoffValidate(t *testing.T) {
	tests := []struct {
		name    string
		b       Backoff
		wantErr bool
	}{
		{name: "zero", b: Backoff{}},
		{name: "custom", b: Backoff{Base: time.Second, Factor: 1, Cap: time.Minute}},
		{name: "negative base", b: Backoff{Base: -1}, wantErr: true},
		{name: "negative cap", b: Backoff{Cap: -1}, wantErr: true},
		{name: "shrinking factor", b: Backoff{Factor: 0.5}, wantErr: true},
		{name: "NaN factor", b: Backoff{Factor: math.NaN()}, wantErr: true},
		{name: "infinite factor", b: Backoff{Factor: math.Inf(1)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalid)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
