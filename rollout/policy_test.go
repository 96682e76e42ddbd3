package rollout

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		wantErr bool
	}{
		{name: "zero value is valid", p: Policy{}},
		{name: "everything set", p: Policy{MaxUnavailable: 2, MaxInstallerRetries: 3, InstallerPendingTimeout: dur(time.Minute), OperandReadyTimeout: dur(time.Minute), MinReadyDuration: dur(time.Second), HoldDegradedAfter: dur(time.Hour), Paused: true}},
		{name: "negative maxUnavailable", p: Policy{MaxUnavailable: -1}, wantErr: true},
		{name: "negative retries", p: Policy{MaxInstallerRetries: -1}, wantErr: true},
		{name: "negative timeout", p: Policy{InstallerPendingTimeout: dur(-time.Second)}, wantErr: true},
		{name: "negative operand timeout", p: Policy{OperandReadyTimeout: dur(-time.Second)}, wantErr: true},
		{name: "negative hold", p: Policy{HoldDegradedAfter: dur(-time.Second)}, wantErr: true},
		{name: "negative soak", p: Policy{MinReadyDuration: dur(-time.Second)}, wantErr: true},
		{name: "bad backoff", p: Policy{InstallerBackoff: Backoff{FactorPercent: 10}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalid)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

func TestPolicyUnavailable(t *testing.T) {
	assert.Equal(t, 1, Policy{}.Unavailable())
	assert.Equal(t, 3, Policy{MaxUnavailable: 3}.Unavailable())
}

func TestPolicyRetriesExhausted(t *testing.T) {
	tests := []struct {
		name    string
		retries int32
		n       NodeStatus
		want    bool
	}{
		{name: "unlimited", retries: 0, n: failed(node("a", 1, 2), 2, 100, ReasonInstallerPodFailed, t0)},
		{name: "within the limit", retries: 2, n: failed(node("a", 1, 2), 2, 2, ReasonInstallerPodFailed, t0)},
		{name: "beyond the limit", retries: 2, n: failed(node("a", 1, 2), 2, 3, ReasonInstallerPodFailed, t0), want: true},
		{name: "failures of another revision", retries: 2, n: failed(node("a", 1, 3), 2, 3, ReasonInstallerPodFailed, t0)},
		{name: "not in transition, failed revision not reached", retries: 2, n: failed(node("a", 1, 0), 2, 3, ReasonOperandFailed, t0), want: true},
		{name: "not in transition, past the failed revision", retries: 2, n: failed(node("a", 2, 0), 2, 3, ReasonOperandFailed, t0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Policy{MaxInstallerRetries: tt.retries}.RetriesExhausted(tt.n))
		})
	}
}
